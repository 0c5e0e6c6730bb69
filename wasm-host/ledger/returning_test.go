package ledger

import (
	"testing"

	"decisiongateway/shared/abi"
)

func TestReturning(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		run(t, e, stmt("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE, n INTEGER NOT NULL DEFAULT 0)"))

		steps := run(t, e,
			stmt("INSERT INTO t (name) VALUES (?), (?) RETURNING id, name", abi.String("a"), abi.String("b")),
			stmt("UPDATE t SET n = n + 5 WHERE name = ? RETURNING n", abi.String("a")),
			stmt("UPDATE t SET n = n + 1 WHERE name = 'nobody' RETURNING n"),
			when(stmt("SELECT 'ran'"), abi.Cond{Step: 2, Test: abi.Affected}),
			stmt("INSERT INTO t (name) VALUES ('a') ON CONFLICT (name) DO NOTHING RETURNING id"),
			stmt("WITH doomed AS (SELECT id FROM t WHERE name = 'b') DELETE FROM t WHERE id IN (SELECT id FROM doomed) RETURNING name"),
		)
		ins := steps[0]
		if ins.RowsAffected != 2 || len(ins.Rows) != 2 || len(ins.Columns) != 2 || ins.Columns[1] != "name" {
			t.Errorf("INSERT RETURNING: affected %d, columns %v, rows %v", ins.RowsAffected, ins.Columns, ins.Rows)
		} else if ins.Rows[0][1].AsString() != "a" || ins.Rows[1][0].AsInt() <= ins.Rows[0][0].AsInt() {
			t.Errorf("INSERT RETURNING rows %v", ins.Rows)
		}
		if upd := steps[1]; upd.RowsAffected != 1 || upd.First().AsInt() != 5 {
			t.Errorf("UPDATE RETURNING: affected %d, rows %v", upd.RowsAffected, upd.Rows)
		}
		if none := steps[2]; !none.Executed || none.RowsAffected != 0 || len(none.Rows) != 0 {
			t.Errorf("UPDATE RETURNING that matched nothing: %+v", none)
		}
		if steps[3].Executed {
			t.Error("Affected held on a RETURNING statement that changed nothing")
		}
		if ign := steps[4]; ign.RowsAffected != 0 || len(ign.Rows) != 0 {
			t.Errorf("ignored upsert: %+v", ign)
		}
		if del := steps[5]; del.RowsAffected != 1 || del.First().AsString() != "b" {
			t.Errorf("WITH … DELETE RETURNING: %+v", del)
		}
		if n := scalar(t, e, "SELECT count(*) FROM t"); n != 1 {
			t.Errorf("%d rows left, want 1", n)
		}
	})
}

func TestRowsAffectedAndLastInsertID(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		run(t, e, stmt("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)"))
		steps := run(t, e,
			stmt("INSERT INTO t (id, name) VALUES (41, 'a')"),
			stmt("INSERT INTO t (name) VALUES ('b')"),
			stmt("UPDATE t SET name = name || '!'"),
			stmt("INSERT OR IGNORE INTO t (name) VALUES ('b!')"),
			stmt("DELETE FROM t WHERE id = 41"),
		)
		want := []struct{ affected, id int64 }{{1, 41}, {1, 42}, {2, 0}, {0, 0}, {1, 0}}
		for i, w := range want {
			if steps[i].RowsAffected != w.affected || steps[i].LastInsertID != w.id {
				t.Errorf("step %d: affected %d, last insert id %d; want %d, %d",
					i, steps[i].RowsAffected, steps[i].LastInsertID, w.affected, w.id)
			}
		}
	})
}
