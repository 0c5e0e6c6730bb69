package ledgerq_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/ledgerq"
	"decisiongateway/wasm-host/ledger"
)

type execLedger struct{ e *ledger.Executor }

func (l execLedger) Exec(b *abi.Batch) (abi.BatchResult, error) {
	return l.e.Exec(context.Background(), b), nil
}

// TestAbandonRefundsAFailedAttemptAtOnce: an attempt reserved (credits
// taken, idempotency key pending) whose module then trapped is settled by
// Abandon straight away: refunded, failed, its key failed, the balance
// equal to the sum of the entries again — so the account's next request,
// on any version, meets no attempt waiting for reconciliation. A second
// Abandon, or the sweeper later, finds nothing left to settle.
func TestAbandonRefundsAFailedAttemptAtOnce(t *testing.T) {
	ctx := context.Background()
	e, err := ledger.OpenWith(ctx, "file:"+filepath.Join(t.TempDir(), "l.db"), "", ledger.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	run := func(sql string, args ...abi.Value) [][]abi.Value {
		t.Helper()
		res := e.Exec(ctx, &abi.Batch{Steps: []abi.Statement{{SQL: sql, Args: args}}})
		if res.Err != "" {
			t.Fatalf("%s: %s", sql, res.Err)
		}
		return res.Steps[0].Rows
	}
	t0 := abi.Int64(now.Unix())
	run(`INSERT INTO accounts (id, balance, created_at) VALUES ('acct', 93, ?)`, t0)
	run(`INSERT INTO credit_entries (account_id, delta, kind, created_at) VALUES ('acct', 100, 'grant', ?)`, t0)
	run(`INSERT INTO credit_entries (account_id, delta, kind, request_id, created_at) VALUES ('acct', -7, 'reserve', 'req-1', ?)`, t0)
	run(`INSERT INTO requests (id, account_id, source, model, questions, cost, state, idem_key, lease_until, created_at)
VALUES ('req-1', 'acct', 'api', 'm', 1, 7, 'pending', 'k1', ?, ?)`, abi.Int64(now.Unix()+120), t0)
	run(`INSERT INTO idempotency (account_id, key, fingerprint, state, request_id, created_at, expires_at)
VALUES ('acct', 'k1', 'fp', 'pending', 'req-1', ?, ?)`, t0, abi.Int64(now.Unix()+86400))

	settled, err := ledgerq.Abandon(execLedger{e}, "req-1", "module_failed", now)
	if err != nil || !settled {
		t.Fatalf("Abandon = %v, %v; want the attempt settled", settled, err)
	}
	got := run(`SELECT (SELECT balance FROM accounts WHERE id = 'acct'), (SELECT SUM(delta) FROM credit_entries WHERE account_id = 'acct'),
  (SELECT state || '/' || error_code FROM requests WHERE id = 'req-1'), (SELECT state FROM idempotency WHERE key = 'k1')`)[0]
	if got[0].AsInt() != 100 || got[1].AsInt() != 100 || got[2].AsString() != "failed/module_failed" || got[3].AsString() != "failed" {
		t.Fatalf("after Abandon: balance %d, entries %d, request %s, key %s", got[0].AsInt(), got[1].AsInt(), got[2].AsString(), got[3].AsString())
	}
	if again, err := ledgerq.Abandon(execLedger{e}, "req-1", "module_failed", now); err != nil || again {
		t.Fatalf("a second Abandon = %v, %v; want nothing settled", again, err)
	}
	if n, err := ledgerq.Reconcile(execLedger{e}, "acct", now.Add(time.Hour)); err != nil || n != 0 {
		t.Fatalf("the sweeper found %d attempts (%v) after Abandon; want none", n, err)
	}
	if b := run(`SELECT balance FROM accounts WHERE id = 'acct'`)[0][0].AsInt(); b != 100 {
		t.Fatalf("balance %d after the sweeper, want 100 (refunded once)", b)
	}
}
