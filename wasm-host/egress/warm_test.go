package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"decisiongateway/shared/abi"
)

// connCounter is a server that counts the connections it accepted and
// answers every request 200 "ok".
type connCounter struct {
	srv      *httptest.Server
	accepted atomic.Int64
}

func newConnCounter(t *testing.T, tlsServer bool) *connCounter {
	t.Helper()
	cc := &connCounter{}
	cc.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	cc.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			cc.accepted.Add(1)
		}
	}
	if tlsServer {
		cc.srv.StartTLS()
	} else {
		cc.srv.Start()
	}
	t.Cleanup(cc.srv.Close)
	return cc
}

// The connection Warm opens carries the first request: the server accepted
// it before any request, and accepts no other for the request.
func TestWarmConnectionCarriesTheFirstRequest(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		name := map[bool]string{false: "http", true: "https"}[useTLS]
		t.Run(name, func(t *testing.T) {
			cc := newConnCounter(t, useTLS)
			c := New([]string{Origin(cc.srv.URL)}, nil)
			if useTLS {
				pool := x509.NewCertPool()
				pool.AddCert(cc.srv.Certificate())
				c.http.TLSConfig = &tls.Config{RootCAs: pool}
			}
			defer c.Close()
			if err := c.Warm(context.Background(), cc.srv.URL+"/v1"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool { return cc.accepted.Load() == 1 }, "the warm connection to be accepted")
			res := c.Fetch(context.Background(), &abi.FetchRequest{Method: "GET", URL: cc.srv.URL + "/v1/models"})
			if res.Status != 200 || string(res.Body) != "ok" {
				t.Fatalf("fetch: %d %q %s %s", res.Status, res.Body, res.ErrKind, res.ErrMsg)
			}
			if n := cc.accepted.Load(); n != 1 {
				t.Fatalf("%d connections for the first request, want the warm one alone", n)
			}
		})
	}
}

// An https server whose certificate the client does not trust is not
// warmed: the handshake fails as the request's would, and nothing is kept.
func TestWarmVerifiesTheServer(t *testing.T) {
	cc := newConnCounter(t, true)
	c := New([]string{Origin(cc.srv.URL)}, nil)
	defer c.Close()
	if err := c.Warm(context.Background(), cc.srv.URL); err == nil {
		t.Fatal("warmed a connection to a server with an untrusted certificate")
	}
	if c.warm.take(cc.srv.Listener.Addr().String()) != nil {
		t.Fatal("kept a connection whose handshake failed")
	}
}

// Warm dials only an allowed origin.
func TestWarmOnlyAnAllowedOrigin(t *testing.T) {
	cc := newConnCounter(t, false)
	c := New([]string{"http://elsewhere.invalid"}, nil)
	defer c.Close()
	for _, u := range []string{cc.srv.URL, "ftp://" + cc.srv.Listener.Addr().String(), "not a url"} {
		if err := c.Warm(context.Background(), u); err == nil {
			t.Errorf("Warm(%q) = nil, want refused", u)
		}
	}
	time.Sleep(20 * time.Millisecond) // a dial, had there been one, would have been accepted by now
	if n := cc.accepted.Load(); n != 0 {
		t.Fatalf("%d connections to an origin not allowed", n)
	}
}

// A warm connection no request takes is closed when its time is up, and
// one kept per address is enough.
func TestWarmConnectionExpires(t *testing.T) {
	var w warmConns
	mine, theirs := net.Pipe()
	w.put("up:80", mine, 20*time.Millisecond)
	spare, spareEnd := net.Pipe()
	w.put("up:80", spare, time.Hour)
	for _, end := range []net.Conn{spareEnd, theirs} {
		end.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := end.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("read on the far end: %v, want EOF (closed)", err)
		}
	}
	if w.take("up:80") != nil {
		t.Fatal("an expired connection was handed out")
	}
	// Once closed, nothing more is kept.
	w.closeAll()
	late, lateEnd := net.Pipe()
	w.put("up:80", late, time.Hour)
	lateEnd.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := lateEnd.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a connection put after close: read %v, want EOF (closed)", err)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkFirstFetch times a new client's first request to an https
// server, with and without the connection Warm opened beforehand (not
// timed): what the first decision after a host starts waits for.
//
//	go test ./wasm-host/egress -run '^$' -bench FirstFetch
func BenchmarkFirstFetch(b *testing.B) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	for _, warm := range []bool{false, true} {
		b.Run(map[bool]string{false: "cold", true: "warm"}[warm], func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				c := New([]string{Origin(srv.URL)}, nil)
				c.http.TLSConfig = &tls.Config{RootCAs: pool}
				if warm {
					if err := c.Warm(context.Background(), srv.URL); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if res := c.Fetch(context.Background(), &abi.FetchRequest{Method: "GET", URL: srv.URL}); res.Status != 200 {
					b.Fatalf("%d %s", res.Status, res.ErrMsg)
				}
				b.StopTimer()
				c.Close()
				b.StartTimer()
			}
		})
	}
}
