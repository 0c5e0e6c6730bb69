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

func TestGateGivesASlotToAContinuingCallFirst(t *testing.T) {
	g := newGate(1)
	if !g.try() || g.try() {
		t.Fatal("a gate of one slot did not give exactly one")
	}
	order := make(chan string, 3)
	enter := func(name string, continuing bool) {
		if err := g.wait(context.Background(), nil, continuing); err != nil {
			t.Error(err)
		}
		order <- name
	}
	go enter("new 1", false)
	queued(&g.mu, &g.lines, false, 1)
	go enter("new 2", false)
	queued(&g.mu, &g.lines, false, 2)
	go enter("continuing", true)
	queued(&g.mu, &g.lines, true, 1)
	for _, want := range []string{"continuing", "new 1", "new 2"} {
		g.leave()
		if got := <-order; got != want {
			t.Fatalf("the slot went to %q, want %q", got, want)
		}
	}
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
