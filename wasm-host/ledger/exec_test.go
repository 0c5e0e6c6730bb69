package ledger

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"decisiongateway/shared/abi"
)

func TestBatchCommitsAllOrNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		run(t, e, stmt("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)"))

		failing := map[string]abi.Statement{
			"constraint":    stmt("INSERT INTO t (name) VALUES (?)", abi.String("a")),
			"missing table": stmt("INSERT INTO nowhere VALUES (1)"),
			"not null":      stmt("INSERT INTO t (name) VALUES (NULL)"),
		}
		for name, third := range failing {
			t.Run(name, func(t *testing.T) {
				res := e.Exec(testCtx(t), &abi.Batch{Steps: []abi.Statement{
					stmt("INSERT INTO t (name) VALUES (?)", abi.String("a")),
					stmt("INSERT INTO t (name) VALUES (?)", abi.String("b")),
					third,
				}})
				if res.Err == "" {
					t.Fatal("batch with a failing third step succeeded")
				}
				if !strings.HasPrefix(res.Err, "ledger: step 2: ") {
					t.Errorf("error %q does not name step 2", res.Err)
				}
				if res.Steps != nil {
					t.Errorf("failed batch returned step results: %+v", res.Steps)
				}
				if n := scalar(t, e, "SELECT count(*) FROM t"); n != 0 {
					t.Errorf("steps 0 and 1 left %d rows behind", n)
				}
			})
		}

		steps := run(t, e,
			stmt("INSERT INTO t (name) VALUES (?)", abi.String("a")),
			stmt("INSERT INTO t (name) VALUES (?)", abi.String("b")),
			stmt("SELECT count(*) FROM t"),
		)
		if got := steps[2].First().AsInt(); got != 2 {
			t.Errorf("a later step saw %d rows of the same batch, want 2", got)
		}
		if n := scalar(t, e, "SELECT count(*) FROM t"); n != 2 {
			t.Errorf("after a good batch: %d rows, want 2", n)
		}
	})
}

// A failing batch must not change the outcome of batches that ran in the same
// transaction (group commit): each of many concurrent batches either commits
// entirely or not at all, according to its own SQL only.
func TestFailingBatchDoesNotAffectOthers(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		run(t, e, stmt("CREATE TABLE t (k TEXT PRIMARY KEY)"), stmt("CREATE TABLE log (k TEXT NOT NULL)"))
		run(t, e, stmt("INSERT INTO t VALUES ('taken')"))

		const n = 40
		errs := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				key := fmt.Sprintf("k%d", i)
				if i%3 == 0 {
					key = "taken" // violates the primary key in step 1
				}
				res := e.Exec(testCtx(t), &abi.Batch{Steps: []abi.Statement{
					stmt("INSERT INTO log VALUES (?)", abi.String(fmt.Sprintf("k%d", i))),
					stmt("INSERT INTO t VALUES (?)", abi.String(key)),
				}})
				errs[i] = res.Err
			})
		}
		wg.Wait()
		for i := range n {
			logged := scalar(t, e, "SELECT count(*) FROM log WHERE k = ?", abi.String(fmt.Sprintf("k%d", i)))
			if i%3 == 0 {
				if errs[i] == "" || logged != 0 {
					t.Errorf("batch %d: err %q, %d log rows; want an error and none", i, errs[i], logged)
				}
			} else if errs[i] != "" || logged != 1 {
				t.Errorf("batch %d: err %q, %d log rows; want success and one", i, errs[i], logged)
			}
		}
	})
}

func TestMalformedBatchIsRefusedBeforeRunning(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		run(t, e, stmt("CREATE TABLE t (x)"))
		cases := map[string][]abi.Statement{
			"two statements":        {stmt("INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)")},
			"transaction control":   {stmt("COMMIT")},
			"savepoint":             {stmt("SAVEPOINT s")},
			"too few arguments":     {stmt("INSERT INTO t VALUES (?)")},
			"too many arguments":    {stmt("INSERT INTO t VALUES (?)", abi.Int64(1), abi.Int64(2))},
			"named parameter":       {stmt("INSERT INTO t VALUES (:x)", abi.Int64(1))},
			"numbered parameter":    {stmt("INSERT INTO t VALUES (?1)", abi.Int64(1))},
			"condition on itself":   {when(stmt("INSERT INTO t VALUES (1)"), abi.Cond{Step: 0, Test: abi.Affected})},
			"condition on later":    {when(stmt("INSERT INTO t VALUES (1)"), abi.Cond{Step: 1, Test: abi.Affected}), stmt("SELECT 1")},
			"unknown test":          {stmt("SELECT 1"), when(stmt("INSERT INTO t VALUES (1)"), abi.Cond{Step: 0, Test: 9})},
			"unknown value kind":    {stmt("INSERT INTO t VALUES (?)", abi.Value{Kind: 7})},
			"empty statement":       {stmt("  -- nothing\n")},
			"unterminated string":   {stmt("INSERT INTO t VALUES ('x)")},
			"good step then refuse": {stmt("INSERT INTO t VALUES (1)"), stmt("ROLLBACK")},
		}
		for name, steps := range cases {
			res := e.Exec(testCtx(t), &abi.Batch{Steps: steps})
			if res.Err == "" {
				t.Errorf("%s: accepted", name)
			}
		}
		if n := scalar(t, e, "SELECT count(*) FROM t"); n != 0 {
			t.Errorf("refused batches wrote %d rows", n)
		}
	})
}

func TestEmptyBatchSucceeds(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		res := openT(t, url).Exec(testCtx(t), &abi.Batch{})
		if res.Err != "" || len(res.Steps) != 0 {
			t.Fatalf("empty batch: %+v", res)
		}
	})
}

func TestCancelledContextCommitsNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		run(t, e, stmt("CREATE TABLE t (x)"))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res := e.Exec(ctx, &abi.Batch{Steps: []abi.Statement{stmt("INSERT INTO t VALUES (1)")}})
		if res.Err == "" {
			t.Fatal("batch with a cancelled context succeeded")
		}
		if n := scalar(t, e, "SELECT count(*) FROM t"); n != 0 {
			t.Errorf("cancelled batch wrote %d rows", n)
		}
	})
}

func TestExecAfterCloseFails(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		e := openT(t, url)
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		res := e.Exec(testCtx(t), &abi.Batch{Steps: []abi.Statement{stmt("SELECT 1")}})
		if res.Err != ErrClosed.Error() {
			t.Fatalf("Exec after Close: %q, want %q", res.Err, ErrClosed)
		}
		if err := e.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
}
