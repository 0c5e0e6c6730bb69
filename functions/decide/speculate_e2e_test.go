package decide_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"decisiongateway/testkit/sqldtest"
)

// Speculative decisions (schema/ledger.md): a keyless decision whose key
// the ledger allowed a moment ago on this host calls the upstream first
// and is reserved and settled in one statement afterwards.

// TestSpeculativeDecisionOfARevokedKeyIsRefusedAndNotCharged: a key
// revoked elsewhere (another host, the operator's CLI) while this host
// still remembers it allowed: a decision that speculated gets the
// reservation's refusal, 401, and nothing of the upstream's answer;
// nothing is charged and no attempt recorded. Whether a decision
// speculates depends on measured latencies, so the test revokes and
// restores the key until one has (the upstream was called for the
// refused request), checking every refusal on the way.
func TestSpeculativeDecisionOfARevokedKeyIsRefusedAndNotCharged(t *testing.T) {
	backends(t, func(t *testing.T, url string) {
		g := startGateway(t, url, nil)
		acct, key := g.NewAccount(randomEmail(), 100)
		spent := int64(0)
		speculated := false
		for try := 0; try < 20 && !speculated; try++ {
			for range 4 { // the host learns the key is allowed, and the latencies
				if r := g.post(key, simpleRequest); r.Status != 200 || r.Header.Get("X-Service-Credits") != "1" {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
				spent++
			}
			g.exec(`UPDATE api_keys SET revoked_at = 1 WHERE account_id = ?`, str(acct))
			calls := len(g.vendor.Seen())
			r := g.post(key, simpleRequest)
			if r.Status != 401 || r.code() != "invalid_api_key" || r.Header.Get("X-Service-Credits") != "0" {
				t.Fatalf("revoked: %d %q credits %q %s", r.Status, r.code(), r.Header.Get("X-Service-Credits"), r.Body)
			}
			speculated = len(g.vendor.Seen()) == calls+1
			if rows := g.exec(`SELECT COUNT(*) FROM requests WHERE account_id = ?`, str(acct)); rows[0][0].AsInt() != spent {
				t.Fatalf("requests recorded %d, want %d", rows[0][0].AsInt(), spent)
			}
			if got := g.Balance(acct); got != 100-spent {
				t.Fatalf("balance %d, want %d", got, 100-spent)
			}
			g.CheckInvariant()
			g.exec(`UPDATE api_keys SET revoked_at = NULL WHERE account_id = ?`, str(acct))
		}
		if !speculated {
			t.Fatal("no decision speculated in 20 tries")
		}
	})
}

// TestSpeculationWastesNoCallWhenTheBalanceRunsOut: decisions until the
// balance is gone. A decision speculates only while the balance it saw
// covers twice the cost of those in flight, so the last credits are spent
// reserving first and the refusal reaches no upstream: every upstream
// call was a charged answer.
func TestSpeculationWastesNoCallWhenTheBalanceRunsOut(t *testing.T) {
	g := startGateway(t, "", nil)
	acct, key := g.NewAccount(randomEmail(), 6)
	for i := range 6 {
		if r := g.post(key, simpleRequest); r.Status != 200 || r.Header.Get("X-Service-Credits") != "1" {
			t.Fatalf("decision %d: %d %s", i, r.Status, r.Body)
		}
	}
	if r := g.post(key, simpleRequest); r.Status != 402 || r.code() != "insufficient_credits" {
		t.Fatalf("past the balance: %d %q", r.Status, r.code())
	}
	if n := len(g.vendor.Seen()); n != 6 {
		t.Fatalf("upstream calls %d, want 6", n)
	}
	if got := g.Balance(acct); got != 0 {
		t.Fatalf("balance %d", got)
	}
	g.CheckInvariant()
}

// TestDecisionsAgainstASlowUpstreamSpeculateOneAtATime: against an
// upstream that takes far longer than the ledger (a model answering in a
// fraction of a second and more), decisions that arrive one at a time
// speculate too (a burst is bounded per slot: speculate_test.go), with the
// same guarantee: a key revoked meanwhile costs one upstream call, which is
// refused 401, nothing delivered, nothing charged, no attempt recorded.
func TestDecisionsAgainstASlowUpstreamSpeculateOneAtATime(t *testing.T) {
	g := startGateway(t, "", nil)
	g.vendor.Handle(func(w http.ResponseWriter, _ *http.Request, body []byte) {
		time.Sleep(150 * time.Millisecond)
		answerValid(w, body)
	})
	acct, key := g.NewAccount(randomEmail(), 10)
	for range 4 {
		if r := g.post(key, simpleRequest); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	g.exec(`UPDATE api_keys SET revoked_at = 1 WHERE account_id = ?`, str(acct))
	if r := g.post(key, simpleRequest); r.Status != 401 || r.Header.Get("X-Service-Credits") != "0" {
		t.Fatalf("revoked: %d %s", r.Status, r.Body)
	}
	if n := len(g.vendor.Seen()); n != 5 {
		t.Fatalf("upstream calls %d, want 5 (the revoked key's decision speculated)", n)
	}
	if rows := g.exec(`SELECT COUNT(*) FROM requests WHERE account_id = ?`, str(acct)); rows[0][0].AsInt() != 4 {
		t.Fatalf("requests recorded %d, want 4", rows[0][0].AsInt())
	}
	if got := g.Balance(acct); got != 6 {
		t.Fatalf("balance %d, want 6", got)
	}
	g.CheckInvariant()
}

// TestConcurrentDecisionsSpendTheBalanceExactly: 24 decisions at once on
// an account with 10 credits, after the host has learned the key: exactly
// 10 answers are delivered, each charged once; the rest are refused with
// nothing charged, however many of them speculated.
func TestConcurrentDecisionsSpendTheBalanceExactly(t *testing.T) {
	backends(t, func(t *testing.T, url string) {
		g := startGateway(t, url, nil)
		acct, key := g.NewAccount(randomEmail(), 13)
		for range 3 {
			if r := g.post(key, simpleRequest); r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		}
		var mu sync.Mutex
		statuses := map[int]int{}
		var wg sync.WaitGroup
		for range 24 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := g.post(key, simpleRequest)
				mu.Lock()
				statuses[r.Status]++
				mu.Unlock()
				if r.Status == 200 && r.Header.Get("X-Service-Credits") != "1" {
					t.Errorf("delivered with credits %q", r.Header.Get("X-Service-Credits"))
				}
				if r.Status != 200 && r.Header.Get("X-Service-Credits") != "0" {
					t.Errorf("%d %q with credits %q", r.Status, r.code(), r.Header.Get("X-Service-Credits"))
				}
			}()
		}
		wg.Wait()
		if statuses[200] != 10 || statuses[402] != 14 {
			t.Fatalf("statuses %v, want 10 delivered and 14 refused", statuses)
		}
		if got := g.Balance(acct); got != 0 {
			t.Fatalf("balance %d", got)
		}
		if rows := g.exec(`SELECT COUNT(*) FROM requests WHERE account_id = ? AND state = 'succeeded' AND charged = 1`, str(acct)); rows[0][0].AsInt() != 13 {
			t.Fatalf("charged attempts %d, want 13", rows[0][0].AsInt())
		}
		g.CheckInvariant()
	})
}

// TestSpeculativeDecisionOutlastsALedgerRestart: sqld is killed while the
// upstream answers a keyless decision and comes back two seconds later.
// Recording it keeps trying (reading first whether a try whose answer was
// lost committed), so the caller gets its answer charged exactly once.
func TestSpeculativeDecisionOutlastsALedgerRestart(t *testing.T) {
	s := sqldtest.StartServer(t)
	g := startGateway(t, s.URL, nil)
	acct, key := g.NewAccount(randomEmail(), 10)
	for range 4 {
		if r := g.post(key, simpleRequest); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	restarted := g.killsLedger(s)
	r := g.post(key, simpleRequest)
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	if r.Status != 200 || r.Header.Get("X-Service-Credits") != "1" {
		t.Fatalf("%d credits %q %s", r.Status, r.Header.Get("X-Service-Credits"), r.Body)
	}
	if got := g.Balance(acct); got != 5 {
		t.Fatalf("balance %d, want 5", got)
	}
	g.CheckInvariant()
}

// TestABurstReservesPastThirtyTwoInFlight: a host lets at most 32 of its
// decisions run their upstream calls without a reservation; their records
// all reach the ledger when a burst of slow calls comes back together. Of
// 40 decisions held at the upstream at once, at least 8 reserved first
// (their attempts are pending), and every one is answered and charged
// once the upstream answers.
func TestABurstReservesPastThirtyTwoInFlight(t *testing.T) {
	g := startGateway(t, "", map[string]string{"SERVICE_RATE_LIMIT": "1000", "SERVICE_AUTH_RATE_LIMIT": "1000"})
	acct, key := g.NewAccount(randomEmail(), 1000)
	for range 5 {
		if r := g.post(key, simpleRequest); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	gate := make(chan struct{})
	g.vendor.Handle(gated(gate))
	var wg sync.WaitGroup
	statuses := make(chan int, 40)
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- g.post(key, simpleRequest).Status
		}()
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(g.vendor.Seen()) < 45 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	pending := g.exec(`SELECT COUNT(*) FROM requests WHERE account_id = ? AND state = 'pending'`, str(acct))[0][0].AsInt()
	close(gate)
	wg.Wait()
	close(statuses)
	if n := len(g.vendor.Seen()); n != 45 {
		t.Fatalf("upstream calls %d, want 45", n)
	}
	if pending < 8 {
		t.Errorf("%d of 40 decisions held at the upstream had reserved first; want at least 8 (at most 32 speculate)", pending)
	}
	for s := range statuses {
		if s != 200 {
			t.Errorf("status %d", s)
		}
	}
	if got := g.Balance(acct); got != 1000-45 {
		t.Fatalf("balance %d, want %d", got, 1000-45)
	}
	g.CheckInvariant()
}
