//go:build linux

package wranglercompat_test

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/sqldtest"
	"decisiongateway/testkit/testenv"
	"decisiongateway/wasm-host/ledger"
)

// A batch whose COMMIT reached sqld but whose answer did not come back may
// have committed, and src/ledger.js says so as the wazero host does
// (`ledger: commit outcome unknown`, shared/batch.OutcomeUnknown); a ledger
// that cannot be reached at all committed nothing and says that instead.
func TestLedgerJSReportsACommitWithoutAnswerAsUnknown(t *testing.T) {
	nodeBin(t)
	sqld := sqldtest.Start(t)
	mustOK(t, one(t, sqld, abi.Statement{SQL: "CREATE TABLE kv (k TEXT PRIMARY KEY, v)"}))
	// Drops the connection instead of the answer of a request that writes
	// 'lost', cuts short the answer of one that writes 'cut'.
	proxy := sqldtest.AnswerProxy(t, sqld, func(body []byte) sqldtest.Fate {
		switch {
		case bytes.Contains(body, []byte("lost")):
			return sqldtest.Drop
		case bytes.Contains(body, []byte("cut")):
			return sqldtest.Cut
		}
		return sqldtest.Forward
	})

	r := one(t, proxy,
		abi.Statement{SQL: "INSERT INTO kv VALUES ('lost', 1)"},
		abi.Statement{SQL: "INSERT INTO kv VALUES ('lost-too', 2)"})
	if !strings.HasPrefix(r.Err, "ledger: commit outcome unknown") {
		t.Fatalf("a transaction whose answer was lost: %q", r.Err)
	}
	if n := count(t, sqld, "kv"); n != 2 {
		t.Fatalf("%d rows: the transaction did commit", n)
	}
	r = one(t, proxy, abi.Statement{SQL: "INSERT INTO kv VALUES ('cut', 3)"}, abi.Statement{SQL: "INSERT INTO kv VALUES ('cut-too', 4)"})
	if !strings.HasPrefix(r.Err, "ledger: commit outcome unknown") {
		t.Fatalf("a transaction whose answer was cut short: %q", r.Err)
	}
	r = one(t, "http://"+testenv.FreeAddr(t), abi.Statement{SQL: "INSERT INTO kv VALUES ('never', 5)"})
	if r.Err == "" || strings.Contains(r.Err, "outcome unknown") {
		t.Fatalf("a ledger that cannot be reached: %q", r.Err)
	}
}

// A proxy's 504 (or 502) to a batch it passed on may come after the batch
// committed: both ledgers say the outcome is unknown, and neither sends
// the batch again, which could apply it twice. The wazero host's retried
// it as refused and reported "nothing was charged" for a reservation that
// stood.
func TestBothLedgersReportAProxyTimeoutAsUnknown(t *testing.T) {
	nodeBin(t)
	sqld := sqldtest.Start(t)
	mustOK(t, one(t, sqld, abi.Statement{SQL: "CREATE TABLE kv (k TEXT PRIMARY KEY, v)"}))
	var seen atomic.Int32
	proxy := sqldtest.AnswerProxy(t, sqld, func(body []byte) sqldtest.Fate {
		if bytes.Contains(body, []byte("timed-out")) {
			seen.Add(1)
			return sqldtest.GatewayTimeout
		}
		return sqldtest.Forward
	})
	insert := func(k string) abi.Batch {
		return abi.Batch{Steps: []abi.Statement{
			{SQL: "INSERT INTO kv VALUES (?, 1)", Args: []abi.Value{abi.String(k)}},
			{SQL: "UPDATE kv SET v = v + 1 WHERE k = ?", Args: []abi.Value{abi.String(k)}},
		}}
	}
	js := execJS(t, proxy, false, insert("timed-out-js"))[0]
	led, err := ledger.Open(context.Background(), proxy, "")
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	b := insert("timed-out-go")
	wazero := led.Exec(context.Background(), &b)
	for name, r := range map[string]abi.BatchResult{"src/ledger.js": js, "wasm-host/ledger": wazero} {
		if !strings.HasPrefix(r.Err, "ledger: commit outcome unknown") {
			t.Errorf("%s: a batch answered 504 after it ran: %q", name, r.Err)
		}
	}
	if n := count(t, sqld, "kv"); n != 2 {
		t.Errorf("%d rows, want the 2 batches that ran", n)
	}
	if n := seen.Load(); n != 2 {
		t.Errorf("the proxy saw %d timed-out requests, want 2 (one a batch, never sent again)", n)
	}
}
