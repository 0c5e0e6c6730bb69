//go:build linux

package wranglercompat_test

import (
	"bytes"
	"strings"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/sqldtest"
	"decisiongateway/testkit/testenv"
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
