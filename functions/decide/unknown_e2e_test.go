package decide_test

import (
	"bytes"
	"sync/atomic"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/sqldtest"
)

// loseAnswer is a proxy in front of sqld that makes the host speak Hrana
// over HTTP and, once armed, drops the connection instead of returning
// sqld's answer to the next request that reserves a decision: the
// reservation committed, the host never learns it.
func loseAnswer(t *testing.T, target string) (string, *atomic.Bool) {
	var armed atomic.Bool
	return sqldtest.AnswerProxy(t, target, func(body []byte) sqldtest.Fate {
		if bytes.Contains(body, []byte("decision_reservations")) && armed.CompareAndSwap(true, false) {
			return sqldtest.Drop
		}
		return sqldtest.Forward
	}), &armed
}

// A reservation whose answer is lost after sqld committed it may have
// charged: the decision says so (503 request_reconciliation_pending, no
// X-Service-Credits), not "nothing was charged", and calls no upstream.
// Once its lease has ended the attempt is reconciled: refunded, its key
// failed, the balance the sum of its entries.
func TestReservationWithALostAnswerIsReconciledNotCalledFree(t *testing.T) {
	url, armed := loseAnswer(t, sqldtest.Start(t))
	g := startGateway(t, url, nil)
	acct, key := g.NewAccount(randomEmail(), 10)
	armed.Store(true)
	r := g.post(key, simpleRequest, "Idempotency-Key", "lost-answer")
	if r.Status != 503 || r.code() != "request_reconciliation_pending" {
		t.Fatalf("a reservation whose answer was lost: %d %q %s", r.Status, r.code(), r.Body)
	}
	if _, present := r.Header["X-Service-Credits"]; present {
		t.Fatalf("X-Service-Credits %q: the charge is not known", r.Header.Get("X-Service-Credits"))
	}
	if n := len(g.vendor.Seen()); n != 0 {
		t.Fatalf("upstream called %d times", n)
	}
	rows := g.exec(`SELECT state FROM requests WHERE account_id = ?`, abi.String(acct))
	if len(rows) != 1 || rows[0][0].AsString() != "pending" || g.Balance(acct) != 9 {
		t.Fatalf("the committed reservation: %v, balance %d", rows, g.Balance(acct))
	}
	// Its lease ends (as it would 65 s later): the next decision reconciles it.
	g.exec(`UPDATE requests SET lease_until = 0 WHERE account_id = ?`, abi.String(acct))
	if next := g.post(key, simpleRequest); next.Status != 503 || next.code() != "request_reconciliation_pending" {
		t.Fatalf("next: %d %q", next.Status, next.code())
	}
	if again := g.post(key, simpleRequest, "Idempotency-Key", "lost-answer"); again.code() != "idempotency_failed" {
		t.Fatalf("the key after reconciliation: %d %q", again.Status, again.code())
	}
	if g.Balance(acct) != 10 {
		t.Errorf("balance %d after the refund, want 10", g.Balance(acct))
	}
	g.CheckInvariant()
}

// A settlement whose answer is lost after sqld committed it is retried,
// and the retry finds the attempt already settled. That is this host's own
// charge, not a reconciliation by another: the decision is delivered with
// the credits it cost (spec §4.8), with or without an Idempotency-Key, and
// a resend of the key replays it.
func TestSettlementWithALostAnswerIsChargedOnceAndSaysSo(t *testing.T) {
	var armed atomic.Bool
	url := sqldtest.AnswerProxy(t, sqldtest.Start(t), func(body []byte) sqldtest.Fate {
		if (bytes.Contains(body, []byte("state = 'succeeded'")) || bytes.Contains(body, []byte("decision_settlements")) || bytes.Contains(body, []byte("decision_records"))) && armed.CompareAndSwap(true, false) {
			return sqldtest.Drop
		}
		return sqldtest.Forward
	})
	g := startGateway(t, url, nil)
	acct, key := g.NewAccount(randomEmail(), 10)
	for i, headers := range [][]string{{"Idempotency-Key", "lost-settlement"}, nil} {
		armed.Store(true)
		r := g.post(key, simpleRequest, headers...)
		if armed.Load() {
			t.Fatal("no settlement answer was lost")
		}
		if r.Status != 200 || r.Header.Get("X-Service-Credits") != "1" {
			t.Errorf("headers %v: a settlement that committed: %d %q credits %q %s", headers, r.Status, r.code(), r.Header.Get("X-Service-Credits"), r.Body)
		}
		if g.Balance(acct) != int64(9-i) {
			t.Fatalf("balance %d", g.Balance(acct))
		}
	}
	if again := g.post(key, simpleRequest, "Idempotency-Key", "lost-settlement"); again.Status != 200 || again.Header.Get("X-Idempotency-Replayed") != "true" {
		t.Errorf("resend: %d %q", again.Status, again.code())
	}
	if n := len(g.vendor.Seen()); n != 2 {
		t.Errorf("upstream calls %d", n)
	}
	g.CheckInvariant()
}
