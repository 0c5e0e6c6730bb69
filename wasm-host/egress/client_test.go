package egress

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"decisiongateway/shared/abi"
)

func fetchFrom(t *testing.T, h http.HandlerFunc, r *abi.FetchRequest) abi.FetchResponse {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := New([]string{Origin(srv.URL)}, map[string]Credential{"upstream": {Token: "sk-up", Origin: Origin(srv.URL)}})
	r.URL = srv.URL + r.URL
	return c.Fetch(context.Background(), r)
}

func header(hs abi.Headers, name string) []string {
	var out []string
	for _, h := range hs {
		if h.Name == name {
			out = append(out, h.Value)
		}
	}
	return out
}

// What the guest sends reaches the upstream, except what only the host
// may set (authorization, cookie, host, accept-encoding) and what it
// frames itself; what the upstream answers reaches the guest with
// lower-case names, every value of a repeated header, no cookie or
// authorization, and no header the upstream did not send.
func TestHeadersBothWays(t *testing.T) {
	var got http.Header
	var gotBody, gotMethod, gotPath string
	res := fetchFrom(t, func(w http.ResponseWriter, r *http.Request) {
		got, gotMethod, gotPath = r.Header.Clone(), r.Method, r.URL.RequestURI()
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		w.Header()["Content-Type"] = nil // no Content-Type at all
		w.Header().Add("X-Many", "one")
		w.Header().Add("X-Many", "two")
		w.Header().Set("Set-Cookie", "s=1")
		w.Header().Set("Authorization", "Bearer from-upstream")
		w.WriteHeader(201)
		w.Write([]byte("made"))
	}, &abi.FetchRequest{Method: "PUT", URL: "/a/../b%2Fc?q=1", Body: []byte(`{"x":1}`), Headers: abi.Headers{
		{Name: "content-type", Value: "application/json"}, {Name: "x-trace", Value: "t1"},
		{Name: "authorization", Value: "Bearer guest"}, {Name: "cookie", Value: "c=1"},
		{Name: "host", Value: "evil.example"}, {Name: "accept-encoding", Value: "br"},
		{Name: "content-length", Value: "999"},
	}})
	if res.ErrKind != "" || res.Status != 201 || string(res.Body) != "made" {
		t.Fatalf("got %+v", res)
	}
	if gotMethod != "PUT" || gotPath != "/a/../b%2Fc?q=1" || gotBody != `{"x":1}` {
		t.Errorf("upstream got %s %s %q", gotMethod, gotPath, gotBody)
	}
	if got.Get("Content-Type") != "application/json" || got.Get("X-Trace") != "t1" {
		t.Errorf("guest headers not forwarded: %v", got)
	}
	for _, name := range []string{"Authorization", "Cookie"} {
		if v := got.Values(name); len(v) != 0 {
			t.Errorf("%s forwarded: %q", name, v)
		}
	}
	if v := got.Values("Accept-Encoding"); len(v) != 1 || v[0] != "gzip" {
		t.Errorf("Accept-Encoding: %q, want the host's own gzip", v)
	}
	if many := header(res.Headers, "x-many"); len(many) != 2 || many[0] != "one" || many[1] != "two" {
		t.Errorf("x-many: %q in %+v", many, res.Headers)
	}
	for _, name := range []string{"set-cookie", "authorization", "content-type"} {
		if v := header(res.Headers, name); len(v) != 0 {
			t.Errorf("%s reached the guest: %q", name, v)
		}
	}
}

// A redirect is the guest's answer, not followed.
func TestRedirectIsNotFollowed(t *testing.T) {
	var calls atomic.Int32
	res := fetchFrom(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}, &abi.FetchRequest{URL: "/here", Credential: "upstream"})
	if res.Status != 302 || len(header(res.Headers, "location")) != 1 || calls.Load() != 1 {
		t.Fatalf("got %+v after %d calls", res, calls.Load())
	}
}

// An answer longer than the fetch allows is refused, never handed over in
// part; the host's ceiling applies to a fetch that asks for more.
func TestAnswerOverItsLimitIsRefused(t *testing.T) {
	big := strings.Repeat("x", DefaultMaxBytes+1)
	for _, tc := range []struct {
		name     string
		body     string
		maxBytes uint32
		chunked  bool
		want     string
	}{
		{"within", "12345", 5, false, ""},
		{"over", "123456", 5, false, abi.FetchErrTooLarge},
		{"over, chunked", "123456", 5, true, abi.FetchErrTooLarge},
		{"over the ceiling", big, 2 * DefaultMaxBytes, false, abi.FetchErrTooLarge},
		{"over the ceiling, chunked", big, 0, true, abi.FetchErrTooLarge},
	} {
		res := fetchFrom(t, func(w http.ResponseWriter, r *http.Request) {
			if tc.chunked {
				w.Write([]byte(tc.body[:1]))
				w.(http.Flusher).Flush()
				w.Write([]byte(tc.body[1:]))
				return
			}
			w.Write([]byte(tc.body))
		}, &abi.FetchRequest{URL: "/", MaxBytes: tc.maxBytes})
		if res.ErrKind != tc.want || (tc.want == "" && string(res.Body) != tc.body) || (tc.want != "" && len(res.Body) != 0) {
			t.Errorf("%s: kind %q, %d bytes, %s", tc.name, res.ErrKind, len(res.Body), res.ErrMsg)
		}
	}
}

// A fetch ends at its own timeout or at the context's deadline, whichever
// comes first, as a timeout.
func TestFetchEndsAtItsDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c := New([]string{Origin(srv.URL)}, nil)
	start := time.Now()
	if res := c.Fetch(context.Background(), &abi.FetchRequest{URL: srv.URL, TimeoutMS: 100}); res.ErrKind != abi.FetchErrTimeout {
		t.Errorf("own timeout: %+v", res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if res := c.Fetch(ctx, &abi.FetchRequest{URL: srv.URL, TimeoutMS: 60_000}); res.ErrKind != abi.FetchErrTimeout {
		t.Errorf("context's deadline: %+v", res)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %v", took)
	}
}

func TestUnreachableAndRefusedDestinations(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	c := New([]string{Origin(closed)}, nil)
	if res := c.Fetch(context.Background(), &abi.FetchRequest{URL: closed + "/"}); res.ErrKind != abi.FetchErrConnect {
		t.Errorf("closed port: %+v", res)
	}
	for _, u := range []string{"http://other.example/", "http://user:pw@" + ln.Addr().String() + "/", "::not a url", ""} {
		if res := c.Fetch(context.Background(), &abi.FetchRequest{URL: u}); res.ErrKind != abi.FetchErrDenied {
			t.Errorf("%q: %+v", u, res)
		}
	}
}

// An upstream that closes each kept connection after answering, without
// saying so (no Connection: close), leaves the client a dead connection to
// reuse. The request that finds it dead goes again on a new one: every
// POST is answered, and the upstream saw each exactly once.
func TestDeadKeptConnectionIsRetriedOnNewOne(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var seen atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				n := seen.Add(1)
				body := "answer " + string(rune('0'+n))
				io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: "+string(rune('0'+len(body)))+"\r\n\r\n"+body)
				// Give the client time to put the connection back in its
				// pool before it dies, as an idle timeout would.
				time.Sleep(20 * time.Millisecond)
			}()
		}
	}()
	origin := "http://" + ln.Addr().String()
	c := New([]string{origin}, nil)
	for i := 1; i <= 3; i++ {
		res := c.Fetch(context.Background(), &abi.FetchRequest{Method: "POST", URL: origin + "/", Body: []byte("q")})
		if res.ErrKind != "" || string(res.Body) != "answer "+string(rune('0'+i)) {
			t.Fatalf("request %d: %+v", i, res)
		}
		time.Sleep(50 * time.Millisecond) // the connection is dead now
	}
	if n := seen.Load(); n != 3 {
		t.Errorf("upstream saw %d requests, want 3", n)
	}
}

// The host asks for gzip and hands the guest the decoded answer, without
// the headers that described the compressed one; an answer that inflates
// past the fetch's limit is refused, and a corrupt one is a broken
// connection.
func TestGzipAnswersAreDecodedWithinTheLimit(t *testing.T) {
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	answer := []byte(`{"answers":{"q1":"yes"}}`)
	bomb := gz(make([]byte, 2*DefaultMaxBytes))
	for _, tc := range []struct {
		name     string
		body     []byte
		maxBytes uint32
		want     string
	}{
		{"decoded", gz(answer), 0, ""},
		{"inflates past the fetch's limit", gz(answer), 10, abi.FetchErrTooLarge},
		{"inflates past the ceiling", bomb, 0, abi.FetchErrTooLarge},
		{"corrupt", []byte("not gzip at all"), 0, abi.FetchErrConnect},
	} {
		var asked string
		res := fetchFrom(t, func(w http.ResponseWriter, r *http.Request) {
			asked = r.Header.Get("Accept-Encoding")
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("X-Kept", "1")
			w.Write(tc.body)
		}, &abi.FetchRequest{URL: "/", MaxBytes: tc.maxBytes, Credential: "upstream",
			Headers: abi.Headers{{Name: "accept-encoding", Value: "br"}}})
		if asked != "gzip" {
			t.Errorf("%s: asked for %q", tc.name, asked)
		}
		if res.ErrKind != tc.want {
			t.Errorf("%s: %+v", tc.name, res)
			continue
		}
		if tc.want == "" {
			if string(res.Body) != string(answer) || len(header(res.Headers, "content-encoding")) != 0 ||
				len(header(res.Headers, "content-length")) != 0 || len(header(res.Headers, "x-kept")) != 1 {
				t.Errorf("%s: %q %+v", tc.name, res.Body, res.Headers)
			}
		}
	}
}
