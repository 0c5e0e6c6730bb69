package decide_test

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"decisiongateway/testkit/hosttest"
	"decisiongateway/testkit/testenv"
)

// barrier answers valid decisions only once n requests are waiting on it at
// the same time, so it proves that n decisions were in flight together. A
// barrier that never fills answers 599 after its patience, which fails the
// test with a clear status instead of hanging it.
func barrier(n int, patience time.Duration) func(w http.ResponseWriter, r *http.Request, body []byte) {
	var mu sync.Mutex
	arrived := 0
	full := make(chan struct{})
	return func(w http.ResponseWriter, _ *http.Request, body []byte) {
		mu.Lock()
		arrived++
		if arrived == n {
			close(full)
		}
		mu.Unlock()
		select {
		case <-full:
			answerValid(w, body)
		case <-time.After(patience):
			w.WriteHeader(599)
		}
	}
}

// TestSlowUpstreamHoldsNoInstance: with one instance in the pool, twenty
// decisions still wait on the upstream at the same time, because a function
// hands its upstream call to the host and gives its instance back while the
// call is in flight (schema/abi.md, "Awaiting").
func TestSlowUpstreamHoldsNoInstance(t *testing.T) {
	if hosttest.SocketBuild() {
		t.Skip("a socket build's instance makes its upstream call itself (schema/socket.md)")
	}
	backends(t, func(t *testing.T, ledger string) {
		const n = 20
		g := startGateway(t, ledger, map[string]string{"GATEWAY_POOL_SIZE": "1", "SERVICE_RATE_LIMIT": "1000"})
		acct, key := g.NewAccount(randomEmail(), 100)
		g.vendor.Handle(barrier(n, 20*time.Second))
		var wg sync.WaitGroup
		replies := make([]reply, n)
		for i := range replies {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				replies[i] = g.post(key, simpleRequest, "Idempotency-Key", "op-"+strconv.Itoa(i))
			}(i)
		}
		wg.Wait()
		for i, r := range replies {
			if r.Status != 200 || r.Header.Get("X-Service-Credits") != "1" {
				t.Fatalf("decision %d: %d credits %q %s", i, r.Status, r.Header.Get("X-Service-Credits"), r.Body)
			}
		}
		if got := g.Balance(acct); got != 100-n {
			t.Fatalf("balance %d, want %d", got, 100-n)
		}
		g.CheckInvariant()
	})
}

// TestClientThatHangsUpStillSettlesAndReplays: a client that gives up while
// the upstream is thinking does not cancel its decision. The decision
// finishes, is charged once and retained, and resending the same key
// replays the answer without a second upstream call (spec §3.1, §7 rule 3).
func TestClientThatHangsUpStillSettlesAndReplays(t *testing.T) {
	backends(t, func(t *testing.T, ledger string) {
		g := startGateway(t, ledger, nil)
		acct, key := g.NewAccount(randomEmail(), 10)
		gate := make(chan struct{})
		g.vendor.Handle(gated(gate))

		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+"/v1/service", bytes.NewReader([]byte(simpleRequest)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Idempotency-Key", "hung-up")
		gone := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			gone <- err
		}()
		testenv.WaitFor(t, func() bool { return len(g.vendor.Seen()) == 1 })
		cancel()
		if err := <-gone; err == nil {
			t.Fatal("the client's request finished although it was cancelled")
		}
		close(gate)
		testenv.WaitFor(t, func() bool {
			rows := g.exec(`SELECT state FROM idempotency WHERE account_id = ? AND key = ?`, str(acct), str("hung-up"))
			return len(rows) == 1 && rows[0][0].AsString() == "completed"
		})
		r := g.post(key, simpleRequest, "Idempotency-Key", "hung-up")
		if r.Status != 200 || r.Header.Get("X-Idempotency-Replayed") != "true" || r.Header.Get("X-Service-Credits") != "0" {
			t.Fatalf("resend: %d replayed %q credits %q %s", r.Status, r.Header.Get("X-Idempotency-Replayed"), r.Header.Get("X-Service-Credits"), r.Body)
		}
		if n := len(g.vendor.Seen()); n != 1 {
			t.Fatalf("upstream calls %d, want 1", n)
		}
		if got := g.Balance(acct); got != 9 {
			t.Fatalf("balance %d, want 9", got)
		}
		g.CheckInvariant()
	})
}
