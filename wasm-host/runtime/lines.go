package runtime

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// lines are the two waiting lines of a gate (run slots) or a stock
// (instances): calls that continue a request, and new requests. While the
// lines move, waiters are served in the order they came, whichever line
// they are in. Once the first new request has waited stalledAfter, the
// host is overloaded and calls that continue a request are served first
// (schema/abi.md, "Overload"). The owner's mutex guards them; a waiter is
// given a T on its channel.
type lines[T any] struct {
	cont  list.List // of *waiter[T]: continuing calls waiting
	fresh list.List // of *waiter[T]: new requests waiting
	now   func() time.Time
}

type waiter[T any] struct {
	ready chan T
	since time.Time
}

// stalledAfter is how long the first new request in line waits before the
// lines count as stalled and continuations go first. In arrival order a
// continuation waits behind new requests, each up to its queue timeout,
// and under overload that starves the decisions that have reserved
// credits and made their upstream call; always first, continuations keep
// a herd of clients that started together in step (each wave's new
// requests wait for the whole of the wave before, which answers them
// together), 50-170 ms late for most of a run of
// `loadbench -cases closed500-1s/small/embedded` (schema/abi.md, "In step").
const stalledAfter = 100 * time.Millisecond

func (l *lines[T]) line(continuing bool) *list.List {
	if continuing {
		return &l.cont
	}
	return &l.fresh
}

func (l *lines[T]) clock() time.Time {
	if l.now != nil {
		return l.now()
	}
	return time.Now()
}

// next removes and returns the waiter to serve; nil when none waits.
func (l *lines[T]) next() chan T {
	c, f := l.cont.Front(), l.fresh.Front()
	line, e := &l.fresh, f
	if c != nil {
		if f == nil {
			line, e = &l.cont, c
		} else if fs := f.Value.(*waiter[T]).since; c.Value.(*waiter[T]).since.Before(fs) || l.clock().Sub(fs) >= stalledAfter {
			line, e = &l.cont, c
		}
	}
	if e == nil {
		return nil
	}
	return line.Remove(e).(*waiter[T]).ready
}

// await puts the caller in its line, unlocks mu (which the caller holds)
// and waits to be given a T until ctx ends (errNoneBeforeDeadline) or q
// expires (errNoneWithinQueue; q may be nil). A waiter given a T just as it
// gave up passes it on with pass.
func (l *lines[T]) await(mu *sync.Mutex, ctx context.Context, q *queueWait, continuing bool, pass func(T)) (T, error) {
	line := l.line(continuing)
	w := &waiter[T]{ready: make(chan T, 1), since: l.clock()}
	elem := line.PushBack(w)
	mu.Unlock()
	var err error
	select {
	case v := <-w.ready:
		return v, nil
	case <-ctx.Done():
		err = errNoneBeforeDeadline
	case <-q.expired():
		err = errNoneWithinQueue
	}
	var zero T
	mu.Lock()
	select {
	case v := <-w.ready:
		mu.Unlock()
		pass(v)
		return zero, err
	default:
		line.Remove(elem)
	}
	mu.Unlock()
	return zero, err
}
