package runtime

import (
	"container/list"
	"context"
	"sync"
)

// lines are the two waiting lines of a gate (run slots) or a stock
// (instances): calls that continue a request are served before new
// requests, each line in arrival order (schema/abi.md, "Overload"). The
// owner's mutex guards them; a waiter is given a T on its channel.
type lines[T any] struct {
	cont  list.List // of chan T: continuing calls waiting
	fresh list.List // of chan T: new requests waiting
}

func (l *lines[T]) line(continuing bool) *list.List {
	if continuing {
		return &l.cont
	}
	return &l.fresh
}

// next removes and returns the first waiter, continuing calls first; nil
// when none waits.
func (l *lines[T]) next() chan T {
	for _, line := range []*list.List{&l.cont, &l.fresh} {
		if e := line.Front(); e != nil {
			return line.Remove(e).(chan T)
		}
	}
	return nil
}

// await puts the caller in its line, unlocks mu (which the caller holds)
// and waits to be given a T until ctx ends (errNoneBeforeDeadline) or q
// expires (errNoneWithinQueue; q may be nil). A waiter given a T just as it
// gave up passes it on with pass.
func (l *lines[T]) await(mu *sync.Mutex, ctx context.Context, q *queueWait, continuing bool, pass func(T)) (T, error) {
	line := l.line(continuing)
	ready := make(chan T, 1)
	elem := line.PushBack(ready)
	mu.Unlock()
	var err error
	select {
	case v := <-ready:
		return v, nil
	case <-ctx.Done():
		err = errNoneBeforeDeadline
	case <-q.expired():
		err = errNoneWithinQueue
	}
	var zero T
	mu.Lock()
	select {
	case v := <-ready:
		mu.Unlock()
		pass(v)
		return zero, err
	default:
		line.Remove(elem)
	}
	mu.Unlock()
	return zero, err
}
