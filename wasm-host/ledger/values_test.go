package ledger

import (
	"math"
	"testing"

	"decisiongateway/shared/abi"
)

func TestValuesRoundTrip(t *testing.T) {
	cases := []struct {
		name    string
		v       abi.Value
		typeof_ string
	}{
		{"null", abi.NullValue(), "null"},
		{"zero", abi.Int64(0), "integer"},
		{"negative", abi.Int64(-42), "integer"},
		{"max int64", abi.Int64(math.MaxInt64), "integer"},
		{"min int64", abi.Int64(math.MinInt64), "integer"},
		{"beyond float precision", abi.Int64(1<<53 + 1), "integer"},
		{"float", abi.Float64(3.25), "real"},
		{"negative float", abi.Float64(-0.1), "real"},
		{"integral float", abi.Float64(2), "real"},
		{"huge float", abi.Float64(1.7976931348623157e308), "real"},
		{"tiny float", abi.Float64(5e-324), "real"},
		{"text", abi.String("plain"), "text"},
		{"unicode text", abi.String("héllo, 世界 🚀 \u200d"), "text"},
		{"empty text", abi.String(""), "text"},
		{"text with quotes and newline", abi.String("it's \"x\"\n\t;--"), "text"},
		{"text with NUL", abi.String("a\x00b"), "text"},
		{"blob", abi.Bytes([]byte{0, 1, 0, 255, 0}), "blob"},
		{"blob of zeros", abi.Bytes(make([]byte, 64)), "blob"},
		{"empty blob", abi.Bytes([]byte{}), "blob"},
		{"nil blob", abi.Bytes(nil), "blob"},
	}
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		// A column without a declared type keeps each value's storage class.
		run(t, e, stmt("CREATE TABLE vals (id INTEGER PRIMARY KEY, v)"))
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				steps := run(t, e,
					stmt("INSERT INTO vals (v) VALUES (?) RETURNING v", c.v),
					stmt("SELECT v, typeof(v) FROM vals WHERE rowid = last_insert_rowid()"),
					stmt("SELECT ?", c.v),
				)
				if got := steps[1].Rows[0][1].AsString(); got != c.typeof_ {
					t.Errorf("stored as %s, want %s", got, c.typeof_)
				}
				for i, got := range []abi.Value{steps[0].First(), steps[1].First(), steps[2].First()} {
					if !sameValue(got, c.v) {
						t.Errorf("step %d: got %#v, want %#v", i, got, c.v)
					}
				}
			})
		}
	})
}

// Text in a column declared DATETIME is turned into a time by both drivers;
// the executor must still return it as text, in SQLite's own format.
func TestDateTypedColumnsReturnText(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		run(t, e, stmt("CREATE TABLE ev (at DATETIME, ts TIMESTAMP, n INTEGER)"))
		run(t, e, stmt("INSERT INTO ev VALUES ('2024-05-06 07:08:09', '2024-05-06 07:08:09.5', 1715000000)"))
		row := query(t, e, "SELECT at, ts, n FROM ev")[0]
		want := []abi.Value{abi.String("2024-05-06 07:08:09"), abi.String("2024-05-06 07:08:09.5"), abi.Int64(1715000000)}
		for i := range want {
			if !sameValue(row[i], want[i]) {
				t.Errorf("column %d: got %#v, want %#v", i, row[i], want[i])
			}
		}
	})
}

func TestColumnsAndRows(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		steps := run(t, e,
			stmt("SELECT 1 AS a, 'x' AS b UNION ALL SELECT 2, 'y'"),
			stmt("WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT sum(n) AS total FROM c"),
			stmt("SELECT 1 AS only WHERE 0"),
			stmt("VALUES (7, 8)"),
			stmt("PRAGMA user_version"),
		)
		s := steps[0]
		if len(s.Columns) != 2 || s.Columns[0] != "a" || s.Columns[1] != "b" {
			t.Errorf("columns %v", s.Columns)
		}
		if len(s.Rows) != 2 || s.Rows[1][0].AsInt() != 2 || s.Rows[1][1].AsString() != "y" {
			t.Errorf("rows %v", s.Rows)
		}
		if got := steps[1].First().AsInt(); got != 15 || steps[1].Columns[0] != "total" {
			t.Errorf("WITH … SELECT: %v %v", steps[1].Columns, steps[1].Rows)
		}
		if len(steps[2].Rows) != 0 || len(steps[2].Columns) != 1 {
			t.Errorf("empty result: columns %v rows %v", steps[2].Columns, steps[2].Rows)
		}
		if len(steps[3].Rows) != 1 || steps[3].Rows[0][1].AsInt() != 8 {
			t.Errorf("VALUES: %v", steps[3].Rows)
		}
		if len(steps[4].Rows) != 1 {
			t.Errorf("PRAGMA: %v", steps[4].Rows)
		}
	})
}
