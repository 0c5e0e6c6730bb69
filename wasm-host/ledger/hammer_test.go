package ledger

import (
	"sync"
	"sync/atomic"
	"testing"

	"decisiongateway/shared/abi"
)

// Two hosts (Executors) on one database, 16 goroutines each, race to spend a
// balance of 500 one credit at a time with "debit if balance >= 1" batches.
// What must hold: exactly 500 debits succeed, the balance never goes below
// zero, every successful debit saw a distinct balance (they were
// serialised), and the balance equals the sum of the account's ledger
// entries.
func TestHammerConditionalDebits(t *testing.T) {
	const (
		hosts      = 2
		goroutines = 16
		perG       = 50
		balance    = 500
	)
	eachBackend(t, func(t *testing.T, url string) {
		setup := openT(t, url)
		run(t, setup,
			stmt("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)"),
			stmt("CREATE TABLE entries (id INTEGER PRIMARY KEY, account INTEGER NOT NULL, delta INTEGER NOT NULL)"),
		)
		run(t, setup,
			stmt("INSERT INTO accounts VALUES (1, ?)", abi.Int64(balance)),
			stmt("INSERT INTO entries (account, delta) VALUES (1, ?)", abi.Int64(balance)),
		)
		debit := &abi.Batch{Steps: []abi.Statement{
			stmt("UPDATE accounts SET balance = balance - 1 WHERE id = 1 AND balance >= 1 RETURNING balance"),
			when(stmt("INSERT INTO entries (account, delta) VALUES (1, -1)"), abi.Cond{Step: 0, Test: abi.Affected}),
		}}

		var (
			ok, refused atomic.Int64
			mu          sync.Mutex
			seen        = map[int64]int{}
			wg          sync.WaitGroup
		)
		for h := 0; h < hosts; h++ {
			e := openT(t, url)
			for g := 0; g < goroutines; g++ {
				wg.Go(func() {
					for i := 0; i < perG; i++ {
						res := e.Exec(testCtx(t), debit)
						if res.Err != "" {
							t.Errorf("debit failed: %s", res.Err)
							return
						}
						if res.Steps[0].RowsAffected != int64(len(res.Steps[0].Rows)) {
							t.Errorf("RETURNING affected %d with %d rows", res.Steps[0].RowsAffected, len(res.Steps[0].Rows))
						}
						if !res.Steps[1].Executed {
							refused.Add(1)
							continue
						}
						ok.Add(1)
						left := res.Steps[0].First().AsInt()
						mu.Lock()
						seen[left]++
						mu.Unlock()
						if left < 0 {
							t.Errorf("balance went to %d", left)
						}
					}
				})
			}
		}
		wg.Wait()

		if ok.Load() != balance || ok.Load()+refused.Load() != hosts*goroutines*perG {
			t.Errorf("%d debits succeeded and %d were refused; want %d and %d",
				ok.Load(), refused.Load(), balance, hosts*goroutines*perG-balance)
		}
		for left, n := range seen {
			if n != 1 || left < 0 || left >= balance {
				t.Errorf("balance %d was left by %d debits", left, n)
			}
		}
		final := scalar(t, setup, "SELECT balance FROM accounts WHERE id = 1")
		sum := scalar(t, setup, "SELECT sum(delta) FROM entries WHERE account = 1")
		entries := scalar(t, setup, "SELECT count(*) FROM entries WHERE delta = -1")
		if final != 0 || sum != final || entries != balance {
			t.Errorf("final balance %d, sum of entries %d, debit entries %d; want 0, 0, %d", final, sum, entries, balance)
		}
	})
}
