package ledger

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"decisiongateway/shared/abi"
)

// A job is one batch waiting for, or inside, a transaction of the writer.
type job struct {
	ctx    context.Context
	steps  []abi.Statement
	shapes []shape
	// state moves from queued to taken (by the writer) or to abandoned (by
	// a caller whose context ended first), never both, so a caller that gave
	// up can be sure its batch will not run later.
	state atomic.Uint32
	res   abi.BatchResult
	done  chan struct{}
}

const (
	jobQueued uint32 = iota
	jobTaken
	jobAbandoned
)

func (j *job) finish(res abi.BatchResult) {
	j.res = res
	close(j.done)
}

func failed(format string, args ...any) abi.BatchResult {
	return abi.BatchResult{Err: fmt.Sprintf(format, args...)}
}

// Exec runs one batch atomically and returns its results, as schema/abi.md
// specifies. Every failure is reported in BatchResult.Err and means nothing
// of the batch was committed, with one exception: if the connection to a
// remote server breaks during COMMIT, the error says the outcome is unknown.
//
// ctx bounds the wait for the database (including retries while another
// host holds the write lock). Once the batch has started inside a
// transaction it is no longer cancelled by ctx: it runs to an outcome, which
// Exec then returns, so a caller never gives up on a batch that later
// commits.
//
// Exec does not retain b after it returns; the caller must not modify b
// while Exec runs.
func (e *Executor) Exec(ctx context.Context, b *abi.Batch) abi.BatchResult {
	if b == nil || len(b.Steps) == 0 {
		return abi.BatchResult{Steps: []abi.StepResult{}}
	}
	shapes, err := plan(b.Steps)
	if err != nil {
		return abi.BatchResult{Err: "ledger: " + err.Error()}
	}
	if err := ctx.Err(); err != nil {
		return failed("ledger: %v", err)
	}
	j := &job{ctx: ctx, steps: b.Steps, shapes: shapes, done: make(chan struct{})}
	select {
	case e.queue <- j:
	case <-e.closing:
		return abi.BatchResult{Err: ErrClosed.Error()}
	case <-ctx.Done():
		return failed("ledger: %v", ctx.Err())
	}
	select {
	case <-j.done:
		e.counters.batches.Add(1)
		return j.res
	case <-ctx.Done():
		if j.state.CompareAndSwap(jobQueued, jobAbandoned) {
			return failed("ledger: %v", ctx.Err())
		}
	case <-e.stopped:
		if j.state.CompareAndSwap(jobQueued, jobAbandoned) {
			return abi.BatchResult{Err: ErrClosed.Error()}
		}
	}
	<-j.done // taken by the writer: wait for its outcome
	e.counters.batches.Add(1)
	return j.res
}

// plan checks a batch before it reaches the database, so a malformed batch
// fails the same way on every backend and never costs a transaction.
func plan(steps []abi.Statement) ([]shape, error) {
	shapes := make([]shape, len(steps))
	for i := range steps {
		st := &steps[i]
		s, err := shapeOf(st.SQL)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		if s.params != len(st.Args) {
			return nil, fmt.Errorf("step %d: %d ? parameters but %d arguments", i, s.params, len(st.Args))
		}
		for _, c := range st.When {
			if c.Step < 0 || c.Step >= i {
				return nil, fmt.Errorf("step %d: condition on step %d, which is not an earlier step", i, c.Step)
			}
			if c.Test < abi.Affected || c.Test > abi.Falsy {
				return nil, fmt.Errorf("step %d: unknown condition test %d", i, c.Test)
			}
		}
		for k, v := range st.Args {
			if v.Kind > abi.Blob {
				return nil, fmt.Errorf("step %d: argument %d has unknown kind %d", i, k, v.Kind)
			}
		}
		shapes[i] = s
	}
	return shapes, nil
}

// shapes remembers what classify found for each SQL text. Routes send the
// same few texts in every batch, and looking one up costs less than lexing
// it again (the longest statements of the decision path are 500 bytes).
// classify depends on the text alone, so one memo serves every Executor. It
// stops growing at maxShapes, past which texts are classified each time, so
// that SQL built with varying content cannot grow it without end.
var shapes struct {
	m sync.Map // SQL text → shape
	n atomic.Int32
}

const maxShapes = 1024

func shapeOf(sql string) (shape, error) {
	if s, ok := shapes.m.Load(sql); ok {
		return s.(shape), nil
	}
	s, err := classify(sql)
	if err == nil && shapes.n.Load() < maxShapes {
		if _, loaded := shapes.m.LoadOrStore(sql, s); !loaded {
			shapes.n.Add(1)
		}
	}
	return s, err
}
