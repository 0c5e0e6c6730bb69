package ledger

import (
	"strings"
	"sync"
	"testing"
	"time"

	"decisiongateway/shared/abi"
)

// Batches that queue while a transaction runs share the next one: here ten
// callers queue behind a batch that waits for another connection's write
// lock. On sqld the whole group is one request, except a batch the
// translation cannot express, which runs on its own instead of taking the
// group to the interactive path with it.
func TestGroupCommitSharesOneTransaction(t *testing.T) {
	const queued = 10
	eachBackend(t, func(t *testing.T, url string) {
		remote := !strings.HasPrefix(url, "file:")
		e := openLockstep(t, url)
		run(t, e, stmt("CREATE TABLE t (k INTEGER)"))
		run(t, e, stmt("INSERT INTO t VALUES (0)"))

		release := holdWriteLock(t, url)
		before := e.Stats()
		var wg sync.WaitGroup
		exec := func(b *abi.Batch) {
			wg.Go(func() {
				if res := e.Exec(testCtx(t), b); res.Err != "" {
					t.Errorf("batch failed: %s", res.Err)
				}
			})
		}
		exec(batchOf(stmt("INSERT INTO t VALUES (1)"), stmt("INSERT INTO t VALUES (1)")))
		waitUntil(t, "the writer starts the first batch", func() bool {
			d := e.Stats().Sub(before)
			return d.Statements+d.RoundTrips > 0
		})
		for i := range queued {
			b := batchOf(stmt("INSERT INTO t VALUES (2)"), stmt("SELECT count(*) FROM t"))
			if i == queued/2 {
				// A value test on a write that returns rows: not translatable.
				b = batchOf(stmt("UPDATE t SET k = k WHERE k = 0 RETURNING k"),
					when(stmt("INSERT INTO t VALUES (2)"), abi.Cond{Step: 0, Test: abi.Falsy}))
			}
			exec(b)
		}
		waitUntil(t, "ten batches queue", func() bool { return len(e.queue) == queued })
		release()
		wg.Wait()

		got := e.Stats().Sub(before)
		want := int64(2) // the first batch, then the ten together
		if remote {
			want = 3 // the first, the nine translatable ones, the other alone
		}
		if got.Batches != queued+1 || got.Transactions != want {
			t.Errorf("%d batches in %d transactions, want %d in %d (%+v)", got.Batches, got.Transactions, queued+1, want, got)
		}
		if n := scalar(t, e, "SELECT count(*) FROM t"); n != 1+2+queued {
			t.Errorf("%d rows, want %d", n, 1+2+queued)
		}
	})
}

// waitUntil polls cond; the bound only turns a hang into a failure.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}
