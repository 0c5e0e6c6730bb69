package ledger

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/ledgerq"
	"decisiongateway/shared/platform"
)

// A speculative decision's record (ledgerq.RecordDecision, one INSERT into
// decision_records) decides and writes exactly what its reservation and its
// successful settlement decide and write when run one after the other, on
// both backends: each attempt's outcome, whether it was charged, and every
// row the attempts leave (the attempts, the balance, the entries, both
// rate windows, the key's last use). The record's trigger writes the
// attempt in its settled state directly
// (schema/migrations/0009_decision_record_direct.sql) instead of running
// the two triggers, so this is what holds it to them. Each story runs
// three attempts on two accounts set up alike, one recorded and one
// reserved then settled, so that the later attempts meet the limits.
func TestARecordWritesWhatItsReservationAndSettlementWrite(t *testing.T) {
	now := time.Unix(1_800_000_030, 0)
	cases := []struct {
		name                 string
		balance              int64
		authLimit, rateLimit int
		signedIn             bool // no API key: the playground's session
		revoked              bool // the key is revoked
		stale                bool // an attempt of the account is pending past its lease
		noAccount            bool // signed in as an account that does not exist
		want                 []ledgerq.Outcome
	}{
		{"charged", 100, 10, 10, false, false, false, false, []ledgerq.Outcome{ledgerq.Reserved, ledgerq.Reserved, ledgerq.Reserved}},
		{"signed in", 100, 10, 10, true, false, false, false, []ledgerq.Outcome{ledgerq.Reserved, ledgerq.Reserved, ledgerq.Reserved}},
		{"balance", 25, 10, 10, false, false, false, false, []ledgerq.Outcome{ledgerq.Reserved, ledgerq.Reserved, ledgerq.Insufficient}},
		{"rate limit", 100, 10, 2, false, false, false, false, []ledgerq.Outcome{ledgerq.Reserved, ledgerq.Reserved, ledgerq.RateLimited}},
		{"signed in, rate limit", 100, 10, 1, true, false, false, false, []ledgerq.Outcome{ledgerq.Reserved, ledgerq.RateLimited, ledgerq.RateLimited}},
		{"address limit", 100, 2, 10, false, false, false, false, []ledgerq.Outcome{ledgerq.Reserved, ledgerq.Reserved, ledgerq.AuthLimited}},
		{"revoked key", 100, 10, 10, false, true, false, false, []ledgerq.Outcome{ledgerq.Unauthorized, ledgerq.Unauthorized, ledgerq.Unauthorized}},
		{"stale attempt", 100, 10, 10, false, false, true, false, []ledgerq.Outcome{ledgerq.Reconciling, ledgerq.Reconciling, ledgerq.Reconciling}},
		{"no account", 100, 10, 10, true, false, false, true, []ledgerq.Outcome{ledgerq.Unauthorized, ledgerq.Unauthorized, ledgerq.Unauthorized}},
	}
	eachBackend(t, func(t *testing.T, url string) {
		e := openTuned(t, url, Options{Create: true, Merge: ledgerq.MergeableStatements()}, defaultTuning())
		if err := e.Migrate(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		l := e.Bind(testCtx(t))
		for ci, c := range cases {
			var rows [2]string
			for path, prefix := range []string{fmt.Sprintf("rec%d", ci), fmt.Sprintf("two%d", ci)} {
				account, hash := prefix+"-acct", prefix+"-hash"
				if !c.noAccount {
					fundAccount(t, e, account, hash, c.balance, revokedAt(c.revoked))
				}
				if c.stale {
					run(t, e, stmt(`INSERT INTO requests (id, account_id, source, model, questions, cost, state, lease_until, created_at)
VALUES (?, ?, 'api', 'm', 1, 10, 'pending', ?, 0)`, abi.String(prefix+"-old"), abi.String(account), abi.Int64(now.Unix()-1)))
					run(t, e,
						stmt("UPDATE accounts SET balance = balance - 10 WHERE id = ?", abi.String(account)),
						stmt("INSERT INTO credit_entries (account_id, delta, kind, request_id, created_at) VALUES (?, -10, 'reserve', ?, 0)",
							abi.String(account), abi.String(prefix+"-old")))
				}
				for i, want := range c.want {
					p := ledgerq.Principal{AccountID: account, KeyHash: hash, IPHash: prefix + "-ip", AuthLimit: c.authLimit}
					if c.signedIn {
						p.KeyHash = ""
					}
					r := &ledgerq.Reserve{Principal: p, Source: "api", RequestID: fmt.Sprintf("%s-req%d", prefix, i), Model: "m",
						Questions: 1, Cost: 10, RateLimit: c.rateLimit, TTL: time.Hour, Lease: time.Minute, Now: now.Add(time.Duration(i) * time.Second)}
					s := &ledgerq.Settle{RequestID: r.RequestID, AccountID: account, Cost: 10, OK: true, Status: 200,
						InputTokens: 11, OutputTokens: int64(7 + i), Model: "m-2026", Now: r.Now}
					got, charged := decideBy(t, l, path == 0, r, s)
					if got != want || charged != (want == ledgerq.Reserved) {
						t.Errorf("%s, %s path, attempt %d: outcome %d charged %v, want %d", c.name, []string{"record", "two-batch"}[path], i, got, charged, want)
					}
				}
				rows[path] = strings.ReplaceAll(ledgerRows(t, e, account, hash, prefix+"-ip"), prefix, "X")
			}
			if rows[0] != rows[1] {
				t.Errorf("%s: the record left\n%s\nthe reservation and settlement left\n%s", c.name, rows[0], rows[1])
			}
		}
	})
}

// decideBy runs one successful decision's ledger writes: recorded in one
// batch, or reserved and (when reserved) settled.
func decideBy(t *testing.T, l platform.Ledger, record bool, r *ledgerq.Reserve, s *ledgerq.Settle) (ledgerq.Outcome, bool) {
	t.Helper()
	if record {
		res, charged, err := ledgerq.RecordDecision(l, r, s)
		if err != nil {
			t.Fatal(err)
		}
		return res.Outcome, charged
	}
	res, err := ledgerq.ReserveDecision(l, r)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != ledgerq.Reserved {
		return res.Outcome, false
	}
	charged, err := ledgerq.SettleDecision(l, s)
	if err != nil {
		t.Fatal(err)
	}
	return res.Outcome, charged
}

func revokedAt(revoked bool) abi.Value {
	if revoked {
		return abi.Int64(1)
	}
	return abi.NullValue()
}

// ledgerRows renders every row an account's decisions touch, in a stable
// order, for comparing two accounts.
func ledgerRows(t *testing.T, e *Executor, account, hash, ip string) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []struct {
		sql  string
		args []abi.Value
	}{
		{"SELECT balance FROM accounts WHERE id = ?", []abi.Value{abi.String(account)}},
		{`SELECT id, key_id, source, model, questions, cost, charged, state, status, error_code, input_tokens, output_tokens,
  idem_key, lease_until, created_at, finished_at, resolved_model FROM requests WHERE account_id = ? ORDER BY id`, []abi.Value{abi.String(account)}},
		{"SELECT delta, kind, request_id, created_at FROM credit_entries WHERE account_id = ? ORDER BY id", []abi.Value{abi.String(account)}},
		{"SELECT scope, window_start, count FROM rate_windows WHERE scope IN (?, ?) ORDER BY scope", []abi.Value{abi.String("auth:" + ip), abi.String("decide:" + account)}},
		{"SELECT last_used_at, revoked_at FROM api_keys WHERE secret_hash = ?", []abi.Value{abi.String(hash)}},
	} {
		for _, row := range query(t, e, q.sql, q.args...) {
			for i, v := range row {
				if i > 0 {
					b.WriteString(" | ")
				}
				switch v.Kind {
				case abi.Null:
					b.WriteString("NULL")
				case abi.Integer, abi.Float:
					fmt.Fprint(&b, v.AsInt())
				default:
					b.WriteString(v.AsString())
				}
			}
			b.WriteString("\n")
		}
		b.WriteString("--\n")
	}
	return b.String()
}
