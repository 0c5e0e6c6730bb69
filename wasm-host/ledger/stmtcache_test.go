package ledger

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"testing"

	"decisiongateway/shared/abi"
)

func openEmbedded(t *testing.T, tune tuning) *Executor {
	t.Helper()
	e, err := open(testCtx(t), "file:"+filepath.Join(t.TempDir(), "ledger.db"), "", Options{Create: true}, tune)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// The embedded writer compiles each SQL text once; later batches with the
// same text, BEGIN and COMMIT included, only bind and run it.
func TestPreparedStatementsAreReused(t *testing.T) {
	e := openEmbedded(t, defaultTuning())
	run(t, e, stmt("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"))
	batch := func(i int) []abi.StepResult {
		return run(t, e,
			stmt("INSERT INTO t (v) VALUES (?)", abi.String(fmt.Sprint(i))),
			stmt("SELECT count(*), max(v) FROM t"),
		)
	}
	first := e.Stats()
	batch(1)
	compiled := e.Stats().Sub(first).Prepared
	if compiled != 4 {
		t.Errorf("first batch compiled %d statements, want 4 (BEGIN, 2 steps, COMMIT)", compiled)
	}
	again := e.Stats()
	for i := 2; i <= 5; i++ {
		steps := batch(i)
		if n, v := steps[1].First().AsInt(), steps[1].Rows[0][1].AsString(); n != int64(i) || v != fmt.Sprint(i) {
			t.Errorf("batch %d read count %d, max %q", i, n, v)
		}
	}
	if n := e.Stats().Sub(again).Prepared; n != 0 {
		t.Errorf("repeated batches compiled %d statements, want 0", n)
	}
}

// A kept statement still follows the schema: SQLite recompiles it when a
// table it reads has changed.
func TestPreparedStatementSeesSchemaChange(t *testing.T) {
	e := openEmbedded(t, defaultTuning())
	run(t, e, stmt("CREATE TABLE t (a INTEGER)"), stmt("INSERT INTO t VALUES (1)"))
	if cols := run(t, e, stmt("SELECT * FROM t"))[0].Columns; len(cols) != 1 {
		t.Fatalf("columns %v", cols)
	}
	run(t, e, stmt("ALTER TABLE t ADD COLUMN b TEXT DEFAULT 'x'"))
	res := run(t, e, stmt("SELECT * FROM t"))[0]
	if len(res.Columns) != 2 || res.Rows[0][1].AsString() != "x" {
		t.Errorf("after ALTER TABLE: columns %v rows %v", res.Columns, res.Rows)
	}
}

// A statement that failed (a constraint, here) is reset and can run again;
// and a failed batch leaves nothing behind for the next one.
func TestPreparedStatementAfterError(t *testing.T) {
	e := openEmbedded(t, defaultTuning())
	run(t, e, stmt("CREATE TABLE t (k TEXT PRIMARY KEY)"))
	insert := "INSERT INTO t VALUES (?)"
	run(t, e, stmt(insert, abi.String("a")))
	res := e.Exec(testCtx(t), batchOf(stmt("SELECT 1"), stmt(insert, abi.String("a"))))
	if res.Err == "" {
		t.Fatal("duplicate key accepted")
	}
	run(t, e, stmt("SELECT 1"), stmt(insert, abi.String("b")))
	if n := scalar(t, e, "SELECT count(*) FROM t"); n != 2 {
		t.Errorf("%d rows, want 2", n)
	}
}

// The cache is bounded: past its size the least recently used statement is
// finalized, and one evicted is compiled again when it comes back.
func TestStatementCacheIsBounded(t *testing.T) {
	connector, _, err := embeddedConnector("file:"+filepath.Join(t.TempDir(), "ledger.db"), true)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	conn, err := db.Conn(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		c := newStmtCache(dc.(driver.ConnPrepareContext), 3)
		defer c.close()
		get := func(sql string) bool {
			st, fresh, err := c.get(testCtx(t), sql)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := st.QueryContext(testCtx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := collect(rows); err != nil {
				t.Fatal(err)
			}
			return fresh
		}
		for _, q := range []string{"SELECT 1", "SELECT 2", "SELECT 3", "SELECT 1", "SELECT 4"} {
			get(q)
		}
		if c.len() != 3 {
			t.Errorf("cache holds %d statements, want 3", c.len())
		}
		if get("SELECT 1") {
			t.Error("SELECT 1, used recently, was evicted")
		}
		if !get("SELECT 2") {
			t.Error("SELECT 2, the least recently used, was kept")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// With the cache off every statement is compiled, as before the cache; the
// benchmarks use this as their baseline.
func TestStatementCacheOff(t *testing.T) {
	e := openEmbedded(t, tuning{maxGroup: defaultMaxGroup})
	before := e.Stats()
	for range 3 {
		scalar(t, e, "SELECT 1")
	}
	if n := e.Stats().Sub(before).Prepared; n != 3 {
		t.Errorf("compiled %d times, want 3", n)
	}
}
