package decide_test

import (
	"testing"

	"decisiongateway/testkit/sqldtest"
)

// TestSettlementOutlastsALedgerRestart: sqld is killed while the upstream
// answers and comes back two seconds later. Settlement keeps trying with
// backoff, so the caller gets its answer with the charge confirmed, and a
// resend of the key replays exactly that answer (spec §3.1, §4.8).
func TestSettlementOutlastsALedgerRestart(t *testing.T) {
	s := sqldtest.StartServer(t)
	g := startGateway(t, s.URL, nil)
	acct, key := g.NewAccount(randomEmail(), 10)
	restarted := g.killsLedger(s)
	r := g.post(key, simpleRequest, "Idempotency-Key", "through-a-restart")
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	if r.Status != 200 || r.Header.Get("X-Service-Credits") != "1" {
		t.Fatalf("%d credits %q %s", r.Status, r.Header.Get("X-Service-Credits"), r.Body)
	}
	again := g.post(key, simpleRequest, "Idempotency-Key", "through-a-restart")
	if again.Status != 200 || again.Header.Get("X-Idempotency-Replayed") != "true" || string(again.Body) != string(r.Body) {
		t.Fatalf("resend: %d replayed %q\n%s\nwant\n%s", again.Status, again.Header.Get("X-Idempotency-Replayed"), again.Body, r.Body)
	}
	if got := g.Balance(acct); got != 9 {
		t.Fatalf("balance %d, want 9", got)
	}
	if n := len(g.vendor.Seen()); n != 1 {
		t.Fatalf("upstream calls %d", n)
	}
	g.CheckInvariant()
}
