package ledger

import (
	"errors"
	"testing"
)

func TestClassifyChoosesQueryForRowReturningStatements(t *testing.T) {
	cases := []struct {
		sql                     string
		rows, returning, insert bool
		params                  int
	}{
		{"SELECT 1", true, false, false, 0},
		{"  select * from t where a = ? and b = ?", true, false, false, 2},
		{"-- lead\n/* c */ SELECT '?' || ?", true, false, false, 1},
		{"VALUES (1)", true, false, false, 0},
		{"PRAGMA user_version", true, false, false, 0},
		{"EXPLAIN QUERY PLAN SELECT 1", true, false, false, 0},
		{"WITH x AS (SELECT 1) SELECT * FROM x", true, false, false, 0},
		{"WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM x) SELECT n FROM x", true, false, false, 0},
		{"WITH x AS (SELECT 1 AS v) INSERT INTO t SELECT v FROM x", false, false, true, 0},
		{"WITH x AS MATERIALIZED (SELECT 1) DELETE FROM t WHERE id IN x RETURNING id", true, true, false, 0},
		{"INSERT INTO t VALUES (?, ?)", false, false, true, 2},
		{"insert or replace into t values (1)", false, false, true, 0},
		{"REPLACE INTO t VALUES (1)", false, false, true, 0},
		{"INSERT INTO t VALUES (1) RETURNING id", true, true, true, 0},
		{"INSERT INTO t VALUES ('returning')", false, false, true, 0},
		{`INSERT INTO t ("returning") VALUES (1)`, false, false, true, 0},
		{"UPDATE t SET a = replace(a, 'x', ?) WHERE id = ?", false, false, false, 2},
		{"UPDATE t SET a = 1 RETURNING *", true, true, false, 0},
		{"DELETE FROM t;", false, false, false, 0},
		{"DELETE FROM t; -- trailing comment", false, false, false, 0},
		{"CREATE TABLE t (a TEXT DEFAULT 'x;y')", false, false, false, 0},
		{"CREATE TABLE t AS SELECT 1", false, false, false, 0},
		{"CREATE TRIGGER g AFTER INSERT ON t BEGIN UPDATE u SET n = CASE WHEN 1 THEN 2 END; DELETE FROM v; END", false, false, false, 0},
		{"CREATE TEMP TRIGGER g AFTER INSERT ON t BEGIN SELECT 1; END;", false, false, false, 0},
		{"SELECT x'00', [odd;name], `q;`, \"a\"\"b\" FROM t", true, false, false, 0},
	}
	for _, c := range cases {
		s, err := classify(c.sql)
		if err != nil {
			t.Errorf("%q: %v", c.sql, err)
			continue
		}
		if s.rows != c.rows || s.returning != c.returning || s.insert != c.insert || s.params != c.params {
			t.Errorf("%q: got rows=%v returning=%v insert=%v params=%d; want %v %v %v %d",
				c.sql, s.rows, s.returning, s.insert, s.params, c.rows, c.returning, c.insert, c.params)
		}
	}
}

func TestClassifyRefuses(t *testing.T) {
	for _, sql := range []string{
		"", " ; ", "-- only a comment",
		"SELECT 1; SELECT 2",
		"INSERT INTO t VALUES (1);INSERT INTO t VALUES (2);",
		"BEGIN", "BEGIN IMMEDIATE", "commit", "END TRANSACTION", "ROLLBACK TO s", "SAVEPOINT s", "RELEASE s",
		"SELECT ?1", "SELECT :name", "SELECT @name", "SELECT $name",
		"SELECT 'unterminated", "SELECT \"unterminated", "SELECT [unterminated", "SELECT 1 /* unterminated",
	} {
		if _, err := classify(sql); !errors.Is(err, errShape) {
			t.Errorf("%q: accepted (err %v)", sql, err)
		}
	}
}

// Only statements that cannot write may be re-sent after a broken connection.
func TestClassifyReadOnly(t *testing.T) {
	for sql, want := range map[string]bool{
		"SELECT 1":                                     true,
		"VALUES (1)":                                   true,
		"EXPLAIN SELECT 1":                             true,
		"WITH x AS (SELECT 1) SELECT * FROM x":         true,
		"WITH x AS (SELECT 1) DELETE FROM t":           false,
		"PRAGMA user_version = 2":                      false,
		"PRAGMA user_version":                          false,
		"INSERT INTO t VALUES (1) RETURNING id":        false,
		"UPDATE t SET a = (SELECT max(a) FROM t)":      false,
		"CREATE TABLE t AS SELECT 1":                   false,
		"DELETE FROM t WHERE id IN (SELECT id FROM u)": false,
	} {
		s, err := classify(sql)
		if err != nil {
			t.Errorf("%q: %v", sql, err)
		} else if s.readOnly != want {
			t.Errorf("%q: readOnly = %v, want %v", sql, s.readOnly, want)
		}
	}
}

// The memo of shapes answers what classify answers, errors included (those
// are not remembered).
func TestShapeMemoAgreesWithClassify(t *testing.T) {
	for _, sql := range []string{
		"SELECT 1",
		"UPDATE accounts SET balance = balance - ? WHERE id = ? RETURNING balance",
		"INSERT INTO t SELECT ?, ? WHERE 1 ON CONFLICT (k) DO UPDATE SET v = excluded.v",
		"SELECT :named",
		"BEGIN",
	} {
		want, wantErr := classify(sql)
		for range 2 {
			got, err := shapeOf(sql)
			if got != want || (err == nil) != (wantErr == nil) {
				t.Errorf("%q: shapeOf = %+v, %v; classify = %+v, %v", sql, got, err, want, wantErr)
			}
		}
	}
}
