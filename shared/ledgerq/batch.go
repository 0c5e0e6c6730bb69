// Package ledgerq composes the decision path's ledger work as atomic
// batches (schema/abi.md, "Ledger batches"): one batch before the upstream
// call — authentication, rate counters, the idempotency claim and the credit
// reservation — and one after it — charge or refund. Conditions between the
// steps do the branching inside the transaction, so a decision costs two
// ledger round trips on any host, including Workers over HTTP.
package ledgerq

import (
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/platform"
)

// builder appends steps and hands back their indexes for conditions.
type builder struct{ b abi.Batch }

func (x *builder) add(sql string, when []abi.Cond, args ...abi.Value) int {
	x.b.Steps = append(x.b.Steps, abi.Statement{SQL: sql, Args: args, When: when})
	return len(x.b.Steps) - 1
}

func truthy(step int) abi.Cond      { return abi.Cond{Step: step, Test: abi.Truthy} }
func falsy(step int) abi.Cond       { return abi.Cond{Step: step, Test: abi.Falsy} }
func affected(step int) abi.Cond    { return abi.Cond{Step: step, Test: abi.Affected} }
func notAffected(step int) abi.Cond { return abi.Cond{Step: step, Test: abi.NotAffected} }

func and(a []abi.Cond, more ...abi.Cond) []abi.Cond {
	out := make([]abi.Cond, 0, len(a)+len(more))
	return append(append(out, a...), more...)
}

func str(s string) abi.Value { return abi.String(s) }
func num(n int64) abi.Value  { return abi.Int64(n) }

// exec runs a batch and turns a batch error into a Go error.
func exec(l platform.Ledger, x *builder) (abi.BatchResult, error) {
	res, err := l.Exec(&x.b)
	if err != nil {
		return res, err
	}
	if res.Err != "" {
		return res, &Error{Msg: res.Err}
	}
	return res, nil
}

// Error is a ledger failure: the batch did not commit.
type Error struct{ Msg string }

func (e *Error) Error() string { return "ledger: " + e.Msg }

// Window is a fixed rate window: its start and end in unix seconds.
type Window struct{ Start, End int64 }

// WindowAt returns the fixed window of length d containing now.
func WindowAt(now time.Time, d time.Duration) Window {
	s := int64(d / time.Second)
	start := now.Unix() / s * s
	return Window{Start: start, End: start + s}
}

// count appends the step that counts one attempt in scope's window and
// returns the new count (RETURNING count). A limit is not tested by a step
// of its own: the steps it guards test it in their own WHERE clause
// (within), and the caller reads Rate.Exceeded from the count. One
// statement fewer per counter, and no value test that would have to be
// evaluated twice on sqld.
func (x *builder) count(scope string, w Window, when []abi.Cond) int {
	return x.add(`INSERT INTO rate_windows (scope, window_start, count) VALUES (?, ?, 1)
ON CONFLICT (scope, window_start) DO UPDATE SET count = count + 1 RETURNING count`, when, str(scope), num(w.Start))
}

// within is a condition for a WHERE clause: scope's window, counted earlier
// in the same batch, is within limit.
func within(scope string, w Window, limit int) (sql string, args []abi.Value) {
	return `(SELECT count FROM rate_windows WHERE scope = ? AND window_start = ?) <= ?`,
		[]abi.Value{str(scope), num(w.Start), num(int64(limit))}
}

// Rate is the outcome of a rate counter.
type Rate struct {
	Limit, Count int64
	Window       Window
}

// Remaining is what the window still allows, never negative.
func (r Rate) Remaining() int64 {
	if r.Count >= r.Limit {
		return 0
	}
	return r.Limit - r.Count
}

// Exceeded reports whether the attempt went over the limit.
func (r Rate) Exceeded() bool { return r.Count > r.Limit }
