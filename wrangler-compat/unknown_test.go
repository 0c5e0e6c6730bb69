//go:build linux

package wranglercompat_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
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
	// Forwards everything; drops the connection instead of the answer of a
	// request that writes 'lost'.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		out, _ := http.NewRequest(r.Method, sqld+r.URL.RequestURI(), bytes.NewReader(body))
		out.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if bytes.Contains(body, []byte("lost")) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		if bytes.Contains(body, []byte("cut")) { // the answer begins, then the connection goes
			w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
			w.WriteHeader(resp.StatusCode)
			w.Write(answer[:len(answer)/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(answer)
	}))
	defer proxy.Close()

	r := one(t, proxy.URL,
		abi.Statement{SQL: "INSERT INTO kv VALUES ('lost', 1)"},
		abi.Statement{SQL: "INSERT INTO kv VALUES ('lost-too', 2)"})
	if !strings.HasPrefix(r.Err, "ledger: commit outcome unknown") {
		t.Fatalf("a transaction whose answer was lost: %q", r.Err)
	}
	if n := count(t, sqld, "kv"); n != 2 {
		t.Fatalf("%d rows: the transaction did commit", n)
	}
	r = one(t, proxy.URL, abi.Statement{SQL: "INSERT INTO kv VALUES ('cut', 3)"}, abi.Statement{SQL: "INSERT INTO kv VALUES ('cut-too', 4)"})
	if !strings.HasPrefix(r.Err, "ledger: commit outcome unknown") {
		t.Fatalf("a transaction whose answer was cut short: %q", r.Err)
	}
	r = one(t, "http://"+testenv.FreeAddr(t), abi.Statement{SQL: "INSERT INTO kv VALUES ('never', 5)"})
	if r.Err == "" || strings.Contains(r.Err, "outcome unknown") {
		t.Fatalf("a ledger that cannot be reached: %q", r.Err)
	}
}
