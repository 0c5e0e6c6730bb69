package runtime

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/sqldtest"
	"decisiongateway/testkit/testenv"
)

// newSocketFunction runs the socket build of the test guest
// (build/testguests-socket) with env as its environment.
func newSocketFunction(t *testing.T, size int, env ...string) (*Function, *fakeServices) {
	t.Helper()
	return newGuestFunction(t, Options{CacheDir: socketCache(t), Sockets: &Sockets{Environ: env}}, "testguests-socket/testguest.wasm", size)
}

// handleWithin runs req under a deadline and fails the test if the call
// is not over well after it.
func handleWithin(t *testing.T, f *Function, deadline time.Duration, req abi.Request) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := f.Handle(ctx, &req)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: not stopped by its deadline", req.Path)
		return nil
	}
}

func TestSocketBuildStoppedByDeadline(t *testing.T) {
	// An upstream that never answers, which the guest's egress allows.
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	f, _ := newSocketFunction(t, 1, "UPSTREAM_URL="+srv.URL)
	for _, req := range []abi.Request{
		{Path: "/spin", Query: "n=0"},                                                    // computing
		{Path: "/sleep", Query: "ms=600000"},                                             // waiting on a timer
		{Path: "/fetch", Headers: abi.Headers{{Name: "x-target", Value: srv.URL + "/"}}}, // waiting on a socket
	} {
		before := f.Stats().Discarded
		if err := handleWithin(t, f, 300*time.Millisecond, req); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: err = %v, want deadline exceeded", req.Path, err)
		}
		if d := f.Stats().Discarded - before; d != 1 {
			t.Fatalf("%s: discarded %d instances, want 1", req.Path, d)
		}
		if resp := call(t, f, abi.Request{Path: "/echo", Body: []byte("alive")}); string(resp.Body) != "alive" {
			t.Fatalf("after %s: %q", req.Path, resp.Body)
		}
	}
}

func TestSocketBuildReachesLedgerAndConfinesKey(t *testing.T) {
	const key = "sk-socket-test-4a1d"
	// What the servers saw, in their own goroutines.
	var (
		mu  sync.Mutex
		got []string
	)
	saw := func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.Header.Get("Authorization"))
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		saw(r)
		w.Write([]byte("answer"))
	}))
	defer up.Close()
	// Another origin the guest may reach (the mail service's): the
	// operator's upstream key must never be sent there.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { saw(r) }))
	defer other.Close()
	f, fs := newSocketFunction(t, 1, "LIBSQL_URL="+sqldtest.Start(t), "UPSTREAM_URL="+up.URL,
		"UPSTREAM_API_KEY="+key, "MAIL_URL="+other.URL, "SERVICE_RATE_LIMIT=77")

	resp := call(t, f, abi.Request{Path: "/ledger", Body: []byte("ünïcode")})
	if want := `{"err":"","int":-42,"textSame":true,"blobSame":true}`; string(resp.Body) != want {
		t.Fatalf("ledger: %s, want %s", resp.Body, want)
	}
	if resp := call(t, f, abi.Request{Path: "/config", Query: "name=SERVICE_RATE_LIMIT"}); string(resp.Body) != "77" {
		t.Fatalf("setting: %q", resp.Body)
	}
	for _, name := range []string{"UPSTREAM_API_KEY", "LIBSQL_URL", "MAIL_API_KEY"} {
		if resp := call(t, f, abi.Request{Path: "/config", Query: "name=" + name}); len(resp.Body) != 0 {
			t.Fatalf("%s read as a setting: %q", name, resp.Body)
		}
	}
	fetch := func(target, credential string) abi.Response {
		return call(t, f, abi.Request{Path: "/fetch", Query: "credential=" + credential, Headers: abi.Headers{{Name: "x-target", Value: target}}})
	}
	if r := fetch(up.URL+"/v1", "upstream"); r.Headers.Get("x-fetch-status") != "200" || string(r.Body) != "answer" {
		t.Fatalf("upstream: %v %q", r.Headers, r.Body)
	}
	if r := fetch(other.URL+"/", "upstream"); r.Headers.Get("x-fetch-error") != abi.FetchErrDenied {
		t.Fatalf("the upstream key for another origin: %v", r.Headers)
	}
	if r := fetch("http://"+testenv.FreeAddr(t)+"/", ""); r.Headers.Get("x-fetch-error") != abi.FetchErrDenied {
		t.Fatalf("an origin not allowed: %v", r.Headers)
	}
	mu.Lock()
	seen := append([]string(nil), got...)
	mu.Unlock()
	if len(seen) != 1 || seen[0] != "Bearer "+key {
		t.Fatalf("Authorization seen by the servers: %q", seen)
	}
	// The module's log lines reach the host through a pipe, after the call.
	call(t, f, abi.Request{Path: "/log", RequestID: "rid-7"})
	for wait := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		fs.mu.Lock()
		logs, out := fs.logs, fs.out.String()
		fs.mu.Unlock()
		if len(logs) > 0 || time.Since(wait) > 10*time.Second {
			if len(logs) != 1 || logs[0].Message != "hello from the guest" {
				t.Fatalf("logs: %+v (output %q)", logs, out)
			}
			return
		}
	}
}

func TestEngineRefusesTheOtherBuild(t *testing.T) {
	ctx := context.Background()
	cache := socketCache(t)
	for _, c := range []struct {
		opts Options
		wasm string
	}{
		{Options{CacheDir: cache}, "testguests-socket/testguest.wasm"},
		{Options{CacheDir: cache, Sockets: &Sockets{}}, "testguests/testguest.wasm"},
	} {
		e, err := NewEngine(ctx, c.opts, (&fakeServices{}).services())
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Compile(ctx, "testguest", testenv.Wasm(t, c.wasm))
		e.Close(ctx)
		if err == nil || !strings.Contains(err.Error(), "build") {
			t.Fatalf("%s: err = %v, want a refusal naming the build", c.wasm, err)
		}
	}
}

// socketCache is wazero's compilation cache for the socket build's tests,
// kept between runs: compiling a 13 MB module costs seconds.
func socketCache(t *testing.T) string {
	return filepath.Join(testenv.Root(t), "build", "test-data-socket", "wazero-cache")
}

// TestSocketBuildChecksItsSettings: on a runtime of the operator's own the
// environment reaches the module unchecked, so the module checks it as a
// host does at start. A valid value is read in its canonical spelling; an
// invalid one makes every request 503 misconfigured, naming the setting,
// instead of being read as 0 or as no upstream.
func TestSocketBuildChecksItsSettings(t *testing.T) {
	f, _ := newSocketFunction(t, 1, "UPSTREAM_KIND=Vendor", "SERVICE_RATE_LIMIT=7")
	if resp := call(t, f, abi.Request{Path: "/config", Query: "name=UPSTREAM_KIND"}); resp.Status != 200 || string(resp.Body) != "vendor" {
		t.Errorf("UPSTREAM_KIND=Vendor read as %d %q, want \"vendor\"", resp.Status, resp.Body)
	}

	f, _ = newSocketFunction(t, 1, "SERVICE_RATE_LIMIT=abc")
	for _, req := range []abi.Request{{Path: "/echo", Body: []byte("alive")}, {Path: "/config", Query: "name=SERVICE_RATE_LIMIT"}} {
		resp := call(t, f, req)
		if resp.Status != 503 || resp.Headers.Get("x-service-error-code") != "misconfigured" || !strings.Contains(string(resp.Body), "SERVICE_RATE_LIMIT") {
			t.Errorf("%s with SERVICE_RATE_LIMIT=abc: %d %v %s", req.Path, resp.Status, resp.Headers, resp.Body)
		}
	}
}

// TestSocketBuildRedactsSecretsItLogs: the module replaces the secrets of
// its environment in what it logs before the line leaves it, also a
// secret holding characters JSON escapes. Nothing here redacts after it
// (the wazero host's own redaction is in wasm-host/app), which is what a
// runtime of the operator's own reading the module's stderr sees.
func TestSocketBuildRedactsSecretsItLogs(t *testing.T) {
	const key = `sk-<&>"\-9f`
	f, fs := newSocketFunction(t, 1, "UPSTREAM_API_KEY="+key)
	call(t, f, abi.Request{Path: "/log", Body: []byte("before " + key + " after")})
	for wait := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		fs.mu.Lock()
		logs := append([]abi.LogRecord(nil), fs.logs...)
		fs.mu.Unlock()
		if len(logs) >= 2 || time.Since(wait) > 10*time.Second {
			if len(logs) != 2 {
				t.Fatalf("logs: %+v", logs)
			}
			for _, l := range logs {
				text := l.Message
				for _, a := range l.Attrs {
					text += " " + a.Name + "=" + a.Value
				}
				if strings.Contains(text, key) || strings.Contains(text, "-9f") {
					t.Errorf("the secret reached the log: %q", text)
				}
			}
			return
		}
	}
}

// TestSocketBuildResolvesHostNames: the module dials the names in its
// settings (a Turso ledger, a vendor's API) through the runtime's
// resolver (sock_getaddrinfo), not Go's own, which on wasip1 can read
// neither /etc/hosts nor /etc/resolv.conf and resolved no name at all.
func TestSocketBuildResolvesHostNames(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("answer")) }))
	defer up.Close()
	named := func(u string) string { return strings.Replace(u, "127.0.0.1", "localhost", 1) }
	f, _ := newSocketFunction(t, 1, "LIBSQL_URL="+named(sqldtest.Start(t)), "UPSTREAM_URL="+named(up.URL))
	if r := call(t, f, abi.Request{Path: "/fetch", Headers: abi.Headers{{Name: "x-target", Value: named(up.URL) + "/"}}}); r.Headers.Get("x-fetch-status") != "200" || string(r.Body) != "answer" {
		t.Errorf("upstream at localhost: %v %q", r.Headers, r.Body)
	}
	if r := call(t, f, abi.Request{Path: "/ledger", Body: []byte("x")}); !strings.HasPrefix(string(r.Body), `{"err":""`) {
		t.Errorf("ledger at localhost: %s", r.Body)
	}
}
