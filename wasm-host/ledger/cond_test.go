package ledger

import (
	"testing"

	"decisiongateway/shared/abi"
)

// Each case runs `first` (possibly skipped, when skipFirst is set), then a
// marker insert guarded by one condition on it, and checks whether the marker
// ran, both in the step results and in the table.
func TestConditions(t *testing.T) {
	type tc struct {
		name      string
		first     string
		skipFirst bool
		test      abi.CondTest
		runs      bool
	}
	cases := []tc{
		{"affected: changed a row", "UPDATE acct SET n = n + 1 WHERE id = 1", false, abi.Affected, true},
		{"affected: changed no row", "UPDATE acct SET n = n + 1 WHERE id = 99", false, abi.Affected, false},
		{"affected: skipped", "UPDATE acct SET n = n + 1 WHERE id = 1", true, abi.Affected, false},
		{"affected: select changes nothing", "SELECT 1", false, abi.Affected, false},
		{"affected: insert or ignore that ignored", "INSERT OR IGNORE INTO acct (id, n) VALUES (1, 0)", false, abi.Affected, false},
		{"affected: delete", "DELETE FROM acct WHERE id = 1", false, abi.Affected, true},
		{"not affected: changed a row", "UPDATE acct SET n = n + 1 WHERE id = 1", false, abi.NotAffected, false},
		{"not affected: changed no row", "UPDATE acct SET n = n + 1 WHERE id = 99", false, abi.NotAffected, true},
		{"not affected: skipped", "UPDATE acct SET n = n + 1 WHERE id = 1", true, abi.NotAffected, true},
		{"truthy: 1", "SELECT 1", false, abi.Truthy, true},
		{"truthy: -1", "SELECT -1", false, abi.Truthy, true},
		{"truthy: 0", "SELECT 0", false, abi.Truthy, false},
		{"truthy: 0.5", "SELECT 0.5", false, abi.Truthy, true},
		{"truthy: 0.0", "SELECT 0.0", false, abi.Truthy, false},
		{"truthy: text", "SELECT 'yes'", false, abi.Truthy, true},
		{"truthy: empty text", "SELECT ''", false, abi.Truthy, false},
		{"truthy: text 0", "SELECT '0'", false, abi.Truthy, false},
		{"truthy: blob", "SELECT x'00'", false, abi.Truthy, true},
		{"truthy: empty blob", "SELECT x''", false, abi.Truthy, false},
		{"truthy: null", "SELECT NULL", false, abi.Truthy, false},
		{"truthy: no row", "SELECT 1 WHERE 0", false, abi.Truthy, false},
		{"truthy: only the first cell counts", "SELECT 0, 1", false, abi.Truthy, false},
		{"truthy: skipped", "SELECT 1", true, abi.Truthy, false},
		{"truthy: exists", "SELECT EXISTS (SELECT 1 FROM acct WHERE id = 1)", false, abi.Truthy, true},
		{"truthy: returning", "UPDATE acct SET n = n + 1 WHERE id = 1 RETURNING n", false, abi.Truthy, true},
		{"falsy: 1", "SELECT 1", false, abi.Falsy, false},
		{"falsy: 0", "SELECT 0", false, abi.Falsy, true},
		{"falsy: null", "SELECT NULL", false, abi.Falsy, true},
		{"falsy: no row", "SELECT 1 WHERE 0", false, abi.Falsy, true},
		{"falsy: skipped", "SELECT 1", true, abi.Falsy, true},
		{"falsy: empty text", "SELECT ''", false, abi.Falsy, true},
	}
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				run(t, e, stmt("DROP TABLE IF EXISTS acct"), stmt("DROP TABLE IF EXISTS marker"))
				run(t, e,
					stmt("CREATE TABLE acct (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)"),
					stmt("CREATE TABLE marker (x)"),
					stmt("INSERT INTO acct VALUES (1, 0)"),
				)
				// Step 0 is always false, so "skipped" steps have a reason.
				first := stmt(c.first)
				if c.skipFirst {
					first = when(first, abi.Cond{Step: 0, Test: abi.Truthy})
				}
				steps := run(t, e,
					stmt("SELECT 0"),
					first,
					when(stmt("INSERT INTO marker VALUES (1)"), abi.Cond{Step: 1, Test: c.test}),
				)
				if steps[1].Executed == c.skipFirst {
					t.Fatalf("step 1 executed = %v, want %v", steps[1].Executed, !c.skipFirst)
				}
				if steps[2].Executed != c.runs {
					t.Errorf("guarded step executed = %v, want %v", steps[2].Executed, c.runs)
				}
				if n := scalar(t, e, "SELECT count(*) FROM marker"); n != map[bool]int64{false: 0, true: 1}[c.runs] {
					t.Errorf("marker rows = %d, want the guarded step to have run = %v", n, c.runs)
				}
			})
		}
	})
}

// A skipped step reports nothing but Executed = false, and all conditions of
// a step must hold (they are a conjunction).
func TestSkippedStepsAndConjunction(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		run(t, e, stmt("CREATE TABLE t (x)"))
		steps := run(t, e,
			stmt("SELECT 1"),                 // truthy
			stmt("SELECT 0"),                 // falsy
			stmt("INSERT INTO t VALUES (1)"), // affected
			when(stmt("INSERT INTO t VALUES (2) RETURNING x"), abi.Cond{Step: 0, Test: abi.Truthy}, abi.Cond{Step: 1, Test: abi.Truthy}),
			when(stmt("INSERT INTO t VALUES (3)"), abi.Cond{Step: 0, Test: abi.Truthy}, abi.Cond{Step: 1, Test: abi.Falsy}, abi.Cond{Step: 2, Test: abi.Affected}),
			when(stmt("SELECT 1"), abi.Cond{Step: 3, Test: abi.Affected}), // depends on a skipped step
			when(stmt("SELECT 1"), abi.Cond{Step: 3, Test: abi.NotAffected}, abi.Cond{Step: 5, Test: abi.Falsy}),
		)
		skipped := steps[3]
		if skipped.Executed || skipped.RowsAffected != 0 || skipped.LastInsertID != 0 || skipped.Columns != nil || skipped.Rows != nil {
			t.Errorf("skipped step reported %+v", skipped)
		}
		if !steps[4].Executed {
			t.Error("step whose three conditions all hold did not run")
		}
		if steps[5].Executed {
			t.Error("step depending on a skipped step's changes ran")
		}
		if !steps[6].Executed {
			t.Error("step depending on skipped steps being unaffected and falsy did not run")
		}
		rows := query(t, e, "SELECT x FROM t ORDER BY x")
		if len(rows) != 2 || rows[0][0].AsInt() != 1 || rows[1][0].AsInt() != 3 {
			t.Errorf("table holds %v, want [1 3]", rows)
		}
	})
}
