//go:build linux

package wranglercompat_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// ledgerToken is LIBSQL_AUTH_TOKEN on both hosts: sqld here does not ask
// for one, but both hosts send it, and no log may hold it.
const ledgerToken = "lt-parity-ledger-token-5be21d"

// ledgerProxy stands between a host and its sqld as an HTTP-only proxy
// would (it refuses WebSocket upgrades, so both hosts send Hrana over
// HTTP). Its mode decides what becomes of a request that writes a
// decision's reservation: "echo" answers 500 with the credential the
// request came with in the message, "lost" forwards it (sqld commits it)
// and answers 504 as a proxy that gave up waiting would; anything else is
// forwarded as it is.
type ledgerProxy struct {
	mode atomic.Value
	srv  *httptest.Server
}

func newLedgerProxy(t *testing.T, sqld string) *ledgerProxy {
	p := &ledgerProxy{}
	p.mode.Store("")
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			http.Error(w, "this proxy routes HTTP only", http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(r.Body)
		reservation := bytes.Contains(body, []byte("decision_reservations"))
		if reservation && p.mode.Load() == "echo" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			io.WriteString(w, `{"error":"token refused: `+r.Header.Get("Authorization")+`"}`)
			return
		}
		fwd, _ := http.NewRequest(r.Method, sqld+r.URL.RequestURI(), bytes.NewReader(body))
		fwd.Header = r.Header.Clone()
		fwd.Header.Del("Accept-Encoding") // the answer is passed on decoded
		resp, err := http.DefaultClient.Do(fwd)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		if reservation && p.mode.Load() == "lost" {
			http.Error(w, "upstream timed out", http.StatusGatewayTimeout)
			return
		}
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		w.Write(answer)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// TestLedgerFailuresAgreeOnBothHosts: a ledger (a proxy in front of it)
// that refuses a decision's reservation with the credential in its message,
// and one that runs the reservation but answers 504, get the same answers
// on both hosts: nothing charged for the first, the outcome left to
// reconciliation for the second (it did commit), and the credential in
// neither log.
func TestLedgerFailuresAgreeOnBothHosts(t *testing.T) {
	var proxies [2]*ledgerProxy
	p := startPairWith(t, "vendor", "/v1", answerVendor, func(i int, env map[string]string) {
		proxies[i] = newLedgerProxy(t, env["LIBSQL_URL"])
		env["LIBSQL_URL"] = proxies[i].srv.URL
		env["LIBSQL_AUTH_TOKEN"] = ledgerToken
	})
	key := p.each(func(i int) string { return p.admin(i, "key", "ledger@example.test") })
	withKey := func(i int) []string { return bearer(key[i]) }
	before := p.balances("ledger@example.test")

	for _, px := range proxies {
		px.mode.Store("echo")
	}
	refused := p.both("POST", "/v1/service", decisionBody, withKey)
	p.same("a ledger that refuses the reservation", refused, true, decisionHeaders...)
	if refused[0].status != 503 || refused[0].header.Get("X-Service-Credits") != "0" {
		t.Errorf("refused reservation: %d %v %s", refused[0].status, refused[0].header, refused[0].body)
	}
	if after := p.balances("ledger@example.test"); after != before {
		t.Errorf("balances %v after a refused reservation, want %v", after, before)
	}

	for _, px := range proxies {
		px.mode.Store("lost")
	}
	lost := p.both("POST", "/v1/service", decisionBody, withKey)
	p.same("a reservation answered 504 after it ran", lost, true, decisionHeaders...)
	for i, a := range lost {
		if a.status != 503 || a.header.Get("X-Service-Error-Code") != "request_reconciliation_pending" || a.header.Get("X-Service-Credits") == "0" {
			t.Errorf("%s: a reservation that committed behind a 504: %d %v %s", p.sides[i].name, a.status, a.header, a.body)
		}
	}
	for _, px := range proxies {
		px.mode.Store("")
	}
	for i, s := range p.sides {
		if n := len(s.upstream.seen()); n != 0 {
			t.Errorf("%s: the vendor was called %d times without a confirmed reservation", s.name, n)
		}
		// Each host logs why the reservation failed, with the ledger's text.
		if text := logHolding(t, s.server, refused[i].header.Get("X-Request-Id"), lost[i].header.Get("X-Request-Id")); strings.Contains(text, ledgerToken) {
			t.Errorf("%s: the ledger token reached the log:\n%s", s.name, text)
		}
	}
}
