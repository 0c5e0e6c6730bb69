package batch

import (
	"strconv"
	"time"

	"decisiongateway/shared/abi"
)

// The rate rule, the one meaning of a rate_windows row for every route
// (decisions, model listings, API authentication, key creation, sign-in):
//
//   - A window is fixed: [Start, End) of its length, aligned to the epoch,
//     so every host on the ledger agrees on it without coordination.
//   - count is the number of attempts that reached the counter in the
//     window, refused ones included (spec §4.1 rule 3: "every attempt that
//     reaches the account rate counter, including replays, consumes rate
//     capacity"). Count is the only step that writes it, except in the
//     decision's reservation, which counts with the same upsert inside its
//     trigger (schema/migrations/0005_decision_reservation.sql; held to
//     this rule by TestReservationsRaceToTheirLimits in wasm-host/ledger).
//   - An attempt is within the limit when the count including itself is at
//     most the limit: the first Limit attempts of a window pass, every later
//     one is refused (Rate.Exceeded), and Remaining is never negative.
//   - What an attempt may do depends on its own count, which the count
//     step returns, and a step it guards tests the same count in its WHERE
//     clause (Within): count and test are in one transaction, so concurrent
//     attempts from any number of hosts let exactly Limit through.
//
// Whether an attempt reaches a counter at all is the caller's choice (a
// decision is counted only once its key authenticated; a key creation only
// while the account has room for a key), made with the count step's
// conditions.

// Window is a fixed rate window: its start and end in unix seconds.
type Window struct{ Start, End int64 }

// WindowAt returns the fixed window of length d containing now.
func WindowAt(now time.Time, d time.Duration) Window {
	s := int64(d / time.Second)
	start := now.Unix() / s * s
	return Window{Start: start, End: start + s}
}

// RetryAfter is the Retry-After header value for an attempt refused at
// now: the whole seconds until the window ends, at least 1.
func (w Window) RetryAfter(now time.Time) string {
	return strconv.FormatInt(max(w.End-now.Unix(), 1), 10)
}

// Count appends the rate step: it counts one attempt on scope's window
// and returns the count including it (its first row's first column). It
// runs only when when holds.
func (x *Builder) Count(scope string, w Window, when []abi.Cond) int {
	return x.Add(`INSERT INTO rate_windows (scope, window_start, count) VALUES (?, ?, 1)
ON CONFLICT (scope, window_start) DO UPDATE SET count = count + 1 RETURNING count`, when, Str(scope), Num(w.Start))
}

// Within is a term for the WHERE clause of a step the limit guards:
// scope's window, counted earlier in the same batch, is within limit. A
// window not counted is not within (there is no row, and NULL <= limit is
// not true).
func Within(scope string, w Window, limit int) (sql string, args []abi.Value) {
	return `(SELECT count FROM rate_windows WHERE scope = ? AND window_start = ?) <= ?`,
		[]abi.Value{Str(scope), Num(w.Start), Num(int64(limit))}
}

// Prune appends a step that deletes scope's windows that ended before w,
// so a scope keeps only its current window. Routes that are rare and
// spread over many scopes (sign-in, key creation) prune as they count.
func (x *Builder) Prune(scope string, w Window) int {
	return x.Add(`DELETE FROM rate_windows WHERE scope = ? AND window_start < ?`, nil, Str(scope), Num(w.Start))
}

// Rate is the outcome of a count step.
type Rate struct {
	Limit, Count int64
	Window       Window
}

// Read reads the count step at index step of res; a step that did not run
// reads as a count of 0.
func Read(res []abi.StepResult, step int, limit int, w Window) Rate {
	return Rate{Limit: int64(limit), Count: res[step].First().AsInt(), Window: w}
}

// Remaining is what the window still allows, never negative.
func (r Rate) Remaining() int64 { return max(r.Limit-r.Count, 0) }

// Exceeded reports whether the attempt went over the limit.
func (r Rate) Exceeded() bool { return r.Count > r.Limit }

// SetHeaders sets the account rate headers of spec §4.8 on h.
func (r Rate) SetHeaders(h *abi.Headers) {
	h.Set("x-ratelimit-limit", strconv.FormatInt(r.Limit, 10))
	h.Set("x-ratelimit-remaining", strconv.FormatInt(r.Remaining(), 10))
	h.Set("x-ratelimit-reset", strconv.FormatInt(r.Window.End, 10))
}
