// Package batch is the one kit every typed ledger client builds its atomic
// batches with (schema/abi.md, "Ledger batches"): the decision path
// (shared/ledgerq) and accounts, keys, sessions and sign-in
// (shared/accounts) alike. It holds the step builder, the runner with its
// one error type, and the one rate step (rate.go), so every route counts
// the rate_windows table with the same meaning.
package batch

import (
	"errors"
	"strings"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/platform"
)

// Builder appends steps and hands back their indexes, which later steps
// name in their conditions. The zero value is an empty batch.
type Builder struct{ b abi.Batch }

// Add appends a statement that runs only when every condition in when
// holds, and returns its step index.
func (x *Builder) Add(sql string, when []abi.Cond, args ...abi.Value) int {
	x.b.Steps = append(x.b.Steps, abi.Statement{SQL: sql, Args: args, When: when})
	return len(x.b.Steps) - 1
}

// Len is the number of steps so far.
func (x *Builder) Len() int { return len(x.b.Steps) }

// Conditions on an earlier step (schema/abi.md's four tests).
func Truthy(step int) abi.Cond      { return abi.Cond{Step: step, Test: abi.Truthy} }
func Falsy(step int) abi.Cond       { return abi.Cond{Step: step, Test: abi.Falsy} }
func Affected(step int) abi.Cond    { return abi.Cond{Step: step, Test: abi.Affected} }
func NotAffected(step int) abi.Cond { return abi.Cond{Step: step, Test: abi.NotAffected} }

// Str and Num are argument values.
func Str(s string) abi.Value { return abi.String(s) }
func Num(n int64) abi.Value  { return abi.Int64(n) }

// ErrLedger is what every ledger failure is (errors.Is): the import failed
// or the batch did not commit, so nothing was changed.
var ErrLedger = errors.New("ledger failure")

// outcomeUnknown begins, on both hosts, the error of a batch whose COMMIT
// was sent and never answered (wasm-host/ledger, wrangler-compat/src
// ledger.js; schema/abi.md): unlike every other failure, it may have
// committed.
const outcomeUnknown = "commit outcome unknown"

// OutcomeUnknown reports whether err is a batch that may have committed.
func OutcomeUnknown(err error) bool {
	var e *Error
	return errors.As(err, &e) && strings.Contains(e.Msg, outcomeUnknown)
}

// Error is a ledger failure with its message; it Is ErrLedger.
type Error struct{ Msg string }

func (e *Error) Error() string        { return "ledger: " + e.Msg }
func (e *Error) Is(target error) bool { return target == ErrLedger }

// Run executes the batch on l. Both kinds of failure (the import failing,
// the batch failing or answering short) come back as an *Error, so a
// caller has one thing to map to ledger_unavailable; on success there is
// one result per step.
func (x *Builder) Run(l platform.Ledger) ([]abi.StepResult, error) {
	res, err := l.Exec(&x.b)
	switch {
	case err != nil:
		return nil, &Error{Msg: err.Error()}
	case res.Err != "":
		return nil, &Error{Msg: res.Err}
	case len(res.Steps) != len(x.b.Steps):
		return nil, &Error{Msg: "short batch result"}
	}
	return res.Steps, nil
}
