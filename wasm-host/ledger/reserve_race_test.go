package ledger

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/ledgerq"
)

// Reservations racing on one account, from two hosts (Executors) at once,
// on both backends: each limit the reservation enforces in SQL lets exactly
// its number through, every attempt is counted, and the money adds up. The
// reservation's writes run in a trigger, each under a condition it
// evaluates itself (schema/migrations/0005_decision_reservation.sql); this
// is what shows those conditions hold under concurrency. The hosts merge
// reservations as a serving host does (Options.Merge), and the attempts
// queue behind another connection's write lock, so each host runs its
// twelve as one group: on sqld and without an Idempotency-Key, one merged
// INSERT whose RETURNING rows must each tell its own reservation's outcome.
// Speculative decisions' records race the same way (the record's trigger,
// schema/migrations/0009_decision_record_direct.sql, makes the same writes
// under the same conditions, with the attempt settled).
func TestReservationsRaceToTheirLimits(t *testing.T) {
	const attempts = 24 // 2 hosts × 12 callers
	now := time.Unix(1_800_000_010, 0)
	cases := []struct {
		name      string
		balance   int64
		authLimit int
		rateLimit int
		sameKey   bool // every attempt carries one Idempotency-Key
		signedIn  bool // the caller has no API key (the playground's session)
		record    bool // speculative decisions' records (ledgerq.RecordDecision), each charged when it reserves
		want      map[ledgerq.Outcome]int
	}{
		{"rate limit", 1000, 100, 7, false, false, false, map[ledgerq.Outcome]int{ledgerq.Reserved: 7, ledgerq.RateLimited: attempts - 7}},
		{"auth limit", 1000, 5, 100, false, false, false, map[ledgerq.Outcome]int{ledgerq.Reserved: 5, ledgerq.AuthLimited: attempts - 5}},
		{"balance", 40, 100, 100, false, false, false, map[ledgerq.Outcome]int{ledgerq.Reserved: 4, ledgerq.Insufficient: attempts - 4}},
		{"same key", 1000, 100, 100, true, false, false, map[ledgerq.Outcome]int{ledgerq.Reserved: 1, ledgerq.InProgress: attempts - 1}},
		{"signed in, rate limit", 1000, 100, 7, false, true, false, map[ledgerq.Outcome]int{ledgerq.Reserved: 7, ledgerq.RateLimited: attempts - 7}},
		{"signed in, same key, balance", 5, 100, 100, true, true, false, map[ledgerq.Outcome]int{ledgerq.Insufficient: attempts}},
		{"records, balance", 40, 100, 100, false, false, true, map[ledgerq.Outcome]int{ledgerq.Reserved: 4, ledgerq.Insufficient: attempts - 4}},
		{"records, rate limit", 1000, 100, 7, false, false, true, map[ledgerq.Outcome]int{ledgerq.Reserved: 7, ledgerq.RateLimited: attempts - 7}},
		{"records, auth limit", 1000, 5, 100, false, false, true, map[ledgerq.Outcome]int{ledgerq.Reserved: 5, ledgerq.AuthLimited: attempts - 5}},
	}
	eachBackend(t, func(t *testing.T, url string) {
		remote := !strings.HasPrefix(url, "file:")
		setup := openT(t, url)
		if err := setup.Migrate(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		run(t, setup, stmt(probeTable))
		hosts := []*Executor{openMerging(t, url), openMerging(t, url)}
		for ci, c := range cases {
			account, hash := fmt.Sprintf("race_%d", ci), fmt.Sprintf("racehash_%d", ci)
			fundAccount(t, setup, account, hash, c.balance, abi.NullValue())
			var (
				mu   sync.Mutex
				got  = map[ledgerq.Outcome]int{}
				told = map[string]bool{} // the attempts told they were reserved
			)
			before := []Stats{hosts[0].Stats(), hosts[1].Stats()}
			queueBehindLock(t, url, hosts, attempts, func(wg *sync.WaitGroup) {
				for i := range attempts {
					l := hosts[i%2].Bind(testCtx(t))
					wg.Go(func() {
						idem := ""
						if c.sameKey {
							idem = "the-key"
						}
						p := ledgerq.Principal{AccountID: account, KeyHash: hash, IPHash: "ip-" + account, AuthLimit: c.authLimit}
						if c.signedIn {
							p.KeyHash = ""
						}
						res := &ledgerq.Reserve{
							Principal: p,
							Source:    "api", RequestID: fmt.Sprintf("%s_req_%d", account, i), IdemKey: idem, Fingerprint: "fp", Model: "m",
							Questions: 1, Cost: 10, RateLimit: c.rateLimit, TTL: time.Hour, Lease: time.Minute, Now: now,
						}
						var (
							r       ledgerq.Reservation
							charged bool
							err     error
						)
						if c.record {
							r, charged, err = ledgerq.RecordDecision(l, res, &ledgerq.Settle{RequestID: res.RequestID, AccountID: account, Cost: 10,
								OK: true, Status: 200, InputTokens: 1, OutputTokens: 1, Now: now})
						} else {
							r, err = ledgerq.ReserveDecision(l, res)
						}
						if err != nil {
							t.Error(err)
							return
						}
						if c.record && charged != (r.Outcome == ledgerq.Reserved) {
							t.Errorf("%s: %s outcome %d, charged %v", c.name, res.RequestID, r.Outcome, charged)
						}
						mu.Lock()
						got[r.Outcome]++
						if r.Outcome == ledgerq.Reserved {
							told[fmt.Sprintf("%s_req_%d", account, i)] = true
						}
						mu.Unlock()
					})
				}
			})
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%s: outcomes %v, want %v", c.name, got, c.want)
			}
			// Each attempt got its own outcome, not another's: exactly those
			// told they were reserved have a pending request (a settled one
			// when recorded).
			state := "pending"
			if c.record {
				state = "succeeded"
			}
			for _, row := range query(t, setup, "SELECT id FROM requests WHERE account_id = ? AND state = ?", abi.String(account), abi.String(state)) {
				if !told[row[0].AsString()] {
					t.Errorf("%s: %s is pending but was not told it was reserved", c.name, row[0].AsString())
				}
			}
			merged := hosts[0].Stats().Sub(before[0]).Merged + hosts[1].Stats().Sub(before[1]).Merged
			want := int64(0)
			if remote && !c.sameKey {
				want = attempts
			}
			if merged != want {
				t.Errorf("%s: %d reservations ran merged, want %d", c.name, merged, want)
			}
			reserved := int64(c.want[ledgerq.Reserved])
			w := now.Unix() / 60 * 60
			addressAttempts := int64(attempts)
			if c.signedIn {
				addressAttempts = 0 // only API keys are counted per address
			}
			checks := []struct {
				what string
				sql  string
				args []abi.Value
				want int64
			}{
				{"balance", "SELECT balance FROM accounts WHERE id = ?", []abi.Value{abi.String(account)}, c.balance - 10*reserved},
				{"entries", "SELECT SUM(delta) FROM credit_entries WHERE account_id = ?", []abi.Value{abi.String(account)}, c.balance - 10*reserved},
				{state + " requests", "SELECT COUNT(*) FROM requests WHERE account_id = ? AND state = ?", []abi.Value{abi.String(account), abi.String(state)}, reserved},
				{"requests", "SELECT COUNT(*) FROM requests WHERE account_id = ?", []abi.Value{abi.String(account)}, reserved},
				{"address attempts", "SELECT COALESCE((SELECT count FROM rate_windows WHERE scope = ? AND window_start = ?), 0)",
					[]abi.Value{abi.String("auth:ip-" + account), abi.Int64(w)}, addressAttempts},
				{"account attempts", "SELECT COALESCE((SELECT count FROM rate_windows WHERE scope = ? AND window_start = ?), 0)",
					[]abi.Value{abi.String("decide:" + account), abi.Int64(w)}, int64(attempts - c.want[ledgerq.AuthLimited])},
			}
			for _, k := range checks {
				if v := scalar(t, setup, k.sql, k.args...); v != k.want {
					t.Errorf("%s: %s %d, want %d", c.name, k.what, v, k.want)
				}
			}
		}
	})
}

// openMerging opens an executor that merges reservations and settlements
// as a serving host's does, without pipelining (queueBehindLock).
func openMerging(t testing.TB, url string) *Executor {
	t.Helper()
	return openTuned(t, url, Options{Merge: ledgerq.MergeableStatements()}, lockstep())
}

// A settlement completes the attempt's idempotency record only if the
// attempt was still pending: one whose lease ran out and was reconciled
// (failed, refunded) keeps its record failed when its late success
// arrives, so a retry is told it failed rather than replayed an answer
// that was refunded. On both backends.
func TestLateSettlementLeavesTheRecordFailed(t *testing.T) {
	now := time.Unix(1_800_000_100, 0)
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		seedLedger(t, e)
		l := e.Bind(testCtx(t))
		record := func(key string) string {
			t.Helper()
			rows := query(t, e, "SELECT state FROM idempotency WHERE account_id = ? AND key = ?", abi.String(acct), abi.String(key))
			if len(rows) != 1 {
				t.Fatalf("record %s: %d rows", key, len(rows))
			}
			return rows[0][0].AsString()
		}
		settle := func(id, key string, at time.Time) bool {
			t.Helper()
			mine, err := ledgerq.SettleDecision(l, &ledgerq.Settle{RequestID: id, AccountID: acct, IdemKey: key, Cost: 10, OK: true, Status: 200,
				InputTokens: -1, Retain: &ledgerq.Retained{RequestID: id, Status: 200, Body: []byte(`{"a":1}`), Mode: "m"}, Now: at})
			if err != nil {
				t.Fatal(err)
			}
			return mine
		}
		for _, r := range []*ledgerq.Reserve{reserve("on-time", "k-on-time", 10, now), reserve("late", "k-late", 10, now)} {
			if got, err := ledgerq.ReserveDecision(l, r); err != nil || got.Outcome != ledgerq.Reserved {
				t.Fatalf("reserve %s: %v, %v", r.RequestID, got.Outcome, err)
			}
		}
		if !settle("on-time", "k-on-time", now) || record("k-on-time") != "completed" {
			t.Errorf("on-time settlement: record %s, want completed", record("k-on-time"))
		}
		past := now.Add(time.Hour)
		if _, err := ledgerq.Reconcile(l, acct, past); err != nil {
			t.Fatal(err)
		}
		if settle("late", "k-late", past) {
			t.Error("a reconciled attempt was settled again")
		}
		if got := record("k-late"); got != "failed" {
			t.Errorf("late settlement: record %s, want failed", got)
		}
		// One charge (on time), the late attempt refunded once.
		if bal := scalar(t, e, "SELECT balance FROM accounts WHERE id = ?", abi.String(acct)); bal != 90 {
			t.Errorf("balance %d, want 90", bal)
		}
	})
}

// Successful settlements without an Idempotency-Key that reach the writer
// together run as one merged statement on sqld (one by one on the embedded
// file), and each is told whether it charged its attempt: those still
// pending are charged once, those reconciled first stay failed and
// refunded, and the balance is the sum of the entries. On both backends.
func TestSettlementsTogetherChargeEachOnce(t *testing.T) {
	now := time.Unix(1_800_000_200, 0)
	eachBackend(t, func(t *testing.T, url string) {
		setup := openT(t, url)
		if err := setup.Migrate(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		run(t, setup, stmt(probeTable),
			stmt("INSERT INTO accounts (id, balance, created_at) VALUES (?, 100, 0)", abi.String(acct)),
			stmt("INSERT INTO credit_entries (account_id, delta, kind, created_at) VALUES (?, 100, 'grant', 0)", abi.String(acct)),
			stmt("INSERT INTO api_keys (id, account_id, name, prefix, secret_hash, created_at) VALUES ('key_1', ?, 'k', 'p', ?, 0)",
				abi.String(acct), abi.String(keyHash)))
		e := openMerging(t, url)
		l := e.Bind(testCtx(t))
		// Two attempts whose leases ran out, reconciled; then four on time.
		var ids []string
		for i, at := range []time.Time{now.Add(-2 * time.Minute), now.Add(-2 * time.Minute), now, now, now, now} {
			id := fmt.Sprintf("settle_%d", i)
			if i == 2 {
				if n, err := ledgerq.Reconcile(l, acct, now); err != nil || n != 2 {
					t.Fatalf("reconcile: %d, %v", n, err)
				}
			}
			if r, err := ledgerq.ReserveDecision(l, reserve(id, "", 10, at)); err != nil || r.Outcome != ledgerq.Reserved {
				t.Fatalf("reserve %s: %v, %v", id, r.Outcome, err)
			}
			ids = append(ids, id)
		}
		before := e.Stats()
		var (
			mu      sync.Mutex
			charged = map[string]bool{}
		)
		queueBehindLock(t, url, []*Executor{e}, len(ids), func(wg *sync.WaitGroup) {
			for _, id := range ids {
				wg.Go(func() {
					ok, err := ledgerq.SettleDecision(l, &ledgerq.Settle{RequestID: id, AccountID: acct, Cost: 10, OK: true, Status: 200,
						InputTokens: 3, OutputTokens: -1, Now: now})
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					charged[id] = ok
					mu.Unlock()
				})
			}
		})
		for i, id := range ids {
			wantState := map[bool]string{true: "succeeded", false: "failed"}[i >= 2]
			if charged[id] != (i >= 2) {
				t.Errorf("%s: told charged %v, want %v", id, charged[id], i >= 2)
			}
			row := query(t, setup, "SELECT state, COALESCE(charged, 0), COALESCE(input_tokens, -1), COALESCE(output_tokens, -1) FROM requests WHERE id = ?", abi.String(id))[0]
			if row[0].AsString() != wantState || (i >= 2) != (row[1].AsInt() == 10) {
				t.Errorf("%s: state %s charged %d, want %s", id, row[0].AsString(), row[1].AsInt(), wantState)
			}
			if i >= 2 && (row[2].AsInt() != 3 || row[3].AsInt() != -1) {
				t.Errorf("%s: tokens %d/%d, want 3/unknown", id, row[2].AsInt(), row[3].AsInt())
			}
		}
		balance := scalar(t, setup, "SELECT balance FROM accounts WHERE id = ?", abi.String(acct))
		if sum := scalar(t, setup, "SELECT SUM(delta) FROM credit_entries WHERE account_id = ?", abi.String(acct)); balance != 60 || sum != balance {
			t.Errorf("balance %d, entries %d, want 60 both", balance, sum)
		}
		want := int64(0)
		if !strings.HasPrefix(url, "file:") {
			want = int64(len(ids))
		}
		if got := e.Stats().Sub(before).Merged; got != want {
			t.Errorf("%d settlements ran merged, want %d", got, want)
		}
	})
}
