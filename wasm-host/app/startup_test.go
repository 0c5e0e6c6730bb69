package app

import (
	"testing"
	"time"
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
