package ledger

import (
	"context"
	"sync"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/sqldtest"
)

// eachBackend runs f against a fresh embedded file and a fresh real sqld.
func eachBackend(t *testing.T, f func(t *testing.T, url string)) {
	t.Helper()
	for _, b := range sqldtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { f(t, b.URL) })
	}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func openT(t testing.TB, url string) *Executor {
	t.Helper()
	return openTuned(t, url, Options{Create: true}, defaultTuning())
}

// openTuned opens url with o and tune, closed when the test ends.
func openTuned(t testing.TB, url string, o Options, tune tuning) *Executor {
	t.Helper()
	e, err := open(testCtx(t), url, "", o, tune)
	if err != nil {
		t.Fatalf("Open(%s): %v", url, err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// run executes steps as one batch and fails the test on a batch error.
func run(t testing.TB, e *Executor, steps ...abi.Statement) []abi.StepResult {
	t.Helper()
	res := e.Exec(testCtx(t), &abi.Batch{Steps: steps})
	if res.Err != "" {
		t.Fatalf("batch failed: %s", res.Err)
	}
	if len(res.Steps) != len(steps) {
		t.Fatalf("got %d step results for %d steps", len(res.Steps), len(steps))
	}
	return res.Steps
}

// query runs one statement and returns its rows.
func query(t testing.TB, e *Executor, sql string, args ...abi.Value) [][]abi.Value {
	t.Helper()
	return run(t, e, stmt(sql, args...))[0].Rows
}

// scalar runs one statement and returns its first cell as an integer.
func scalar(t testing.TB, e *Executor, sql string, args ...abi.Value) int64 {
	t.Helper()
	rows := query(t, e, sql, args...)
	if len(rows) == 0 {
		t.Fatalf("%s: no rows", sql)
	}
	return rows[0][0].AsInt()
}

func stmt(sql string, args ...abi.Value) abi.Statement {
	return abi.Statement{SQL: sql, Args: args}
}

func when(s abi.Statement, conds ...abi.Cond) abi.Statement {
	s.When = conds
	return s
}

func batchOf(steps ...abi.Statement) *abi.Batch { return &abi.Batch{Steps: steps} }

// lockstep is the default tuning without pipelining: queueBehindLock's
// batches must wait in the queue, where a pipelining writer would send the
// first of them behind the probe.
func lockstep() tuning {
	t := defaultTuning()
	t.pipeline = 1
	return t
}

// openLockstep is openT without pipelining, for tests that make groups
// form behind a held write lock.
func openLockstep(t testing.TB, url string) *Executor {
	t.Helper()
	return openTuned(t, url, Options{Create: true}, lockstep())
}

// queueBehindLock holds the write lock from another connection while each
// host's writer waits on a write of its own and send starts the batches
// (on wg), until queued batches wait in the hosts' queues; then it lets go
// and waits for wg. So the queued batches reach each writer as one group.
// The hosts must be opened without pipelining (lockstep). The ledger must
// have the table queue_probe (probeTable) for the writers' own writes.
func queueBehindLock(t *testing.T, url string, hosts []*Executor, queued int, send func(wg *sync.WaitGroup)) {
	t.Helper()
	release := holdWriteLock(t, url)
	var wg sync.WaitGroup
	for _, h := range hosts {
		before := h.Stats()
		wg.Go(func() { run(t, h, stmt("INSERT INTO queue_probe VALUES (1)")) })
		waitUntil(t, "the writer waits for the lock", func() bool {
			d := h.Stats().Sub(before)
			return d.Statements+d.RoundTrips+d.Retries > 0
		})
	}
	send(&wg)
	waitUntil(t, "the batches queue", func() bool {
		n := 0
		for _, h := range hosts {
			n += len(h.queue)
		}
		return n == queued
	})
	release()
	wg.Wait()
}

// probeTable is the table queueBehindLock writes to.
const probeTable = "CREATE TABLE queue_probe (x INTEGER)"

// fundAccount creates account with balance, recorded as a grant so that
// balance = Σ entries holds, and an API key whose secret hashes to
// keyHash, revoked at revokedAt (NULL: live).
func fundAccount(t testing.TB, e *Executor, account, keyHash string, balance int64, revokedAt abi.Value) {
	t.Helper()
	run(t, e,
		stmt("INSERT INTO accounts (id, balance, created_at) VALUES (?, ?, 0)", abi.String(account), abi.Int64(balance)),
		stmt("INSERT INTO credit_entries (account_id, delta, kind, created_at) VALUES (?, ?, 'grant', 0)", abi.String(account), abi.Int64(balance)),
		stmt("INSERT INTO api_keys (id, account_id, name, prefix, secret_hash, created_at, revoked_at) VALUES (?, ?, 'k', 'p', ?, 0, ?)",
			abi.String("key_"+account), abi.String(account), abi.String(keyHash), revokedAt))
}
