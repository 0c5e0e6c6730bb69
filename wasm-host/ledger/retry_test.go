package ledger

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tursodatabase/libsql-client-go/libsql"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/sqldtest"
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

// refusingProxy stands in front of a real sqld and answers the first n
// requests as sqld does when it has no connection to give: 429 "Timed out
// while opening database connection", having run nothing.
func refusingProxy(t *testing.T, sqld string, n int) (url string, refused *atomic.Int64) {
	t.Helper()
	target, err := neturl.Parse(sqld)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	refused = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refused.Add(1) <= int64(n) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":"Timed out while opening database connection"}`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, refused
}

// An operator command meeting sqld's 429 refusals, at open and on a batch
// (the lone write and the multi-step batch alike, since nothing ran), rides
// them out with Patience; the serving default gives up after its retries.
func TestRefusalsAreRetriedWithPatience(t *testing.T) {
	sqld := sqldtest.Start(t)
	url, refused := refusingProxy(t, sqld, 4)
	e, err := OpenWith(testCtx(t), url, "", Options{Patience: OperatorPatience})
	if err != nil {
		t.Fatalf("open through 4 refusals: %v", err)
	}
	defer e.Close()
	refused.Store(-3) // the next 3 requests are refused too
	if res := e.Exec(testCtx(t), batchOf(stmt("CREATE TABLE t (x)"))); res.Err != "" {
		t.Fatalf("lone write through 3 refusals: %s", res.Err)
	}
	refused.Store(-3)
	res := e.Exec(testCtx(t), batchOf(stmt("INSERT INTO t VALUES (1)"), stmt("INSERT INTO t VALUES (2)")))
	if res.Err != "" {
		t.Fatalf("batch through 3 refusals: %s", res.Err)
	}
	if n := scalar(t, e, "SELECT count(*) FROM t"); n != 2 {
		t.Fatalf("%d rows, want 2: a refused batch ran twice or not at all", n)
	}

	url2, refused2 := refusingProxy(t, sqld, 0)
	impatient := openT(t, url2)
	refused2.Store(-10)
	if res := impatient.Exec(testCtx(t), batchOf(stmt("INSERT INTO t VALUES (3)"), stmt("INSERT INTO t VALUES (4)"))); !strings.Contains(res.Err, "429") {
		t.Fatalf("serving default: %q, want the refusal after its retries", res.Err)
	}
	if n := scalar(t, e, "SELECT count(*) FROM t"); n != 2 {
		t.Fatalf("%d rows after a refused batch, want 2", n)
	}
}
