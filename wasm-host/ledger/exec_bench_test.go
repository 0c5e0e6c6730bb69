package ledger

import (
	"fmt"
	"runtime"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/sqldtest"
)

// BenchmarkExec measures one 3-step batch (conditional debit, guarded ledger
// insert, balance read) per op: serially, and from 32 concurrent callers as a
// busy host would issue them, with group commit on and off; read1 is a
// one-step read batch from 32 callers.
//
//	go test ./wasm-host/ledger -run '^$' -bench Exec -benchtime 2000x
func BenchmarkExec(b *testing.B) {
	for _, be := range sqldtest.Backends(b) {
		for _, group := range []int{1, defaultMaxGroup} {
			e, err := open(testCtx(b), be.URL, "", Options{Create: true}, tuning{maxGroup: group})
			if err != nil {
				b.Fatal(err)
			}
			acct := abi.Int64(int64(group))
			run(b, e,
				stmt("CREATE TABLE IF NOT EXISTS accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)"),
				stmt("CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY, account INTEGER NOT NULL, delta INTEGER NOT NULL)"),
				stmt("INSERT INTO accounts VALUES (?, ?)", acct, abi.Int64(1<<62)),
			)
			batch := &abi.Batch{Steps: []abi.Statement{
				stmt("UPDATE accounts SET balance = balance - 1 WHERE id = ? AND balance >= 1", acct),
				when(stmt("INSERT INTO entries (account, delta) VALUES (?, -1)", acct), abi.Cond{Step: 0, Test: abi.Affected}),
				stmt("SELECT balance FROM accounts WHERE id = ?", acct),
			}}
			name := fmt.Sprintf("%s/group=%d", be.Name, group)
			b.Run(name+"/serial", func(b *testing.B) {
				ctx := testCtx(b)
				for b.Loop() {
					if res := e.Exec(ctx, batch); res.Err != "" {
						b.Fatal(res.Err)
					}
				}
			})
			b.Run(name+"/parallel32", func(b *testing.B) {
				ctx := testCtx(b)
				b.SetParallelism(32 / max(1, testingProcs()))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if res := e.Exec(ctx, batch); res.Err != "" {
							b.Error(res.Err)
							return
						}
					}
				})
			})
			b.Run(name+"/read1/parallel32", func(b *testing.B) {
				ctx := testCtx(b)
				read := &abi.Batch{Steps: []abi.Statement{batch.Steps[2]}}
				b.SetParallelism(32 / max(1, testingProcs()))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if res := e.Exec(ctx, read); res.Err != "" {
							b.Error(res.Err)
							return
						}
					}
				})
			})
			e.Close()
		}
	}
}

func testingProcs() int { return runtime.GOMAXPROCS(0) }
