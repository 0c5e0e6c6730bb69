package ledger

import (
	"strings"
	"testing"

	"decisiongateway/shared/abi"
)

// Stats counts what reached the database: a skipped step is no statement, a
// lone statement is a transaction of its own without BEGIN and COMMIT, and
// on sqld a whole batch is one request.
func TestStatsCountWhatRan(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		run(t, e, stmt("CREATE TABLE t (x INTEGER)"))
		remote := !strings.HasPrefix(url, "file:")

		before := e.Stats()
		run(t, e,
			stmt("INSERT INTO t VALUES (1)"),
			when(stmt("INSERT INTO t VALUES (2)"), abi.Cond{Step: 0, Test: abi.NotAffected}), // skipped
			stmt("SELECT count(*) FROM t"),
		)
		got := e.Stats().Sub(before)
		if got.Batches != 1 || got.Transactions != 1 {
			t.Errorf("one batch: %+v, want 1 batch in 1 transaction", got)
		}
		switch {
		case remote && got.RoundTrips != 1:
			t.Errorf("one batch on sqld took %d requests, want 1", got.RoundTrips)
		case !remote && (got.RoundTrips != 0 || got.Statements != 4):
			t.Errorf("embedded: %+v, want 4 statements (BEGIN, 2 steps, COMMIT) and no requests", got)
		}

		before = e.Stats()
		run(t, e, stmt("SELECT count(*) FROM t"))
		got = e.Stats().Sub(before)
		want := Stats{Batches: 1, Transactions: 1, Statements: 1}
		if remote {
			want.RoundTrips = 1
		}
		got.Prepared = 0 // counted by TestPreparedStatementsAreReused
		if got != want {
			t.Errorf("lone statement: %+v, want %+v", got, want)
		}
	})
}
