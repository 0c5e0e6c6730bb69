package runtime

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// queued waits until n calls wait in the continuing or the new line.
func queued[T any](mu *sync.Mutex, l *lines[T], continuing bool, n int) {
	for {
		mu.Lock()
		waiting := l.line(continuing).Len()
		mu.Unlock()
		if waiting >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// enqueue starts wait on a goroutine and returns once it waits in its line
// (one more waiter there than before).
func enqueue[T any](mu *sync.Mutex, l *lines[T], continuing bool, wait func()) {
	mu.Lock()
	n := l.line(continuing).Len()
	mu.Unlock()
	go wait()
	queued(mu, l, continuing, n+1)
}

// fakeClock is the lines' clock in the tests: it moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1e9, 0)} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// lineOrder is the order in which waiters are served: in arrival order
// while the first new request has waited less than stalledAfter, and
// continuing calls first once it has. Each case queues its waiters a
// millisecond apart, moves the clock on by wait, and gives back one
// thing at a time (give), reading who got it from order.
func lineOrder(t *testing.T, clock *fakeClock, queue func(name string, continuing bool), give func(), order <-chan string) {
	t.Helper()
	for _, c := range []struct {
		wait time.Duration
		want []string
	}{
		{0, []string{"new 1", "continuing", "new 2"}},
		{stalledAfter - 3*time.Millisecond, []string{"new 1", "continuing", "new 2"}},
		{stalledAfter, []string{"continuing", "new 1", "new 2"}},
	} {
		queue("new 1", false)
		clock.advance(time.Millisecond)
		queue("continuing", true)
		clock.advance(time.Millisecond)
		queue("new 2", false)
		clock.advance(c.wait)
		for _, want := range c.want {
			give()
			if got := <-order; got != want {
				t.Fatalf("after %v: served %q, want %q (order %v)", c.wait, got, want, c.want)
			}
		}
	}
}

func TestGateServesInArrivalOrderUntilTheLineStalls(t *testing.T) {
	g := newGate(1)
	clock := newFakeClock()
	g.lines.now = clock.now
	if !g.try() || g.try() {
		t.Fatal("a gate of one slot did not give exactly one")
	}
	order := make(chan string, 3)
	queue := func(name string, continuing bool) {
		enqueue(&g.mu, &g.lines, continuing, func() {
			if err := g.wait(context.Background(), nil, continuing); err != nil {
				t.Error(err)
			}
			order <- name
		})
	}
	lineOrder(t, clock, queue, g.leave, order)
	g.leave()
	if !g.try() {
		t.Fatal("the last slot given back is not free")
	}
}

func TestGateWaiterThatGivesUpTakesNoSlot(t *testing.T) {
	g := newGate(1)
	g.try()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := g.wait(ctx, nil, true); !errors.Is(err, errNoneBeforeDeadline) {
		t.Fatalf("err = %v, want the deadline's", err)
	}
	q := &queueWait{limit: 20 * time.Millisecond}
	defer q.stop()
	if err := g.wait(context.Background(), q, false); !errors.Is(err, errNoneWithinQueue) {
		t.Fatalf("err = %v, want the queue timeout's", err)
	}
	g.leave()
	if !g.try() {
		t.Fatal("the slot went to a waiter that had given up")
	}
}
