package ledger

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"unicode"

	"decisiongateway/shared/abi"
)

// Merging.
//
// sqld compiles every statement of every request afresh (it keeps no
// prepared statements), and compiling is most of what it spends on a
// decision: the reservation's INSERT, whose trigger program SQLite compiles
// with it, cost about 220 µs of sqld's CPU where running it cost a tenth of
// that. So a group of batches that each run the same one statement is run as
// that statement once, with all their rows: with 8 callers sqld spent 383–427
// µs of CPU per decision instead of 550–557 (BenchmarkDecision/sqld/parallel8,
// schema/ledger.md).
//
// Only statements the executor was opened with (Options.Merge) merge, and
// only a batch of exactly that one statement, without conditions. The
// statement is `… VALUES (?, …, ?) RETURNING …` and its author promises what
// makes the merged statement mean the same as the batches run one after
// another: SQLite processes a multi-row INSERT a row at a time (the row's
// triggers, then its RETURNING row), RETURNING reads only through its own
// row's columns (correlated subqueries, which SQLite evaluates per row), and
// the first RETURNING column echoes the first VALUES column, a value unique
// to the batch, by which each batch gets back its rows. Batches in one group
// were all waiting at once, so any order among them is one they could have
// run in; the merged ones run where the first of them stood.
//
// Only on a remote server: on the embedded file the writer keeps its
// statements compiled (stmtcache.go), so there is no compile to share, and
// a merged INSERT cost SQLite a little more than its rows one by one
// (BenchmarkDecision/embedded/parallel8 against …/nomerge: 148–167 against
// 110–143 µs of CPU per decision).
//
// A merged statement that fails cannot say whose row failed: the group is
// rolled back and run again unmerged, so the failure reaches its batch alone.
// LastInsertID is not meaningful for a merged batch (it reports 0).

// mergeable is a statement text that may run merged, split around its
// VALUES tuple.
type mergeable struct {
	head, tuple, tail string   // the text is head + tuple + tail
	shape             shape    // the text's
	texts             []string // texts[n]: the statement for n rows, built on first use
}

// parseMergeable checks that sql has the form Options.Merge requires: one
// VALUES tuple of bare placeholders, followed by RETURNING.
func parseMergeable(sql string) (*mergeable, error) {
	bad := func(why string) (*mergeable, error) {
		return nil, fmt.Errorf("ledger: Options.Merge: %s: %.60q", why, sql)
	}
	const values = "VALUES ("
	at := strings.Index(sql, values)
	if at < 0 || strings.Contains(sql[at+len(values):], values) {
		return bad("want exactly one \"VALUES (\"")
	}
	open := at + len(values) - 1
	end := strings.IndexByte(sql[open:], ')')
	if end < 0 {
		return bad("unclosed VALUES tuple")
	}
	end += open + 1
	tuple := sql[open:end]
	params := 0
	for _, part := range strings.Split(tuple[1:len(tuple)-1], ",") {
		if strings.TrimSpace(part) != "?" {
			return bad("the VALUES tuple holds something other than ?")
		}
		params++
	}
	tail := strings.TrimLeftFunc(sql[end:], unicode.IsSpace)
	if !strings.HasPrefix(strings.ToUpper(tail), "RETURNING ") {
		return bad("no RETURNING after the VALUES tuple")
	}
	s, err := classify(sql)
	if err != nil {
		return nil, err
	}
	if !s.returning || !s.insert || s.params != params {
		return bad("not an INSERT whose only placeholders are its VALUES tuple's")
	}
	return &mergeable{head: sql[:open], tuple: tuple, tail: sql[end:], shape: s}, nil
}

// job is one job running set's statement with all their rows. Its shape is
// the one row's with as many placeholders as the rows have: repeating the
// tuple changes nothing else classify looks at.
func (m *mergeable) job(set []*job) *job {
	n := len(set)
	for len(m.texts) <= n {
		m.texts = append(m.texts, "")
	}
	if m.texts[n] == "" {
		var b strings.Builder
		b.Grow(len(m.head) + n*(len(m.tuple)+2) + len(m.tail))
		b.WriteString(m.head)
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(m.tuple)
		}
		b.WriteString(m.tail)
		m.texts[n] = b.String()
	}
	args := make([]abi.Value, 0, n*m.shape.params)
	for _, j := range set {
		args = append(args, j.steps[0].Args...)
	}
	sh := m.shape
	sh.params *= n
	return &job{ctx: context.Background(), steps: []abi.Statement{{SQL: m.texts[n], Args: args}}, shapes: []shape{sh}}
}

// mergeGroup returns the jobs an attempt runs for group: every set of two
// or more mergeable batches of the same statement becomes one job, at the
// place of the first of them, and parts[i] lists the batches run[i] stands
// for (nil where run[i] is a batch of group itself).
func (e *Executor) mergeGroup(group []*job) (run []*job, parts [][]*job) {
	if !e.remote || len(e.merge) == 0 || len(group) < 2 {
		return group, nil
	}
	of := make([]*mergeable, len(group))
	var sets map[*mergeable][]*job
	merging := false
	for i, j := range group {
		if m := e.mergeableOf(j); m != nil {
			if sets == nil {
				sets = map[*mergeable][]*job{}
			}
			of[i], sets[m] = m, append(sets[m], j)
			merging = merging || len(sets[m]) > 1
		}
	}
	if !merging {
		return group, nil
	}
	run, parts = make([]*job, 0, len(group)), make([][]*job, 0, len(group))
	for i, j := range group {
		switch set := sets[of[i]]; {
		case len(set) < 2:
			run, parts = append(run, j), append(parts, nil)
		case set[0] == j:
			run, parts = append(run, of[i].job(set)), append(parts, set)
		}
	}
	return run, parts
}

// mergeableOf returns the statement j may merge as, or nil.
func (e *Executor) mergeableOf(j *job) *mergeable {
	if len(j.steps) != 1 || len(j.steps[0].When) != 0 {
		return nil
	}
	if m := e.merge[j.steps[0].SQL]; m != nil && len(j.steps[0].Args) == m.shape.params {
		return m
	}
	return nil
}

// split gives each batch of set its rows of the merged statement's result:
// those whose first column is the batch's first argument.
func split(res abi.StepResult, set []*job) [][]abi.StepResult {
	out := make([][]abi.StepResult, len(set))
	inOrder := len(res.Rows) == len(set)
	for i, j := range set {
		inOrder = inOrder && len(res.Rows[i]) > 0 && sameValue(res.Rows[i][0], j.steps[0].Args[0])
	}
	for i, j := range set {
		var rows [][]abi.Value
		if inOrder {
			rows = res.Rows[i : i+1 : i+1]
		} else {
			for _, r := range res.Rows {
				if len(r) > 0 && sameValue(r[0], j.steps[0].Args[0]) {
					rows = append(rows, r)
				}
			}
		}
		out[i] = []abi.StepResult{{Executed: true, RowsAffected: int64(len(rows)), Columns: res.Columns, Rows: rows}}
	}
	return out
}

// sameValue reports whether two values are the same SQLite value.
func sameValue(a, b abi.Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case abi.Integer:
		return a.Int == b.Int
	case abi.Float:
		return math.Float64bits(a.Float) == math.Float64bits(b.Float)
	case abi.Text:
		return a.Str == b.Str
	case abi.Blob:
		return bytes.Equal(a.Bytes, b.Bytes)
	}
	return true
}
