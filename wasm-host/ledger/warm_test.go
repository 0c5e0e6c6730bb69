package ledger

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"decisiongateway/shared/ledgerq"
	"decisiongateway/shared/platform"
)

// Options.Prepare compiles the decision path when the writer starts, so a
// fresh host's first decision compiles no statement of its own; without it
// the first decision compiles every one it runs.
func TestPrepareAtOpenCompilesTheDecisionPath(t *testing.T) {
	url := "file:" + filepath.Join(t.TempDir(), "ledger.db")
	setup := openT(t, url)
	if err := setup.Migrate(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	run(t, setup,
		stmt(`INSERT INTO accounts (id, balance, created_at) VALUES ('acct', 100, 0)`),
		stmt(`INSERT INTO credit_entries (account_id, delta, kind, created_at) VALUES ('acct', 100, 'grant', 0)`),
		stmt(`INSERT INTO api_keys (id, account_id, name, prefix, secret_hash, created_at) VALUES ('k', 'acct', 'n', 'p', 'hash', 0)`))
	setup.Close()

	texts := ledgerq.DecisionStatements()
	for _, c := range []struct {
		name    string
		prepare []string
	}{{"cold", nil}, {"prepared", texts}} {
		t.Run(c.name, func(t *testing.T) {
			e, err := OpenWith(testCtx(t), url, "", Options{Prepare: c.prepare})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			// The writer compiles the texts between batches; once it has
			// compiled them all (BEGIN, COMMIT and every text), a decision
			// finds each in its cache.
			run(t, e, stmt(`SELECT 1`))
			for deadline := time.Now().Add(10 * time.Second); c.prepare != nil && e.Stats().Prepared < int64(len(texts)+3); {
				if time.Now().After(deadline) {
					t.Fatalf("the warm-up compiled %d statements in 10 s, want %d: a decision text no longer compiles", e.Stats().Prepared, len(texts)+3)
				}
				time.Sleep(time.Millisecond)
			}
			warm := e.Stats()
			decide(t, e.Bind(context.Background()), "req-"+c.name)
			fresh := e.Stats().Sub(warm).Prepared
			switch {
			case c.prepare == nil && fresh == 0:
				t.Fatal("a cold writer's first decision compiled nothing: the test cannot tell warm from cold")
			case c.prepare != nil && fresh != 0:
				t.Errorf("the first decision compiled %d statements the warm-up did not", fresh)
			case c.prepare != nil && warm.Prepared != int64(len(texts)+3):
				// BEGIN, COMMIT, every decision text, and the SELECT 1.
				t.Errorf("the warm-up compiled %d statements, want %d: a decision text no longer compiles", warm.Prepared, len(texts)+3)
			}
		})
	}
}

// decide reserves and settles one successful decision with an
// Idempotency-Key, as functions/decide does.
func decide(t *testing.T, l platform.Ledger, id string) {
	t.Helper()
	now := time.Now()
	r, err := ledgerq.ReserveDecision(l, &ledgerq.Reserve{
		Principal: ledgerq.Principal{AccountID: "acct", KeyHash: "hash", IPHash: "ip", AuthLimit: 100},
		Source:    "api", RequestID: id, IdemKey: "key-" + id, Fingerprint: "fp", Model: "m",
		Questions: 1, Cost: 1, RateLimit: 100, TTL: time.Hour, Lease: time.Minute, Now: now,
	})
	if err != nil || r.Outcome != ledgerq.Reserved {
		t.Fatalf("reserve: outcome %d, %v", r.Outcome, err)
	}
	ok, err := ledgerq.SettleDecision(l, &ledgerq.Settle{RequestID: id, AccountID: "acct", IdemKey: "key-" + id, Cost: 1, OK: true,
		Status: 200, Retain: &ledgerq.Retained{RequestID: id, Status: 200, Body: []byte(`{}`)}, Now: now})
	if err != nil || !ok {
		t.Fatalf("settle: %v %v", ok, err)
	}
}
