package egress

import (
	"context"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"decisiongateway/shared/abi"
)

// upstreamLog is a server that records each request's line and credential
// and counts the connections it accepted.
type upstreamLog struct {
	srv   *httptest.Server
	conns atomic.Int64
	mu    sync.Mutex
	seen  []string // "METHOD URI auth=<Authorization>"
}

func newUpstreamLog(t *testing.T, tls bool) *upstreamLog {
	u := &upstreamLog{}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r.Method+" "+r.RequestURI+" auth="+r.Header.Get("Authorization"))
		u.mu.Unlock()
		w.Write([]byte("ok"))
	}))
	// Let the handler see `OPTIONS *` (Go's server answers it itself).
	u.srv.Config.DisableGeneralOptionsHandler = true
	u.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			u.conns.Add(1)
		}
	}
	if tls {
		u.srv.StartTLS()
	} else {
		u.srv.Start()
	}
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstreamLog) requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.seen...)
}

// The connection Preconnect opens is the one the first fetch uses, over
// TLS too: the upstream sees one connection, an `OPTIONS *` without the
// credential, then the fetch with it.
func TestPreconnectLeavesTheFirstFetchAConnection(t *testing.T) {
	for _, tls := range []bool{false, true} {
		up := newUpstreamLog(t, tls)
		c := ForOperator(up.srv.URL+"/v1", "sk-upstream", "", "")
		if tls {
			pool := x509.NewCertPool()
			pool.AddCert(up.srv.Certificate())
			c.HTTP.Transport.(*http.Transport).TLSClientConfig.RootCAs = pool
		}
		if !c.Preconnect(context.Background(), Origin(up.srv.URL)) {
			t.Fatalf("tls=%v: preconnect got no answer", tls)
		}
		res := c.Fetch(context.Background(), &abi.FetchRequest{Method: "POST", URL: up.srv.URL + "/v1/decide", Credential: abi.CredentialUpstream})
		if res.Status != 200 || res.ErrKind != "" {
			t.Fatalf("tls=%v: fetch %+v", tls, res)
		}
		got := up.requests()
		want := []string{"OPTIONS * auth=", "POST /v1/decide auth=Bearer sk-upstream"}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("tls=%v: upstream saw %q, want %q", tls, got, want)
		}
		if n := up.conns.Load(); n != 1 {
			t.Errorf("tls=%v: %d connections, want 1", tls, n)
		}
	}
}

// Only allowed origins are preconnected; an unreachable one is no error.
func TestPreconnectStaysWithinTheAllowList(t *testing.T) {
	up := newUpstreamLog(t, false)
	c := ForOperator("http://127.0.0.1:9/v1", "sk-upstream", "", "")
	if c.Preconnect(context.Background(), Origin(up.srv.URL)) || len(up.requests()) != 0 || up.conns.Load() != 0 {
		t.Errorf("preconnected an origin outside the allow-list: %q", up.requests())
	}
	if c.Preconnect(context.Background(), "http://127.0.0.1:9") {
		t.Error("preconnect to a closed port reported an answer")
	}
}
