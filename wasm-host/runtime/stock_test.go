package runtime

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestStockServesInArrivalOrderUntilTheLineStalls(t *testing.T) {
	s := &stock{max: 1}
	clock := newFakeClock()
	s.lines.now = clock.now
	if _, mk, ok := s.take(); !ok || !mk {
		t.Fatal("an empty stock of one did not let the first caller make an instance")
	}
	if _, _, ok := s.take(); ok {
		t.Fatal("a stock of one gave a second instance")
	}
	inst := &instance{}
	order := make(chan string, 3)
	queue := func(name string, continuing bool) {
		enqueue(&s.mu, &s.lines, continuing, func() {
			got, _, err := s.wait(context.Background(), nil, continuing)
			if err != nil {
				t.Error(err)
			}
			if got != inst {
				t.Errorf("%s got %v, want the instance given back", name, got)
			}
			order <- name
		})
	}
	lineOrder(t, clock, queue, func() { s.put(inst) }, order)
	// An instance discarded: the next waiter may make one in its place.
	done := make(chan bool)
	enqueue(&s.mu, &s.lines, false, func() {
		got, mk, err := s.wait(context.Background(), nil, false)
		done <- err == nil && got == nil && mk
	})
	s.drop()
	if !<-done {
		t.Fatal("after a drop the waiter was not let to make an instance")
	}
	if s.live != 1 {
		t.Fatalf("%d live, want 1", s.live)
	}
}

func TestStockWaiterThatGivesUpTakesNothing(t *testing.T) {
	s := &stock{max: 1}
	s.take()
	q := &queueWait{limit: 20 * time.Millisecond}
	defer q.stop()
	if _, _, err := s.wait(context.Background(), q, false); !errors.Is(err, errNoneWithinQueue) {
		t.Fatalf("err = %v, want the queue timeout's", err)
	}
	s.put(&instance{})
	if inst, _, ok := s.take(); !ok || inst == nil {
		t.Fatal("the instance put back went to a waiter that had given up")
	}
}

// A pool warmed with several instances keeps every one of them idle.
func TestPoolWarmsEachInstanceItAsksFor(t *testing.T) {
	f, _ := newWarmedFunction(t, Options{CacheDir: t.TempDir()}, "testguests/testguest.wasm", 3, 3)
	if st := f.Stats(); st.Created != 3 || st.Idle != 3 {
		t.Fatalf("warmed 3: %d created, %d idle", st.Created, st.Idle)
	}
}
