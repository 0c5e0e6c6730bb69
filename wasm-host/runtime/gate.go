package runtime

import (
	"container/list"
	"context"
	"sync"
)

// gate hands out a function's run slots: at most size calls compute at
// once. A slot given back goes to a waiting call that continues a request
// (back from the ledger, or resuming after an Await) before any new
// request, each kind in the order they came. Under overload the calls
// waiting are mostly new requests, each for up to its queue timeout; a
// continuation queued behind them would wait as long again, its credits
// reserved and its upstream call made (schema/abi.md, "Overload"; the
// instances have the same two lines, stock.go).
type gate struct {
	mu    sync.Mutex
	free  int
	cont  list.List // of chan struct{}: continuing calls waiting
	fresh list.List // of chan struct{}: new requests waiting
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

// wait takes a slot, waiting for one until ctx ends (errNoneBeforeDeadline)
// or q expires (errNoneWithinQueue); q may be nil. continuing says which
// line the call waits in.
func (g *gate) wait(ctx context.Context, q *queueWait, continuing bool) error {
	g.mu.Lock()
	if g.free > 0 {
		g.free--
		g.mu.Unlock()
		return nil
	}
	line := &g.fresh
	if continuing {
		line = &g.cont
	}
	ready := make(chan struct{})
	elem := line.PushBack(ready)
	g.mu.Unlock()
	var err error
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		err = errNoneBeforeDeadline
	case <-q.expired():
		err = errNoneWithinQueue
	}
	g.mu.Lock()
	select {
	case <-ready:
		// Handed a slot as it gave up: pass it on.
		g.mu.Unlock()
		g.leave()
		return err
	default:
		line.Remove(elem)
	}
	g.mu.Unlock()
	return err
}

// leave gives a slot back: to the first continuing call waiting, else to
// the first new request, else to whoever asks next.
func (g *gate) leave() {
	g.mu.Lock()
	if e := g.cont.Front(); e != nil {
		close(g.cont.Remove(e).(chan struct{}))
	} else if e := g.fresh.Front(); e != nil {
		close(g.fresh.Remove(e).(chan struct{}))
	} else {
		g.free++
	}
	g.mu.Unlock()
}
