package batch_test

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/batch"
	"decisiongateway/shared/platform"
	"decisiongateway/testkit/sqldtest"
	"decisiongateway/wasm-host/ledger"
)

// The rate rule runs on the host's real executor against both backends,
// an embedded file and a real sqld: the rule lives in SQL, so only a real
// ledger can show it holds.
func eachBackend(t *testing.T, f func(t *testing.T, l platform.Ledger, e *ledger.Executor)) {
	for _, b := range sqldtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			e, err := ledger.OpenWith(ctx, b.URL, "", ledger.Options{Create: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			if err := e.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			f(t, e.Bind(ctx), e)
		})
	}
}

func windowCount(t *testing.T, e *ledger.Executor, scope string, w batch.Window) int64 {
	t.Helper()
	res := e.Exec(context.Background(), &abi.Batch{Steps: []abi.Statement{{
		SQL: "SELECT COALESCE((SELECT count FROM rate_windows WHERE scope = ? AND window_start = ?), 0)", Args: []abi.Value{batch.Str(scope), batch.Num(w.Start)}}}})
	if res.Err != "" {
		t.Fatal(res.Err)
	}
	return res.Steps[0].First().AsInt()
}

// attempt counts one attempt on scope and, guarded by Within, counts a
// pass on scope+":passed": the pattern every route uses (the guarded step
// stands for the key insert, the debit, the sign-in token).
func attempt(l platform.Ledger, scope string, w batch.Window, limit int) (batch.Rate, bool, error) {
	var x batch.Builder
	count := x.Count(scope, w, nil)
	in, args := batch.Within(scope, w, limit)
	passed := x.Add(`INSERT INTO rate_windows (scope, window_start, count) SELECT ?, ?, 1 WHERE `+in+`
ON CONFLICT (scope, window_start) DO UPDATE SET count = count + 1`, nil, append([]abi.Value{batch.Str(scope + ":passed"), batch.Num(w.Start)}, args...)...)
	res, err := x.Run(l)
	if err != nil {
		return batch.Rate{}, false, err
	}
	return batch.Read(res, count, limit, w), res[passed].RowsAffected > 0, nil
}

// The first Limit attempts of a window pass and every later one is
// refused but counted; Remaining never goes below zero; a new window
// starts from zero.
func TestRateCountsEveryAttemptAndPassesTheFirstLimit(t *testing.T) {
	eachBackend(t, func(t *testing.T, l platform.Ledger, e *ledger.Executor) {
		const limit = 3
		w := batch.WindowAt(time.Unix(1_800_000_030, 0), time.Minute)
		for i := int64(1); i <= 5; i++ {
			r, passed, err := attempt(l, "s", w, limit)
			if err != nil {
				t.Fatal(err)
			}
			within := i <= limit
			if r.Count != i || r.Exceeded() == within || passed != within || r.Remaining() != max(limit-i, 0) {
				t.Fatalf("attempt %d: %+v exceeded=%v passed=%v remaining=%d", i, r, r.Exceeded(), passed, r.Remaining())
			}
		}
		next := batch.Window{Start: w.End, End: w.End + 60}
		if r, passed, err := attempt(l, "s", next, limit); err != nil || r.Count != 1 || !passed {
			t.Fatalf("next window: %+v %v %v", r, passed, err)
		}
		if n := windowCount(t, e, "s", w); n != 5 {
			t.Fatalf("window count %d, want every attempt (5)", n)
		}
	})
}

// Many goroutines count on one window at once: every attempt is counted
// once (the counts they see are exactly 1..N), and exactly Limit of them
// pass, whatever the interleaving, on either backend.
func TestRateHammerLetsExactlyLimitThrough(t *testing.T) {
	eachBackend(t, func(t *testing.T, l platform.Ledger, e *ledger.Executor) {
		const attempts, limit = 64, 20
		w := batch.WindowAt(time.Now(), time.Minute)
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			counts []int64
			passed int
		)
		for range attempts {
			wg.Go(func() {
				r, ok, err := attempt(l, "hammer", w, limit)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				counts = append(counts, r.Count)
				if ok {
					passed++
				}
				if ok == r.Exceeded() {
					t.Errorf("count %d: passed %v but exceeded %v", r.Count, ok, r.Exceeded())
				}
			})
		}
		wg.Wait()
		sort.Slice(counts, func(i, j int) bool { return counts[i] < counts[j] })
		for i, c := range counts {
			if c != int64(i+1) {
				t.Fatalf("counts seen %v, want 1..%d each once", counts, attempts)
			}
		}
		if len(counts) != attempts || passed != limit {
			t.Fatalf("%d attempts answered, %d passed; want %d and %d", len(counts), passed, attempts, limit)
		}
		if n, p := windowCount(t, e, "hammer", w), windowCount(t, e, "hammer:passed", w); n != attempts || p != limit {
			t.Fatalf("ledger holds %d attempts and %d passes, want %d and %d", n, p, attempts, limit)
		}
	})
}

// A step guarded by Within on a window the batch did not count does not
// run: no row is not within.
func TestWithinAnUncountedWindowIsNotWithin(t *testing.T) {
	eachBackend(t, func(t *testing.T, l platform.Ledger, e *ledger.Executor) {
		w := batch.WindowAt(time.Unix(1_800_000_000, 0), time.Minute)
		var x batch.Builder
		in, args := batch.Within("never", w, 10)
		step := x.Add(`INSERT INTO rate_windows (scope, window_start, count) SELECT 'guarded', 0, 1 WHERE `+in, nil, args...)
		res, err := x.Run(l)
		if err != nil || res[step].RowsAffected != 0 {
			t.Fatalf("guarded step ran: %+v %v", res, err)
		}
	})
}

// Prune keeps only the current window of a scope and leaves other scopes.
func TestPruneDropsEndedWindowsOfItsScope(t *testing.T) {
	eachBackend(t, func(t *testing.T, l platform.Ledger, e *ledger.Executor) {
		old := batch.WindowAt(time.Unix(1_800_000_000, 0), time.Minute)
		now := batch.Window{Start: old.End, End: old.End + 60}
		for _, scope := range []string{"a", "b"} {
			if _, _, err := attempt(l, scope, old, 5); err != nil {
				t.Fatal(err)
			}
		}
		var x batch.Builder
		x.Prune("a", now)
		x.Count("a", now, nil)
		if _, err := x.Run(l); err != nil {
			t.Fatal(err)
		}
		if a, b, cur := windowCount(t, e, "a", old), windowCount(t, e, "b", old), windowCount(t, e, "a", now); a != 0 || b != 1 || cur != 1 {
			t.Fatalf("a old %d, b old %d, a current %d", a, b, cur)
		}
	})
}

func TestWindowsAreAlignedAndRetryAfterIsAtLeastOne(t *testing.T) {
	for _, c := range []struct {
		now        int64
		d          time.Duration
		start, end int64
		retry      string
	}{
		{1_800_000_030, time.Minute, 1_800_000_000, 1_800_000_060, "30"},
		{1_800_000_059, time.Minute, 1_800_000_000, 1_800_000_060, "1"},
		{1_800_000_060, time.Minute, 1_800_000_060, 1_800_000_120, "60"},
		{1_800_000_030, 15 * time.Minute, 1_800_000_000, 1_800_000_900, "870"},
	} {
		w := batch.WindowAt(time.Unix(c.now, 0), c.d)
		if w.Start != c.start || w.End != c.end {
			t.Errorf("WindowAt(%d, %v) = %+v, want [%d, %d)", c.now, c.d, w, c.start, c.end)
		}
		if got := w.RetryAfter(time.Unix(c.now, 0)); got != c.retry {
			t.Errorf("RetryAfter at %d of %+v = %s, want %s", c.now, w, got, c.retry)
		}
		// A clock past the window's end (another host's) still says 1.
		if got := w.RetryAfter(time.Unix(c.end+5, 0)); got != "1" {
			t.Errorf("RetryAfter past the end = %s, want 1", got)
		}
	}
}

// A failed batch is one error kind, whatever failed.
func TestRunFailuresAreErrLedger(t *testing.T) {
	eachBackend(t, func(t *testing.T, l platform.Ledger, e *ledger.Executor) {
		var x batch.Builder
		x.Add("INSERT INTO no_such_table VALUES (1)", nil)
		if _, err := x.Run(l); !isLedger(err) {
			t.Fatalf("err %v", err)
		}
	})
}

func isLedger(err error) bool { return errors.Is(err, batch.ErrLedger) }
