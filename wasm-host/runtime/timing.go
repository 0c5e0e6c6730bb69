package runtime

import (
	"context"
	"sync/atomic"
	"time"
)

// Timing collects how long a request waited for a free instance of a pool,
// so that a caller measuring a request can tell the function's own time
// from the queue in front of it. Two versions of a function run in pools of
// their own sizes and loads; comparing their total times compares their
// queues as much as their code (wasm-host/canary compares function time).
type Timing struct{ queue atomic.Int64 }

type timingKey struct{}

// WithTiming returns a context whose requests add their queue wait to t.
func WithTiming(ctx context.Context, t *Timing) context.Context {
	return context.WithValue(ctx, timingKey{}, t)
}

// Queue is the total wait for an instance so far (a request that awaits an
// outbound call queues again when it resumes).
func (t *Timing) Queue() time.Duration { return time.Duration(t.queue.Load()) }

func timingFrom(ctx context.Context) *Timing {
	t, _ := ctx.Value(timingKey{}).(*Timing)
	return t
}
