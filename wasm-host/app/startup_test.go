package app

import (
	"errors"
	"testing"
	"time"

	wrt "decisiongateway/wasm-host/runtime"
)

// Background warming waits for the first answer or a readiness probe,
// whichever comes first; with patience longer than the test, only they can
// end the wait.
func TestWarmingYieldsUntilFirstAnswerOrReadinessProbe(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(*traffic)
	}{
		{"first answer", func(tr *traffic) { tr.busy.Add(1); tr.done() }},
		{"readiness probe", func(tr *traffic) { tr.busy.Add(1); tr.hurryUp() }}, // a call still in flight
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := newTraffic()
			tr.firstAnswer = time.Hour
			returned := make(chan struct{})
			go func() { tr.yield(); close(returned) }()
			select {
			case <-returned:
				t.Fatal("yield returned before the first answer or a probe")
			case <-time.After(50 * time.Millisecond):
			}
			c.end(tr)
			select {
			case <-returned:
			case <-time.After(time.Minute):
				t.Fatal("yield still waiting")
			}
		})
	}
}

// A module whose load failed answers with that failure until its retry
// period is over, without loading again; the first call after it loads the
// module again, and a module that loaded stays loaded. A closed function is
// never loaded again.
func TestFailedLoadIsTriedAgainAfterItsPeriod(t *testing.T) {
	loads, fail := 0, true
	pool := &wrt.Function{}
	f := &Function{name: "models", load: func() (*wrt.Function, error) {
		loads++
		if fail {
			return nil, errors.New("open models.wasm: too many open files")
		}
		return pool, nil
	}}
	if _, err := f.Ready(); err == nil || loads != 1 || !f.Failed() || f.Loaded() {
		t.Fatalf("first load: %v, %d loads, failed %v", err, loads, f.Failed())
	}
	fail = false
	if _, err := f.Ready(); err == nil || loads != 1 {
		t.Fatalf("within the retry period: %v, %d loads", err, loads)
	}
	due := *f.done.Load()
	due.again = time.Now().Add(-time.Millisecond)
	f.done.Store(&due)
	if fn, err := f.Ready(); err != nil || fn != pool || loads != 2 || f.Failed() || !f.Loaded() {
		t.Fatalf("after the retry period: %v, %v, %d loads", fn, err, loads)
	}
	if fn, _ := f.Ready(); fn != pool || loads != 2 {
		t.Fatalf("a loaded module was loaded again: %d loads", loads)
	}

	closed := &Function{name: "keys", load: func() (*wrt.Function, error) { loads++; return pool, nil }}
	closed.Close()
	loads = 0
	for range 2 {
		if _, err := closed.Ready(); !errors.Is(err, wrt.ErrUnavailable) || loads != 0 {
			t.Fatalf("closed: %v, %d loads", err, loads)
		}
		d := *closed.done.Load()
		d.again = time.Now().Add(-time.Millisecond)
		closed.done.Store(&d)
	}
}
