package runtime

import (
	"context"
	"sync"
)

// gate hands out a function's run slots: at most size calls compute at
// once. A slot given back goes to the waiter who came first, but once the
// first new request has waited stalledAfter (overload), to a call that
// continues a request (back from the ledger, or resuming after an Await)
// before any new one. Under overload the calls waiting are mostly new
// requests, each for up to its queue timeout; a continuation queued behind
// them would wait as long again, its credits reserved and its upstream
// call made (schema/abi.md, "Overload"; the instances have the same two
// lines, stock.go; lines.go says why not always).
type gate struct {
	mu    sync.Mutex
	free  int
	lines lines[struct{}]
}

func newGate(size int) *gate { return &gate{free: size} }

// try takes a slot if one is free.
func (g *gate) try() bool {
	g.mu.Lock()
	ok := g.free > 0
	if ok {
		g.free--
	}
	g.mu.Unlock()
	return ok
}

// wait takes a slot, at once when one is free, else waiting for one in its
// line (lines.await).
func (g *gate) wait(ctx context.Context, q *queueWait, continuing bool) error {
	g.mu.Lock()
	if g.free > 0 {
		g.free--
		g.mu.Unlock()
		return nil
	}
	_, err := g.lines.await(&g.mu, ctx, q, continuing, func(struct{}) { g.leave() })
	return err
}

// leave gives a slot back: to the first waiter, else to whoever asks next.
func (g *gate) leave() {
	g.mu.Lock()
	if w := g.lines.next(); w != nil {
		w <- struct{}{}
	} else {
		g.free++
	}
	g.mu.Unlock()
}
