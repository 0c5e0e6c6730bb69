package ledger

import (
	"strings"
	"sync"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/netdelay"
	"decisiongateway/testkit/sqldtest"
)

// farLedger is a real sqld made to look oneWay away by a relay, and an
// executor on it that has measured the distance (so it pipelines).
func farLedger(t *testing.T, oneWay time.Duration) (*Executor, *sqldtest.Server) {
	t.Helper()
	srv := sqldtest.StartServer(t)
	relay, err := netdelay.Start(srv.URL, oneWay)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Close)
	e := openT(t, relay.URL)
	run(t, e, stmt("SELECT 1")) // opens the WebSocket, whose ping measures the distance
	waitUntil(t, "the ledger is measured far", e.hrana.far)
	if e.depth() != pipelineDepth {
		t.Fatalf("depth %d on a far ledger, want %d", e.depth(), pipelineDepth)
	}
	return e, srv
}

// On a ledger beside the host the writer waits for each answer: its groups
// grow meanwhile, which costs sqld less than more requests would. Eight
// callers, a hundred batches, none written behind another.
func TestNearLedgerIsNotPipelined(t *testing.T) {
	e := openT(t, sqldtest.Start(t))
	run(t, e, stmt("CREATE TABLE n (x INTEGER)"))
	// A busy machine may answer the first pings late; the shortest since
	// is what counts, and one within farRTT comes.
	waitUntil(t, "a sqld on this machine is measured near", func() bool { return e.hrana.rtt.Load() != 0 && !e.hrana.far() })
	if e.depth() != 1 {
		t.Fatalf("depth %d on a near ledger, want 1", e.depth())
	}
	before := e.Stats()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 / 8 {
				if res := e.Exec(testCtx(t), batchOf(stmt("INSERT INTO n VALUES (1)"), stmt("SELECT count(*) FROM n"))); res.Err != "" {
					t.Error(res.Err)
				}
			}
		})
	}
	wg.Wait()
	if got := e.Stats().Sub(before); got.Pipelined != 0 || got.Batches != 96 {
		t.Errorf("%d batches, %d written behind another; want 96, none", got.Batches, got.Pipelined)
	}
}

// pipelined sends a, waits until its request is written (and, the ledger
// being far, not yet answered), then sends b, which must be written behind
// it. It returns both outcomes.
func pipelined(t *testing.T, e *Executor, a, b *abi.Batch) (ra, rb abi.BatchResult) {
	t.Helper()
	before := e.Stats()
	done := make(chan abi.BatchResult, 1)
	go func() { done <- e.Exec(testCtx(t), a) }()
	waitUntil(t, "the first request is written", func() bool { return e.Stats().Sub(before).RoundTrips > 0 })
	rb = e.Exec(testCtx(t), b)
	ra = <-done
	if got := e.Stats().Sub(before).Pipelined; got != 1 {
		t.Fatalf("%d groups written behind another, want 1 (the second batch)", got)
	}
	return ra, rb
}

// On a far ledger the writer does not wait for one group's answer before
// writing the next: two batches a round trip apart are both answered about
// one round trip after the second was sent, and each gets its own result.
// Behind another request even a lone statement runs in a transaction of
// its own (translateIn), which the results do not show.
func TestRemoteWriterWritesTheNextGroupBeforeTheAnswer(t *testing.T) {
	e, _ := farLedger(t, 150*time.Millisecond)
	run(t, e, stmt("CREATE TABLE p (who TEXT PRIMARY KEY, n INTEGER)"))
	ra, rb := pipelined(t, e,
		batchOf(stmt("INSERT INTO p VALUES ('a', 1)"), stmt("SELECT count(*) FROM p")),
		batchOf(stmt("INSERT INTO p VALUES ('b', 2) RETURNING n")))
	if ra.Err != "" || rb.Err != "" {
		t.Fatalf("results: %+v / %+v", ra, rb)
	}
	if n := ra.Steps[1].Rows[0][0].AsInt(); n != 1 {
		t.Errorf("the first batch counted %d rows, want 1 (its own)", n)
	}
	if n := rb.Steps[0].Rows[0][0].AsInt(); n != 2 {
		t.Errorf("the second batch returned %d, want 2", n)
	}
	if n := scalar(t, e, "SELECT sum(n) FROM p"); n != 3 {
		t.Errorf("sum %d, want 3", n)
	}
}

// A group that fails is settled only after the answer to the one written
// behind it is in, and its retries run on a stream with nothing in flight:
// here the first batch's COMMIT is refused (a deferred foreign key), the
// second, written behind it, commits, and the first is told why it failed.
func TestPipelinedGroupBehindAFailedCommitKeepsItsOutcome(t *testing.T) {
	e, _ := farLedger(t, 150*time.Millisecond)
	run(t, e, stmt("CREATE TABLE parent (id INTEGER PRIMARY KEY)"),
		stmt("CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)"),
		stmt("INSERT INTO parent VALUES (1)"))
	ra, rb := pipelined(t, e,
		batchOf(stmt("INSERT INTO child VALUES (10, 99)"), stmt("INSERT INTO child VALUES (11, 1)")),
		batchOf(stmt("INSERT INTO child VALUES (20, 1)"), stmt("INSERT INTO child VALUES (21, 1)")))
	if !strings.Contains(strings.ToLower(ra.Err), "foreign key") {
		t.Errorf("the batch with an orphan: %q, want its COMMIT's foreign key error", ra.Err)
	}
	if rb.Err != "" {
		t.Errorf("the batch behind it: %s", rb.Err)
	}
	rows := query(t, e, "SELECT id FROM child ORDER BY id")
	if len(rows) != 2 || rows[0][0].AsInt() != 20 || rows[1][0].AsInt() != 21 {
		t.Errorf("child rows %v, want 20 and 21 only", rows)
	}
}

// sqld killed with two requests in flight: neither outcome is known, so
// each batch fails (never a success that did not commit, never applied
// twice by a retry), and the writer serves again once sqld is back.
func TestPipelinedGroupsWhenSqldDies(t *testing.T) {
	e, srv := farLedger(t, 150*time.Millisecond)
	run(t, e, stmt("CREATE TABLE k (who TEXT PRIMARY KEY)"))
	before := e.Stats()
	done := make(chan abi.BatchResult, 1)
	go func() {
		done <- e.Exec(testCtx(t), batchOf(stmt("INSERT INTO k VALUES ('a')"), stmt("INSERT INTO k VALUES ('a2')")))
	}()
	waitUntil(t, "the first request is written", func() bool { return e.Stats().Sub(before).RoundTrips > 0 })
	second := make(chan abi.BatchResult, 1)
	go func() { second <- e.Exec(testCtx(t), batchOf(stmt("INSERT INTO k VALUES ('b')"))) }()
	waitUntil(t, "the second request is written behind it", func() bool { return e.Stats().Sub(before).Pipelined > 0 })
	srv.Kill()
	ra, rb := <-done, <-second
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	run(t, e, stmt("INSERT INTO k VALUES ('c')"))
	present := map[string]bool{}
	for _, r := range query(t, e, "SELECT who FROM k") {
		present[r[0].AsString()] = true
	}
	for _, c := range []struct {
		res  abi.BatchResult
		rows []string
	}{{ra, []string{"a", "a2"}}, {rb, []string{"b"}}} {
		if c.res.Err == "" {
			for _, w := range c.rows {
				if !present[w] {
					t.Errorf("batch writing %v reported success, %q is missing", c.rows, w)
				}
			}
			continue
		}
		n := 0
		for _, w := range c.rows {
			if present[w] {
				n++
			}
		}
		if n != 0 && n != len(c.rows) {
			t.Errorf("batch writing %v half applied: %v", c.rows, present)
		}
		if !strings.Contains(c.res.Err, "unknown") {
			t.Errorf("batch writing %v: %q, want its outcome said to be unknown", c.rows, c.res.Err)
		}
	}
	if !present["c"] {
		t.Error("the batch after the restart is missing")
	}
}
