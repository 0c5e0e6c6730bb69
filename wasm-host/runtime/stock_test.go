package runtime

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestStockGivesAnInstanceToAContinuingCallFirst(t *testing.T) {
	s := &stock{max: 1}
	if _, mk, ok := s.take(); !ok || !mk {
		t.Fatal("an empty stock of one did not let the first caller make an instance")
	}
	if _, _, ok := s.take(); ok {
		t.Fatal("a stock of one gave a second instance")
	}
	type got struct {
		name string
		inst *instance
		mk   bool
	}
	order := make(chan got, 3)
	wait := func(name string, continuing bool) {
		inst, mk, err := s.wait(context.Background(), nil, continuing)
		if err != nil {
			t.Error(err)
		}
		order <- got{name, inst, mk}
	}
	go wait("new 1", false)
	queued(&s.mu, &s.lines, false, 1)
	go wait("new 2", false)
	queued(&s.mu, &s.lines, false, 2)
	go wait("continuing", true)
	queued(&s.mu, &s.lines, true, 1)
	inst := &instance{}
	s.put(inst)
	if g := <-order; g.name != "continuing" || g.inst != inst {
		t.Fatalf("the instance went to %q (%v), want the continuing call", g.name, g.inst)
	}
	s.put(inst)
	if g := <-order; g.name != "new 1" || g.inst != inst {
		t.Fatalf("the instance went to %q, want new 1", g.name)
	}
	// An instance discarded: the next waiter may make one in its place.
	s.drop()
	if g := <-order; g.name != "new 2" || g.inst != nil || !g.mk {
		t.Fatalf("after a drop: %q got %v, make %v; want new 2 to make one", g.name, g.inst, g.mk)
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
