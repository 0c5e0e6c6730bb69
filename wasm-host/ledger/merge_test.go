package ledger

import (
	"strings"
	"sync"
	"testing"

	"decisiongateway/shared/abi"
)

// mergeSQL inserts into a view whose trigger counts the inserts so far and
// refuses the name 'bad'; its RETURNING row echoes the name and counts the
// tally's rows, a subquery tied to the row by its own column (evaluated
// after each row's trigger; one that were evaluated once, after every row,
// would give each row the same count).
const mergeSQL = `INSERT INTO tally_in (name, n) VALUES (?, ?)
RETURNING name, (SELECT count(*) FROM tally t WHERE tally_in.n IS NOT NULL) AS nth`

const mergeSchema = `CREATE TABLE tally (seq INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER NOT NULL)`
const mergeView = `CREATE VIEW tally_in AS SELECT NULL AS name, NULL AS n WHERE 0`
const mergeTrigger = `CREATE TRIGGER tally_in_insert INSTEAD OF INSERT ON tally_in BEGIN
  SELECT RAISE(ABORT, 'bad name') WHERE NEW.name = 'bad';
  INSERT INTO tally (name, n) VALUES (NEW.name, NEW.n);
END`

// Batches of a mergeable statement that queue together run as one
// statement with all their rows, and each gets back its own RETURNING row,
// evaluated as if it had run alone (the n-th insert reads n). A batch whose
// row fails takes only itself down: the group runs again unmerged. Other
// batches in the group run beside the merged ones. On both backends (the
// embedded file does not merge, and answers the same).
func TestMergedBatchesEachGetTheirOwnRows(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		e := openTuned(t, url, Options{Create: true, Merge: []string{mergeSQL}}, lockstep())
		run(t, e, stmt(mergeSchema))
		run(t, e, stmt(mergeView))
		run(t, e, stmt(mergeTrigger))
		run(t, e, stmt(probeTable))

		group := func(names ...string) (map[string]abi.BatchResult, Stats) {
			before := e.Stats()
			var (
				mu  sync.Mutex
				got = map[string]abi.BatchResult{}
			)
			queueBehindLock(t, url, []*Executor{e}, len(names), func(wg *sync.WaitGroup) {
				for i, name := range names {
					b := batchOf(stmt(mergeSQL, abi.String(name), abi.Int64(int64(i))))
					if name == "other" { // not mergeable: a second step
						b = batchOf(stmt("INSERT INTO tally (name, n) VALUES ('other', 0)"), stmt("SELECT count(*) FROM tally"))
					}
					wg.Go(func() {
						res := e.Exec(testCtx(t), b)
						mu.Lock()
						got[name] = res
						mu.Unlock()
					})
				}
			})
			return got, e.Stats().Sub(before)
		}

		// Only a remote server merges (merge.go): the embedded file runs the
		// same batches one by one, with the same answers.
		wantMerged := int64(0)
		if !strings.HasPrefix(url, "file:") {
			wantMerged = 4
		}
		got, st := group("a", "b", "other", "c", "d")
		if st.Merged != wantMerged || st.Transactions != 2 {
			t.Errorf("%d batches merged in %d transactions, want %d in 2 (%+v)", st.Merged, st.Transactions, wantMerged, st)
		}
		seen := map[int64]bool{}
		for _, name := range []string{"a", "b", "c", "d"} {
			res := got[name]
			if res.Err != "" || len(res.Steps) != 1 || len(res.Steps[0].Rows) != 1 || res.Steps[0].RowsAffected != 1 {
				t.Fatalf("%s: %+v", name, res)
			}
			row := res.Steps[0].Rows[0]
			if row[0].AsString() != name {
				t.Errorf("%s got the row of %s", name, row[0].AsString())
			}
			// Each insert read the tally as it stood after its own row:
			// 1…5 across the five inserts, one of them the other batch's.
			if n := row[1].AsInt(); n < 1 || n > 5 || seen[n] {
				t.Errorf("%s read %d inserts (others read %v)", name, n, seen)
			}
			seen[row[1].AsInt()] = true
		}
		if res := got["other"]; res.Err != "" || res.Steps[1].Rows[0][0].AsInt() < 1 {
			t.Errorf("the unmergeable batch: %+v", res)
		}
		if n := scalar(t, e, "SELECT count(*) FROM tally"); n != 5 {
			t.Errorf("tally has %d rows, want 5", n)
		}

		got, st = group("e", "bad", "f")
		if !strings.Contains(got["bad"].Err, "bad name") {
			t.Errorf("the failing row's batch: %+v", got["bad"])
		}
		for _, name := range []string{"e", "f"} {
			if res := got[name]; res.Err != "" || len(res.Steps[0].Rows) != 1 || res.Steps[0].Rows[0][0].AsString() != name {
				t.Errorf("%s beside a failing row: %+v", name, res)
			}
		}
		if n := scalar(t, e, "SELECT count(*) FROM tally WHERE name IN ('e', 'f', 'bad')"); n != 2 {
			t.Errorf("%d of e, f, bad inserted, want 2", n)
		}
	})
}

// Options.Merge takes only the form merging can keep its promise for.
func TestMergeRefusesOtherStatements(t *testing.T) {
	url := "file:" + t.TempDir() + "/l.db"
	for _, sql := range []string{
		"INSERT INTO t (a) VALUES (?)",                        // no RETURNING
		"INSERT INTO t (a, b) VALUES (?, 1) RETURNING a",      // a constant in the tuple
		"INSERT INTO t (a) VALUES (?), (?) RETURNING a",       // two tuples
		"INSERT INTO t (a) VALUES (?) RETURNING a, ?",         // a placeholder outside the tuple
		"SELECT a FROM t WHERE a IN (VALUES (?)) RETURNING a", // not an INSERT
		"INSERT INTO t (a) SELECT ? RETURNING a",              // no VALUES
	} {
		if e, err := OpenWith(testCtx(t), url, "", Options{Create: true, Merge: []string{sql}}); err == nil {
			e.Close()
			t.Errorf("Merge accepted %q", sql)
		}
	}
}
