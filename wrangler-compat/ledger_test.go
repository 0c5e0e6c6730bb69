//go:build linux

package wranglercompat_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/sqldtest"
	"decisiongateway/testkit/testenv"
	"decisiongateway/wasm-host/ledger"
)

// execJS runs batches through src/ledger.js (under Node, with its fetch)
// against the libSQL server at url and returns the decoded results. With
// parallel, all batches are in flight at once.
func execJS(t testing.TB, url string, parallel bool, batches ...abi.Batch) []abi.BatchResult {
	t.Helper()
	var in strings.Builder
	for i := range batches {
		in.WriteString(hex.EncodeToString(abi.AppendBatch(nil, &batches[i])))
		in.WriteByte('\n')
	}
	args := []string{"test/ledger-driver.mjs", url}
	if parallel {
		args = append(args, "--parallel")
	}
	lines := strings.Split(strings.TrimSpace(runNode(t, in.String(), args...)), "\n")
	if len(lines) != len(batches) {
		t.Fatalf("driver answered %d results for %d batches", len(lines), len(batches))
	}
	out := make([]abi.BatchResult, len(lines))
	for i, line := range lines {
		b, err := hex.DecodeString(line)
		if err != nil {
			t.Fatalf("result %d: %v", i, err)
		}
		if out[i], err = abi.DecodeBatchResult(b); err != nil {
			t.Fatalf("result %d does not decode with shared/abi: %v", i, err)
		}
	}
	return out
}

func one(t testing.TB, url string, steps ...abi.Statement) abi.BatchResult {
	t.Helper()
	return execJS(t, url, false, abi.Batch{Steps: steps})[0]
}

func mustOK(t testing.TB, r abi.BatchResult) abi.BatchResult {
	t.Helper()
	if r.Err != "" {
		t.Fatalf("batch failed: %s", r.Err)
	}
	return r
}

func count(t *testing.T, url, table string) int64 {
	t.Helper()
	r := mustOK(t, one(t, url, abi.Statement{SQL: "SELECT count(*) FROM " + table}))
	return r.Steps[0].First().AsInt()
}

// TestLedgerOverHrana checks src/ledger.js against a real sqld: the batch
// semantics of schema/abi.md (atomicity, conditions on earlier results,
// rows affected and rowids) and the conversion of every value kind through
// Hrana's JSON, with results decoded by the Go reference decoder.
func TestLedgerOverHrana(t *testing.T) {
	nodeBin(t)
	url := sqldtest.Start(t)
	mustOK(t, one(t, url,
		abi.Statement{SQL: "CREATE TABLE kv (k TEXT PRIMARY KEY, v)"},
		abi.Statement{SQL: "CREATE TABLE counter (n INTEGER NOT NULL CHECK (n >= 0))"},
		abi.Statement{SQL: "INSERT INTO counter VALUES (1)"},
	))

	t.Run("values survive the round trip", func(t *testing.T) {
		vals := []abi.Value{
			abi.NullValue(), abi.Int64(math.MaxInt64), abi.Int64(math.MinInt64), abi.Int64(-42),
			abi.Float64(2.5), abi.String("naïve ☃ \"q\""), abi.String(""), abi.Bytes([]byte{0, 1, 254, 255}),
		}
		var steps []abi.Statement
		for i, v := range vals {
			steps = append(steps, abi.Statement{SQL: "INSERT INTO kv VALUES (?, ?)", Args: []abi.Value{abi.String(fmt.Sprint("v", i)), v}})
		}
		steps = append(steps, abi.Statement{SQL: "SELECT v FROM kv WHERE k LIKE 'v%' ORDER BY rowid"})
		r := mustOK(t, one(t, url, steps...))
		sel := r.Steps[len(vals)]
		if !reflect.DeepEqual(sel.Columns, []string{"v"}) || len(sel.Rows) != len(vals) {
			t.Fatalf("select: columns %v, %d rows", sel.Columns, len(sel.Rows))
		}
		for i, v := range vals {
			got := sel.Rows[i][0]
			if v.Kind == abi.Blob && len(v.Bytes) == 0 {
				v.Bytes = nil
			}
			if got.Kind == abi.Blob && len(got.Bytes) == 0 {
				got.Bytes = nil
			}
			if !reflect.DeepEqual(got, v) {
				t.Errorf("value %d: got %+v, want %+v", i, got, v)
			}
		}
		first := r.Steps[0]
		if !first.Executed || first.RowsAffected != 1 || first.LastInsertID == 0 {
			t.Errorf("insert step: %+v, want executed, 1 row, a rowid", first)
		}
	})

	t.Run("conditions see earlier results", func(t *testing.T) {
		r := mustOK(t, one(t, url,
			// 0: changes nothing, the key does not exist.
			abi.Statement{SQL: "UPDATE kv SET v = 1 WHERE k = 'cond'"},
			// 1: runs because 0 affected no row.
			abi.Statement{SQL: "INSERT INTO kv VALUES ('cond', 0)", When: []abi.Cond{{Step: 0, Test: abi.NotAffected}}},
			// 2: skipped because 0 affected no row.
			abi.Statement{SQL: "DELETE FROM kv WHERE k = 'cond'", When: []abi.Cond{{Step: 0, Test: abi.Affected}}},
			// 3: reads 0, a falsy cell.
			abi.Statement{SQL: "SELECT v FROM kv WHERE k = 'cond'"},
			// 4: runs: 3 is falsy and 1 affected a row (two rounds back).
			abi.Statement{SQL: "UPDATE kv SET v = 7 WHERE k = 'cond'", When: []abi.Cond{{Step: 3, Test: abi.Falsy}, {Step: 1, Test: abi.Affected}}},
			// 5: skipped: 3 is not truthy.
			abi.Statement{SQL: "UPDATE kv SET v = 99 WHERE k = 'cond'", When: []abi.Cond{{Step: 3, Test: abi.Truthy}}},
			// 6: runs: 2 was skipped, which counts as not affected and falsy.
			abi.Statement{SQL: "SELECT v FROM kv WHERE k = 'cond'", When: []abi.Cond{{Step: 2, Test: abi.NotAffected}, {Step: 2, Test: abi.Falsy}}},
		))
		executed := make([]bool, len(r.Steps))
		for i, s := range r.Steps {
			executed[i] = s.Executed
		}
		if want := []bool{true, true, false, true, true, false, true}; !reflect.DeepEqual(executed, want) {
			t.Fatalf("executed = %v, want %v", executed, want)
		}
		if s := r.Steps[2]; s.RowsAffected != 0 || s.Rows != nil {
			t.Errorf("skipped step reports %+v", s)
		}
		if got := r.Steps[6].First().AsInt(); got != 7 {
			t.Errorf("final value %d, want 7", got)
		}
	})

	t.Run("steps report what the wazero host reports", func(t *testing.T) {
		r := mustOK(t, one(t, url,
			abi.Statement{SQL: "INSERT INTO kv VALUES ('report', 1)"},
			abi.Statement{SQL: "UPDATE kv SET v = v + 1 WHERE k = 'report'"},
			// A SELECT right after a change reports 0 rows affected, not the
			// connection's last change count.
			abi.Statement{SQL: "SELECT v FROM kv WHERE k = 'report'"},
			abi.Statement{SQL: "INSERT OR IGNORE INTO kv VALUES ('report', 5)"},
			abi.Statement{SQL: "UPDATE kv SET v = 10 WHERE k IN ('report', 'cond') RETURNING k"},
		))
		type report struct {
			affected, rowid int64
			cols, rows      int
		}
		var got []report
		for _, s := range r.Steps {
			got = append(got, report{s.RowsAffected, s.LastInsertID, len(s.Columns), len(s.Rows)})
		}
		rowid := r.Steps[0].LastInsertID
		want := []report{{1, rowid, 0, 0}, {1, 0, 0, 0}, {0, 0, 1, 1}, {0, 0, 0, 0}, {2, 0, 1, 2}}
		if rowid <= 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("steps report %+v, want %+v", got, want)
		}
	})

	t.Run("batches the wazero host refuses are refused alike", func(t *testing.T) {
		cases := []struct {
			step abi.Statement
			err  string
		}{
			{abi.Statement{SQL: "COMMIT"}, "ledger: step 1: malformed statement: COMMIT: the executor owns the transaction"},
			{abi.Statement{SQL: "SELECT 1; SELECT 2"}, "ledger: step 1: malformed statement: more than one statement in a step"},
			{abi.Statement{SQL: "SELECT :name"}, "ledger: step 1: malformed statement: parameter :name: use positional ? parameters"},
			{abi.Statement{SQL: "SELECT ?, ?", Args: []abi.Value{abi.Int64(1)}}, "ledger: step 1: 2 ? parameters but 1 arguments"},
			{abi.Statement{SQL: "SELECT 1", When: []abi.Cond{{Step: 1, Test: abi.Affected}}}, "ledger: step 1: condition on step 1, which is not an earlier step"},
			{abi.Statement{SQL: "SELECT ';' -- ;\n"}, ""},
		}
		var batches []abi.Batch
		for _, c := range cases {
			batches = append(batches, abi.Batch{Steps: []abi.Statement{{SQL: "INSERT INTO kv VALUES ('refused', 1)"}, c.step}})
		}
		for i, r := range execJS(t, url, false, batches...) {
			if r.Err != cases[i].err {
				t.Errorf("%q: error %q, want %q", cases[i].step.SQL, r.Err, cases[i].err)
			}
		}
		mustOK(t, one(t, url, abi.Statement{SQL: "DELETE FROM kv WHERE k = 'refused'"}))
	})

	t.Run("an error rolls back every step", func(t *testing.T) {
		before := count(t, url, "kv")
		r := one(t, url,
			abi.Statement{SQL: "INSERT INTO kv VALUES ('rolled-back-1', 1)"},
			abi.Statement{SQL: "SELECT 1"},
			// Needs a second round (it depends on step 1), so the rollback
			// spans an HTTP round trip.
			abi.Statement{SQL: "INSERT INTO kv VALUES ('rolled-back-2', 1)", When: []abi.Cond{{Step: 1, Test: abi.Truthy}}},
			abi.Statement{SQL: "UPDATE counter SET n = n - 5"}, // violates the CHECK
		)
		if r.Err == "" || len(r.Steps) != 0 {
			t.Fatalf("result %+v, want an error and no steps", r)
		}
		if !strings.HasPrefix(r.Err, "ledger: step 3: ") || !strings.Contains(r.Err, "CHECK") {
			t.Errorf("error %q does not name the failed constraint", r.Err)
		}
		if after := count(t, url, "kv"); after != before {
			t.Errorf("rows went from %d to %d: the failed batch was partly committed", before, after)
		}
	})

	t.Run("concurrent writers all commit", func(t *testing.T) {
		const n = 12
		batches := make([]abi.Batch, n)
		for i := range batches {
			batches[i] = abi.Batch{Steps: []abi.Statement{
				{SQL: "SELECT n FROM counter"},
				{SQL: "UPDATE counter SET n = n + 1", When: []abi.Cond{{Step: 0, Test: abi.Truthy}}},
			}}
		}
		before := mustOK(t, one(t, url, abi.Statement{SQL: "SELECT n FROM counter"})).Steps[0].First().AsInt()
		for i, r := range execJS(t, url, true, batches...) {
			if r.Err != "" {
				t.Errorf("batch %d: %s", i, r.Err)
			} else if !r.Steps[1].Executed || r.Steps[1].RowsAffected != 1 {
				t.Errorf("batch %d: update %+v", i, r.Steps[1])
			}
		}
		after := mustOK(t, one(t, url, abi.Statement{SQL: "SELECT n FROM counter"})).Steps[0].First().AsInt()
		if after != before+n {
			t.Errorf("counter went from %d to %d, want +%d: a read-then-write batch was not atomic", before, after, n)
		}
	})

	t.Run("libsql URL with tls=0", func(t *testing.T) {
		libsqlURL := strings.Replace(url, "http://", "libsql://", 1) + "?tls=0"
		r := mustOK(t, one(t, libsqlURL, abi.Statement{SQL: "SELECT 1"}))
		if r.Steps[0].First().AsInt() != 1 {
			t.Errorf("SELECT 1 gave %+v", r.Steps[0])
		}
	})

	t.Run("unreachable ledger is an error, not a crash", func(t *testing.T) {
		r := one(t, "http://"+testenv.FreeAddr(t), abi.Statement{SQL: "SELECT 1"})
		if r.Err == "" {
			t.Errorf("result %+v, want an error", r)
		}
	})
}

// TestLedgerMatchesWazeroExecutor runs one sequence of batches through the
// wazero host's executor (wasm-host/ledger) and through src/ledger.js, each
// on its own fresh sqld, and requires identical BatchResults: same steps
// run, same rows, counts, rowids and error texts.
func TestLedgerMatchesWazeroExecutor(t *testing.T) {
	nodeBin(t)
	goURL, jsURL := sqldtest.Start(t), sqldtest.Start(t)
	exec, err := ledger.Open(context.Background(), goURL, "")
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Close()

	s := func(sql string, args ...abi.Value) abi.Statement { return abi.Statement{SQL: sql, Args: args} }
	when := func(st abi.Statement, conds ...abi.Cond) abi.Statement { st.When = conds; return st }
	batches := []abi.Batch{
		{Steps: []abi.Statement{
			s("CREATE TABLE acct (id INTEGER PRIMARY KEY, email TEXT UNIQUE, balance INTEGER NOT NULL CHECK (balance >= 0), note BLOB, ratio REAL)"),
			s("INSERT INTO acct (email, balance, note, ratio) VALUES (?, ?, ?, ?)", abi.String("a@example.test"), abi.Int64(100), abi.Bytes([]byte{1, 2}), abi.Float64(0.25)),
			s("INSERT INTO acct (email, balance) VALUES (?, ?)", abi.String("b@example.test"), abi.Int64(0)),
		}},
		{Steps: []abi.Statement{
			s("SELECT id, email, balance, note, ratio FROM acct ORDER BY id"),
			s("SELECT balance >= ? FROM acct WHERE email = ?", abi.Int64(30), abi.String("a@example.test")),
			when(s("UPDATE acct SET balance = balance - 30 WHERE email = ?", abi.String("a@example.test")), abi.Cond{Step: 1, Test: abi.Truthy}),
			when(s("UPDATE acct SET balance = balance + 30 WHERE email = ?", abi.String("b@example.test")), abi.Cond{Step: 2, Test: abi.Affected}),
			when(s("INSERT INTO acct (email, balance) VALUES ('never', 0)"), abi.Cond{Step: 2, Test: abi.NotAffected}),
			s("SELECT email, balance FROM acct ORDER BY id"),
		}},
		{Steps: []abi.Statement{
			s("INSERT OR IGNORE INTO acct (email, balance) VALUES ('a@example.test', 1)"),
			s("UPDATE acct SET balance = balance + 1 RETURNING id, balance"),
			s("DELETE FROM acct WHERE email = 'nobody'"),
			s("WITH t(x) AS (VALUES (1), (2)) SELECT sum(x) FROM t"),
		}},
		// Refused before it runs.
		{Steps: []abi.Statement{s("SELECT 1"), s("ROLLBACK")}},
		{Steps: []abi.Statement{s("SELECT ?"), when(s("SELECT 2"), abi.Cond{Step: 3, Test: abi.Falsy})}},
		// Fails at a step, in the second round, and leaves nothing behind.
		{Steps: []abi.Statement{
			s("UPDATE acct SET balance = balance + 1000"),
			when(s("UPDATE acct SET balance = balance - 5000 WHERE email = 'b@example.test'"), abi.Cond{Step: 0, Test: abi.Affected}),
		}},
		{Steps: []abi.Statement{s("INSERT INTO acct (email, balance) VALUES ('a@example.test', 1)")}},
		{Steps: []abi.Statement{s("SELECT * FROM no_such_table")}},
		{Steps: []abi.Statement{s("SELECT email, balance FROM acct ORDER BY id")}},
		{},
	}

	js := execJS(t, jsURL, false, batches...)
	for i := range batches {
		want := exec.Exec(context.Background(), &batches[i])
		if !reflect.DeepEqual(normalize(js[i]), normalize(want)) {
			t.Errorf("batch %d:\n js: %+v\n go: %+v", i, js[i], want)
		}
	}
}

// normalize makes empty and nil slices compare equal: the wire format does
// not tell them apart.
func normalize(r abi.BatchResult) abi.BatchResult {
	if len(r.Steps) == 0 {
		r.Steps = nil
	}
	for i := range r.Steps {
		s := &r.Steps[i]
		if len(s.Columns) == 0 {
			s.Columns = nil
		}
		if len(s.Rows) == 0 {
			s.Rows = nil
		}
		for _, row := range s.Rows {
			for k := range row {
				if row[k].Kind == abi.Blob && len(row[k].Bytes) == 0 {
					row[k].Bytes = nil
				}
			}
		}
	}
	return r
}

// TestLedgerBatchIsOneRequest: a batch whose conditions look at rows
// changed and at a one-column read goes to sqld as one HTTP request,
// BEGIN IMMEDIATE to COMMIT, so the write lock is never held across round
// trips; it gives the results the rounds gave. A test the translation
// cannot express exactly (the truth of a two-column read) still takes the
// rounds, and is as right. Requests are counted by a proxy before sqld.
func TestLedgerBatchIsOneRequest(t *testing.T) {
	nodeBin(t)
	url := accountLedger(t, 10)
	proxy, requests := sqldtest.CountingProxy(t, url, 0)

	// As a reservation: a debit that may change no row, an entry only if it
	// did, the balance read only if it did not; then the same with the
	// balance too low, where the debit changes nothing.
	reserve := func(cost int64) abi.Batch {
		return abi.Batch{Steps: []abi.Statement{
			{SQL: "SELECT count(*) FROM acct WHERE id = ?", Args: []abi.Value{abi.String("a")}},
			{SQL: "UPDATE acct SET balance = balance - ? WHERE id = ? AND balance >= ?", Args: []abi.Value{abi.Int64(cost), abi.String("a"), abi.Int64(cost)},
				When: []abi.Cond{{Step: 0, Test: abi.Truthy}}},
			{SQL: "SELECT balance FROM acct WHERE id = ?", Args: []abi.Value{abi.String("a")}, When: []abi.Cond{{Step: 1, Test: abi.Affected}}},
			{SQL: "SELECT balance FROM acct WHERE id = ?", Args: []abi.Value{abi.String("a")}, When: []abi.Cond{{Step: 1, Test: abi.NotAffected}}},
		}}
	}
	before := requests.Load()
	rs := execJS(t, proxy, false, reserve(4), reserve(40))
	if got := requests.Load() - before; got != 2 {
		t.Errorf("2 conditional batches took %d requests, want one each", got)
	}
	ran := func(r abi.BatchResult) (out []bool) {
		for _, s := range r.Steps {
			out = append(out, s.Executed)
		}
		return out
	}
	if r := mustOK(t, rs[0]); !reflect.DeepEqual(ran(r), []bool{true, true, true, false}) || r.Steps[1].RowsAffected != 1 || r.Steps[2].First().AsInt() != 6 {
		t.Errorf("debit of 4: ran %v, %+v", ran(r), r.Steps)
	}
	if r := mustOK(t, rs[1]); !reflect.DeepEqual(ran(r), []bool{true, true, false, true}) || r.Steps[1].RowsAffected != 0 || r.Steps[3].First().AsInt() != 6 {
		t.Errorf("debit of 40: ran %v, %+v", ran(r), r.Steps)
	}

	// An error in a step rolls the whole batch back, in one request too.
	before = requests.Load()
	r := one(t, proxy,
		abi.Statement{SQL: "UPDATE acct SET balance = balance - 1 WHERE id = 'a'"},
		abi.Statement{SQL: "UPDATE acct SET balance = balance - 100 WHERE id = 'a'", When: []abi.Cond{{Step: 0, Test: abi.Affected}}},
	)
	if got := requests.Load() - before; got != 1 || !strings.HasPrefix(r.Err, "ledger: step 1: ") || !strings.Contains(r.Err, "CHECK") {
		t.Errorf("failing batch: %d requests, error %q", got, r.Err)
	}
	if b := mustOK(t, one(t, url, abi.Statement{SQL: "SELECT balance FROM acct WHERE id = 'a'"})).Steps[0].First().AsInt(); b != 6 {
		t.Errorf("balance %d after the failed batch, want 6 (its first step rolled back)", b)
	}

	// A lone statement runs without a transaction: a read goes through while
	// another connection holds the write lock (BEGIN IMMEDIATE would have
	// met it and backed off until it gave up).
	release := holdWriteLock(t, url)
	r = one(t, proxy, abi.Statement{SQL: "SELECT balance FROM acct WHERE id = 'a'"})
	release()
	if r.Err != "" || r.Steps[0].First().AsInt() != 6 {
		t.Errorf("lone read under another writer's lock: %+v", r)
	}

	// The truth of a two-column read cannot be a guard: rounds.
	before = requests.Load()
	r = mustOK(t, one(t, proxy,
		abi.Statement{SQL: "SELECT balance, id FROM acct WHERE id = 'a'"},
		abi.Statement{SQL: "UPDATE acct SET balance = balance + 1 WHERE id = 'a'", When: []abi.Cond{{Step: 0, Test: abi.Truthy}}},
	))
	if got := requests.Load() - before; got < 2 || !r.Steps[1].Executed || r.Steps[1].RowsAffected != 1 {
		t.Errorf("untranslatable batch: %d requests, steps %+v", got, r.Steps)
	}
}

// BenchmarkLedgerFarAway runs 50 batches of one isolate at once, each a
// reservation's shape (a debit, an entry only if it debited, the balance
// only if not), against a ledger 20 ms away, as Turso is from a Worker: a
// proxy before sqld delays every request. ms/burst is from the first batch
// sent to the last answered (Node's start included); requests/batch counts
// the Hrana requests.
//
//	go test ./wrangler-compat -run '^$' -bench LedgerFarAway -benchtime 3x
func BenchmarkLedgerFarAway(b *testing.B) {
	nodeBin(b)
	url := accountLedger(b, 1000000)
	far, requests := sqldtest.CountingProxy(b, url, 20*time.Millisecond)
	const n = 50
	batches := make([]abi.Batch, n)
	for i := range batches {
		batches[i] = abi.Batch{Steps: []abi.Statement{
			{SQL: "UPDATE acct SET balance = balance - 1 WHERE id = 'a' AND balance >= 1 RETURNING balance"},
			{SQL: "INSERT INTO entries (acct, delta) VALUES ('a', -1)", When: []abi.Cond{{Step: 0, Test: abi.Affected}}},
			{SQL: "SELECT balance FROM acct WHERE id = 'a'", When: []abi.Cond{{Step: 0, Test: abi.NotAffected}}},
		}}
	}
	var elapsed time.Duration
	before := requests.Load()
	for b.Loop() {
		start := time.Now()
		for i, r := range execJS(b, far, true, batches...) {
			if r.Err != "" {
				b.Fatalf("batch %d: %s", i, r.Err)
			}
		}
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(elapsed.Milliseconds())/float64(b.N), "ms/burst")
	b.ReportMetric(float64(requests.Load()-before)/float64(b.N*n), "requests/batch")
}

// holdWriteLock opens a Hrana stream on the server at url that takes the
// write lock (BEGIN IMMEDIATE) and keeps it until release is called.
func holdWriteLock(t *testing.T, url string) (release func()) {
	t.Helper()
	post := func(body string) string {
		resp, err := http.Post(url+"/v2/pipeline", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Baton   *string `json:"baton"`
			Results []struct {
				Type string `json:"type"`
			} `json:"results"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Results) == 0 || out.Results[0].Type != "ok" {
			t.Fatalf("pipeline %s: %v %+v", body, err, out)
		}
		if out.Baton == nil {
			return ""
		}
		return *out.Baton
	}
	baton := post(`{"baton":null,"requests":[{"type":"execute","stmt":{"sql":"BEGIN IMMEDIATE"}}]}`)
	return func() {
		post(`{"baton":"` + baton + `","requests":[{"type":"execute","stmt":{"sql":"ROLLBACK"}},{"type":"close"}]}`)
	}
}

// accountLedger starts a sqld holding account 'a' with balance, and an
// entries table for what debits it.
func accountLedger(t testing.TB, balance int64) string {
	t.Helper()
	url := sqldtest.Start(t)
	mustOK(t, one(t, url,
		abi.Statement{SQL: "CREATE TABLE acct (id TEXT PRIMARY KEY, balance INTEGER NOT NULL CHECK (balance >= 0))"},
		abi.Statement{SQL: "CREATE TABLE entries (id INTEGER PRIMARY KEY, acct TEXT, delta INTEGER)"},
		abi.Statement{SQL: "INSERT INTO acct VALUES ('a', ?)", Args: []abi.Value{abi.Int64(balance)}},
	))
	return url
}
