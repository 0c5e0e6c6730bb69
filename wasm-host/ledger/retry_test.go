package ledger

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/tursodatabase/libsql-client-go/libsql"

	"decisiongateway/shared/abi"
	"decisiongateway/wasm-host/sqldtest"
)

// holdWriteLock takes the database's write lock from a separate connection,
// as another host's transaction would, and returns the function that
// releases it.
func holdWriteLock(t *testing.T, url string) (release func()) {
	t.Helper()
	c, err := libsql.NewConnector(url)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(testCtx(t), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := conn.ExecContext(testCtx(t), "COMMIT"); err != nil {
			t.Error(err)
		}
		conn.Close()
	}
}

// A batch that meets another host's write lock waits for it and then
// commits. On the embedded file the executor's busy_timeout is set to 0 so
// that SQLite reports SQLITE_BUSY at once and the executor's own retry loop
// does the waiting; sqld waits for the lock on the server side.
func TestWaitsForAnotherHostsWriteLock(t *testing.T) {
	for _, b := range sqldtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			url := b.URL
			if b.Name == "embedded" {
				url += "?_pragma=busy_timeout(0)"
			}
			e := openT(t, url)
			run(t, e, stmt("CREATE TABLE t (x)"))
			release := holdWriteLock(t, b.URL)
			done := make(chan abi.BatchResult)
			go func() {
				done <- e.Exec(testCtx(t), &abi.Batch{Steps: []abi.Statement{stmt("INSERT INTO t VALUES (1)")}})
			}()
			time.Sleep(200 * time.Millisecond) // let the batch meet the lock
			release()
			if res := <-done; res.Err != "" {
				t.Fatalf("batch failed instead of waiting for the lock: %s", res.Err)
			}
			if n := scalar(t, e, "SELECT count(*) FROM t"); n != 1 {
				t.Errorf("%d rows, want 1", n)
			}
		})
	}
}

// While the lock stays taken, the caller's context bounds the retries and the
// batch fails having committed nothing. Embedded only: sqld holds a waiting
// BEGIN on the server, and a batch whose BEGIN was sent runs to its outcome.
func TestBusyRetriesStopAtContextDeadline(t *testing.T) {
	url := "file:" + filepath.Join(t.TempDir(), "ledger.db")
	e := openT(t, url+"?_pragma=busy_timeout(0)")
	run(t, e, stmt("CREATE TABLE t (x)"))
	release := holdWriteLock(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res := e.Exec(ctx, &abi.Batch{Steps: []abi.Statement{stmt("INSERT INTO t VALUES (1)")}})
	release()
	if res.Err == "" {
		t.Fatal("batch succeeded while another host held the lock")
	}
	if n := scalar(t, e, "SELECT count(*) FROM t"); n != 0 {
		t.Errorf("failed batch left %d rows", n)
	}
}
