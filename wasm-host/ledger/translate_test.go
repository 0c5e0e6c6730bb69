package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/ledgerq"
	"decisiongateway/testkit/sqldtest"
)

const (
	acct    = "acct_1"
	keyHash = "hash_1"
)

func seedLedger(t *testing.T, e *Executor) {
	t.Helper()
	if err := e.Migrate(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	run(t, e,
		stmt("INSERT INTO accounts (id, balance, created_at) VALUES (?, 100, 0)", abi.String(acct)),
		stmt("INSERT INTO api_keys (id, account_id, name, prefix, secret_hash, created_at) VALUES ('key_1', ?, 'k', 'p', ?, 0)",
			abi.String(acct), abi.String(keyHash)))
}

func reserve(id, idem string, cost int64, now time.Time) *ledgerq.Reserve {
	return &ledgerq.Reserve{
		Principal: ledgerq.Principal{AccountID: acct, KeyHash: keyHash, IPHash: "ip", AuthLimit: 600},
		Source:    "api", RequestID: id, IdemKey: idem, Fingerprint: "fp", Model: "m",
		Questions: 1, Cost: cost, RateLimit: 100, TTL: time.Hour, Lease: time.Minute, Now: now,
	}
}

// The decision path's reservation batch (auth counter, key check, rate
// counter, stale check, idempotency claim, debit, …) costs one request on
// sqld, and so does its settlement: one WebSocket message each, or one HTTP
// pipeline request each where the server refuses the upgrade.
func TestRemoteBatchIsOneRequest(t *testing.T) {
	for _, transport := range []string{"websocket", "http"} {
		t.Run(transport, func(t *testing.T) {
			url, pipeline := sqldtest.CountingProxy(t, sqldtest.Start(t), 0)
			e := openT(t, url)
			if transport == "http" {
				e.hrana.wsURL = ""
			}
			seedLedger(t, e)
			l := e.Bind(testCtx(t))
			now := time.Unix(1_800_000_000, 0)
			// requests counts what reached the server: HTTP requests are
			// counted by the proxy, WebSocket messages by the client
			// (opening and seeding used the interactive path).
			pipeline.Store(0)
			start := e.Stats().RoundTrips
			requests := func() int64 {
				if transport == "http" {
					return pipeline.Swap(0)
				}
				if n := pipeline.Load(); n != 0 {
					t.Errorf("%d HTTP pipeline requests over WebSocket", n)
				}
				n := e.Stats().RoundTrips - start
				start = e.Stats().RoundTrips
				return n
			}

			b := batchOf(
				stmt("SELECT 1"),
				when(stmt("UPDATE accounts SET balance = balance - 1 WHERE id = ?", abi.String(acct)), abi.Cond{Step: 0, Test: abi.Truthy}),
				when(stmt("SELECT balance FROM accounts WHERE id = ?", abi.String(acct)), abi.Cond{Step: 1, Test: abi.Affected}),
			)
			if p, ok := translate([]*job{{steps: b.Steps, shapes: mustPlan(t, b)}}); !ok || p.begin < 0 {
				t.Fatal("a conditional batch was not translated")
			}
			requests()
			if res := e.Exec(testCtx(t), b); res.Err != "" || res.Steps[2].First().AsInt() != 99 {
				t.Fatalf("conditional batch: %+v", res)
			}
			if got := requests(); got != 1 {
				t.Errorf("conditional batch: %d requests, want 1", got)
			}

			r, err := ledgerq.ReserveDecision(l, reserve("req_1", "idem_1", 5, now))
			if err != nil || r.Outcome != ledgerq.Reserved {
				t.Fatalf("ReserveDecision: %+v, %v", r, err)
			}
			if got := requests(); got != 1 {
				t.Errorf("ReserveDecision: %d requests, want 1", got)
			}
			ok, err := ledgerq.SettleDecision(l, &ledgerq.Settle{RequestID: "req_1", AccountID: acct, IdemKey: "idem_1", Cost: 5,
				OK: true, Status: 200, InputTokens: 1, OutputTokens: 2, Retain: &ledgerq.Retained{RequestID: "req_1", Status: 200, Body: []byte("{}")}, Now: now})
			if err != nil || !ok {
				t.Fatalf("SettleDecision: %v, %v", ok, err)
			}
			if got := requests(); got != 1 {
				t.Errorf("SettleDecision: %d requests, want 1", got)
			}
		})
	}
}

// A server, or a proxy in front of it, that answers the WebSocket upgrade
// with an HTTP status gets every batch over the HTTP pipeline instead.
func TestRemoteWithoutWebSocketUsesHTTP(t *testing.T) {
	u, err := neturl.Parse(sqldtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	var upgrades, pipeline atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			upgrades.Add(1)
			http.NotFound(w, r)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/pipeline") {
			pipeline.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	e := openT(t, srv.URL)
	run(t, e, stmt("CREATE TABLE s (x)"), stmt("INSERT INTO s VALUES (1)"))
	run(t, e, stmt("INSERT INTO s VALUES (2)"), stmt("INSERT INTO s VALUES (3)"))
	if got := scalar(t, e, "SELECT sum(x) FROM s"); got != 6 {
		t.Errorf("sum %d, want 6", got)
	}
	if got := upgrades.Load(); got != 1 {
		t.Errorf("%d upgrade attempts, want 1 (then HTTP for good)", got)
	}
	if pipeline.Load() < 3 {
		t.Errorf("%d pipeline requests, want every batch over HTTP", pipeline.Load())
	}
}

// A WebSocket the server closed while the writer was idle (here: sqld was
// killed and started again) is noticed before the next batch is written to
// it, so that batch runs on a new connection instead of failing with an
// unknown outcome.
func TestRemoteDeadWebSocketIsReplaced(t *testing.T) {
	srv := sqldtest.StartServer(t)
	e := openT(t, srv.URL)
	run(t, e, stmt("CREATE TABLE s (x)"), stmt("INSERT INTO s VALUES (1)"))
	if e.hrana.ws == nil {
		t.Fatal("no WebSocket kept after a batch")
	}
	srv.Kill()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.hrana.ws.alive() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if res := e.Exec(testCtx(t), batchOf(stmt("INSERT INTO s VALUES (2)"), stmt("INSERT INTO s VALUES (3)"))); res.Err != "" {
		t.Fatalf("batch after the restart: %s", res.Err)
	}
	if got := scalar(t, e, "SELECT sum(x) FROM s"); got != 6 {
		t.Errorf("sum %d, want 6", got)
	}
}

func mustPlan(t *testing.T, b *abi.Batch) []shape {
	t.Helper()
	s, err := plan(b.Steps)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// twin runs every batch on two sqld databases with the same history, one
// through the one-request translation and one through the interactive
// transaction, and fails the test when their results differ in anything.
type twin struct {
	t                    *testing.T
	fast, slow           *Executor
	translated, batches  int
	wantTranslatedAlways bool
}

func newTwin(t *testing.T) *twin {
	fast, slow := openT(t, sqldtest.Start(t)), openT(t, sqldtest.Start(t))
	slow.hrana = nil // the interactive path
	return &twin{t: t, fast: fast, slow: slow}
}

func (w *twin) Exec(b *abi.Batch) (abi.BatchResult, error) {
	w.t.Helper()
	w.batches++
	if shapes, err := plan(b.Steps); err == nil {
		if _, ok := translate([]*job{{steps: b.Steps, shapes: shapes}}); ok {
			w.translated++
		} else if w.wantTranslatedAlways {
			w.t.Errorf("batch not translated: %s", describe(b))
		}
	}
	got := w.fast.Exec(testCtx(w.t), b)
	want := w.slow.Exec(testCtx(w.t), b)
	if !reflect.DeepEqual(got, want) {
		w.t.Errorf("batch %s\ntranslated:  %+v\ninteractive: %+v", describe(b), got, want)
	}
	return got, nil
}

func describe(b *abi.Batch) string {
	var sb strings.Builder
	for i, s := range b.Steps {
		fmt.Fprintf(&sb, "\n  %d %v %s", i, s.When, strings.Join(strings.Fields(s.SQL), " "))
	}
	return sb.String()
}

// The decision path's batches, in every outcome they have, give the same
// results through the translation as through the interactive transaction.
func TestTranslationMatchesInteractiveLedgerq(t *testing.T) {
	w := newTwin(t)
	w.wantTranslatedAlways = true
	for _, e := range []*Executor{w.fast, w.slow} {
		seedLedger(t, e)
	}
	now := time.Unix(1_800_000_000, 0)
	reserveAs := func(want ledgerq.Outcome, r *ledgerq.Reserve) {
		t.Helper()
		got, err := ledgerq.ReserveDecision(w, r)
		if err != nil || got.Outcome != want {
			t.Errorf("ReserveDecision(%s): outcome %v, %v; want %v", r.RequestID, got.Outcome, err, want)
		}
	}
	settle := func(s *ledgerq.Settle) {
		t.Helper()
		if _, err := ledgerq.SettleDecision(w, s); err != nil {
			t.Error(err)
		}
	}
	reserveAs(ledgerq.Reserved, reserve("r1", "k1", 10, now))
	reserveAs(ledgerq.InProgress, reserve("r2", "k1", 10, now))
	settle(&ledgerq.Settle{RequestID: "r1", AccountID: acct, IdemKey: "k1", Cost: 10, OK: true, Status: 200,
		InputTokens: -1, Retain: &ledgerq.Retained{RequestID: "r1", Status: 200, Body: []byte(`{"a":1}`), Mode: "m"}, Now: now})
	reserveAs(ledgerq.Replay, reserve("r3", "k1", 10, now))
	later := now.Add(time.Minute)
	limited := reserve("r4", "k1", 10, now)
	limited.RateLimit = 2
	reserveAs(ledgerq.RateLimited, limited)
	reserveAs(ledgerq.Insufficient, reserve("r5", "", 1000, later))
	reserveAs(ledgerq.Reserved, reserve("r6", "", 10, later))
	settle(&ledgerq.Settle{RequestID: "r6", AccountID: acct, Cost: 10, Status: 502, ErrorCode: "upstream", Now: later})
	settle(&ledgerq.Settle{RequestID: "r6", AccountID: acct, Cost: 10, Status: 502, ErrorCode: "upstream", Now: later}) // no longer pending
	reserveAs(ledgerq.Reserved, reserve("r7", "k7", 10, later))
	bad := reserve("r8", "", 10, later)
	bad.KeyHash = "nope"
	reserveAs(ledgerq.Unauthorized, bad)
	reserveAs(ledgerq.Reconciling, reserve("r9", "", 10, later.Add(5*time.Minute)))
	for _, account := range []string{acct, ""} {
		if _, err := ledgerq.Reconcile(w, account, later.Add(5*time.Minute)); err != nil {
			t.Error(err)
		}
	}
	reserveAs(ledgerq.FailedBefore, reserve("r10", "k7", 10, later.Add(6*time.Minute)))
	if _, _, err := ledgerq.AuthorizeKey(w, &ledgerq.Principal{AccountID: acct, KeyHash: keyHash, IPHash: "ip", AuthLimit: 600}, "models", 5, later); err != nil {
		t.Error(err)
	}
	var bal [2]int64
	for i, e := range []*Executor{w.fast, w.slow} {
		bal[i] = scalar(t, e, "SELECT balance FROM accounts WHERE id = ?", abi.String(acct))
	}
	if bal[0] != bal[1] || bal[0] != 90 {
		t.Errorf("balances %v, want 90 on both", bal)
	}
}

// Generic batches, including errors, truthiness by storage class, and the
// rows-affected and rowid rules, give the same results on both paths, and a
// failed batch commits nothing.
func TestTranslationMatchesInteractive(t *testing.T) {
	w := newTwin(t)
	exec := func(steps ...abi.Statement) abi.BatchResult {
		t.Helper()
		res, _ := w.Exec(batchOf(steps...))
		return res
	}
	exec(stmt("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE, n INTEGER NOT NULL DEFAULT 0 CHECK (n >= 0), at DATETIME, b BLOB)"))
	cells := []string{"1", "0", "-2", "0.5", "0.0", "'yes'", "''", "'0'", "'00'", "x'00'", "x''", "NULL"}
	for _, c := range cells {
		for _, test := range []abi.CondTest{abi.Truthy, abi.Falsy} {
			exec(stmt("SELECT "+c+" AS v"), when(stmt("SELECT 'ran'"), abi.Cond{Step: 0, Test: test}))
			exec(stmt("SELECT "+c+" AS v WHERE 0"), when(stmt("SELECT 'ran'"), abi.Cond{Step: 0, Test: test}))
		}
	}
	res := exec(
		stmt("INSERT INTO t (name, at, b) VALUES ('a', '2026-01-02 03:04:05', x'0102')"),
		when(stmt("INSERT INTO t (name) VALUES ('b')"), abi.Cond{Step: 0, Test: abi.Affected}),
		stmt("INSERT OR IGNORE INTO t (name) VALUES ('a')"),
		when(stmt("SELECT 'ignored'"), abi.Cond{Step: 2, Test: abi.NotAffected}),
		stmt("INSERT INTO t (name) VALUES ('c') ON CONFLICT (name) DO UPDATE SET n = n + 1 RETURNING n"),
		stmt("INSERT INTO t (name) VALUES ('c') ON CONFLICT (name) DO UPDATE SET n = n + 1 RETURNING n"),
		when(stmt("SELECT 'upserted'"), abi.Cond{Step: 5, Test: abi.Affected}),
		stmt("UPDATE t SET n = n + 1 WHERE name = 'zzz'"),
		when(stmt("UPDATE t SET n = 7 WHERE name = 'b'"), abi.Cond{Step: 7, Test: abi.NotAffected}, abi.Cond{Step: 3, Test: abi.Truthy}),
		when(stmt("DELETE FROM t WHERE name = 'c'"), abi.Cond{Step: 8, Test: abi.Affected}),
		stmt("SELECT * FROM t ORDER BY id"),
		when(stmt("SELECT 'select affects nothing'"), abi.Cond{Step: 10, Test: abi.NotAffected}),
		when(stmt("SELECT 'never'"), abi.Cond{Step: 10, Test: abi.Affected}),
		stmt("SELECT EXISTS (SELECT 1 FROM t WHERE name = ?)", abi.String("b")),
		when(stmt("UPDATE t SET n = n + 1 WHERE name = ?", abi.String("a")), abi.Cond{Step: 13, Test: abi.Truthy}),
		when(stmt("SELECT n <= ? FROM t WHERE name = ?", abi.Int64(1), abi.String("a")), abi.Cond{Step: 14, Test: abi.Affected}),
		when(stmt("SELECT 'limited'"), abi.Cond{Step: 15, Test: abi.Falsy}),
		when(stmt("SELECT 'skipped chain'"), abi.Cond{Step: 12, Test: abi.Truthy}),
		when(stmt("SELECT 'after skipped'"), abi.Cond{Step: 17, Test: abi.Falsy}, abi.Cond{Step: 17, Test: abi.NotAffected}),
	)
	if res.Err != "" || len(res.Steps) != 19 || !res.Steps[18].Executed || res.Steps[12].Executed {
		t.Errorf("mixed batch: %+v", res)
	}

	// An error after writes: nothing of the batch stays, on either path.
	before := scalar(t, w.fast, "SELECT count(*) FROM t")
	for _, failing := range []string{
		"UPDATE t SET n = -1 WHERE name = 'a'",          // CHECK constraint
		"INSERT OR ROLLBACK INTO t (name) VALUES ('a')", // ends the transaction itself
		"SELECT * FROM missing",                         // prepare error
	} {
		res := exec(
			stmt("INSERT INTO t (name) VALUES ('doomed')"),
			stmt(failing),
			stmt("INSERT INTO t (name) VALUES ('after')"),
		)
		if res.Err == "" || len(res.Steps) != 0 {
			t.Errorf("%s: %+v, want an error", failing, res)
		}
		for _, e := range []*Executor{w.fast, w.slow} {
			if got := scalar(t, e, "SELECT count(*) FROM t"); got != before {
				t.Errorf("%s: %d rows after a failed batch, want %d", failing, got, before)
			}
		}
	}
	res = exec(stmt("INSERT INTO t (name) VALUES ('a')"))
	if !strings.Contains(res.Err, "UNIQUE") {
		t.Errorf("lone failing statement: %+v", res)
	}
	if w.translated < w.batches-2 {
		t.Errorf("%d of %d batches translated", w.translated, w.batches)
	}
}

// Group commit still isolates a failing batch: the others commit once.
func TestRemoteGroupCommitIsolatesFailure(t *testing.T) {
	e := openT(t, sqldtest.Start(t))
	run(t, e, stmt("CREATE TABLE g (k TEXT PRIMARY KEY)"))
	group := []*job{}
	for i, k := range []string{"a", "b", "a", "c"} {
		b := batchOf(stmt("INSERT INTO g VALUES (?)", abi.String(k)), stmt("SELECT count(*) FROM g"))
		group = append(group, &job{ctx: context.Background(), steps: b.Steps, shapes: mustPlan(t, b), done: make(chan struct{})})
		group[i].state.Store(jobTaken)
	}
	e.commit(group)
	for i, j := range group {
		<-j.done
		if (j.res.Err != "") != (i == 2) {
			t.Errorf("batch %d: %+v", i, j.res)
		}
	}
	if n := scalar(t, e, "SELECT count(*) FROM g"); n != 3 {
		t.Errorf("%d rows, want 3", n)
	}
}

// TestScalarSelect: which reads may be evaluated again as a guard. The
// cases are shared with the Workers shim's scalarSelect (wrangler-compat,
// test/shim.test.mjs); "SELECT a * 2 FROM t" is refused from caution (a *
// before FROM).
func TestScalarSelect(t *testing.T) {
	b, err := os.ReadFile("testdata/scalar-select.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases map[string]bool
	if err := json.Unmarshal(b, &cases); err != nil || len(cases) == 0 {
		t.Fatalf("testdata/scalar-select.json: %v", err)
	}
	for sql, want := range cases {
		s, err := classify(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if got := scalarSelect(sql, s); got != want {
			t.Errorf("scalarSelect(%q) = %v, want %v", sql, got, want)
		}
	}
}

// A kept HTTP stream that the server no longer knows (expired, or the
// server restarted) costs one more request, not a failed batch.
func TestRemoteStaleStreamIsReplaced(t *testing.T) {
	url, n := sqldtest.CountingProxy(t, sqldtest.Start(t), 0)
	e := openT(t, url)
	e.hrana.wsURL = "" // the HTTP pipeline's kept stream
	run(t, e, stmt("CREATE TABLE s (x)"), stmt("INSERT INTO s VALUES (1)"))
	if e.hrana.baton == "" {
		t.Fatal("no stream kept after a batch")
	}
	e.hrana.baton = "bogus" + e.hrana.baton
	n.Store(0)
	if got := scalar(t, e, "SELECT count(*) FROM s"); got != 1 {
		t.Errorf("count %d, want 1", got)
	}
	if got := n.Load(); got != 2 {
		t.Errorf("%d requests, want 2 (refused, then a new stream)", got)
	}
}

// A step that ends the transaction by itself (INSERT OR ROLLBACK on a
// conflict) must stop every later step, wherever it falls against the
// translation's checkpoints: statements after it would otherwise commit one
// by one outside any transaction.
func TestFailureEndingTheTransactionStopsLaterSteps(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		run(t, e, stmt("CREATE TABLE r (k INTEGER PRIMARY KEY)"))
		n := 3*checkpointEvery + 2
		for _, at := range []int{1, checkpointEvery - 1, checkpointEvery, checkpointEvery + 1, 2 * checkpointEvery, n - 1} {
			t.Run(fmt.Sprint(at), func(t *testing.T) {
				var steps []abi.Statement
				for i := 0; i < n; i++ {
					k := int64(at*1000 + i)
					if i == at {
						k = int64(at * 1000) // the first step's key again
					}
					s := stmt("INSERT OR ROLLBACK INTO r (k) VALUES (?)", abi.Int64(k))
					if i%3 == 2 {
						// Conditional steps too: a true test on an earlier one.
						s = when(s, abi.Cond{Step: i - 1, Test: abi.Affected})
					}
					steps = append(steps, s)
				}
				res := e.Exec(testCtx(t), &abi.Batch{Steps: steps})
				if want := fmt.Sprintf("ledger: step %d: ", at); !strings.HasPrefix(res.Err, want) {
					t.Errorf("error %q, want one naming step %d", res.Err, at)
				}
				if c := scalar(t, e, "SELECT count(*) FROM r"); c != 0 {
					t.Errorf("%d rows committed by a failed batch", c)
				}
			})
		}
	})
}
