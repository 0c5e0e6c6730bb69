// Package sqldtest starts a real libSQL server (sqld) for tests, so ledger
// code is tested against the server it meets in production rather than a fake.
//
// The binary is found through $SQLD_BIN or, failing that, at the path where
// scripts/install-sqld.sh puts it. A missing binary fails the test instead of
// skipping it: a silently skipped backend would let a server-only bug through.
package sqldtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"decisiongateway/testkit/testenv"
	"decisiongateway/wasm-host/childproc"
)

// Version is the sqld release installed by scripts/install-sqld.sh.
const Version = "0.24.1-pre.42"

// readyTimeout bounds how long Start waits for /health. sqld is ready in
// well under a second on an idle machine; the margin is for a loaded CI box.
const readyTimeout = 30 * time.Second

// Binary returns the sqld executable to use: $SQLD_BIN when set, otherwise
// the installer's cache path ($DG_CACHE or ~/.cache/decision-gateway). It
// returns an error naming the installer when no executable is there.
func Binary() (string, error) {
	if p := os.Getenv("SQLD_BIN"); p != "" {
		if isExecutable(p) {
			return p, nil
		}
		return "", fmt.Errorf("SQLD_BIN=%s is not an executable file", p)
	}
	cache := os.Getenv("DG_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no SQLD_BIN and no home directory: %w", err)
		}
		cache = filepath.Join(home, ".cache", "decision-gateway")
	}
	p := filepath.Join(cache, "sqld-"+Version, "sqld")
	if !isExecutable(p) {
		return "", fmt.Errorf("sqld not found at %s and SQLD_BIN is unset: run scripts/install-sqld.sh", p)
	}
	return p, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Start launches sqld on a free loopback port with a fresh database in a
// temporary directory and returns its base URL (http://127.0.0.1:PORT). The
// server is killed when the test ends; its log is attached to the test output
// if the test failed.
func Start(t testing.TB) string { return StartServer(t).URL }

// StartServer is Start, returning the Server, which a test may kill and
// start again to prove what survives a ledger restart.
func StartServer(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Launch(bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			t.Logf("sqld %s log:\n%s", s.URL, s.Log.String())
		}
	})
	return s
}

// Server is a running sqld.
type Server struct {
	URL string // http://127.0.0.1:PORT
	PID int
	Log *testenv.Output

	bin, dir, addr string
	cmd            *exec.Cmd
	exited         chan struct{}
}

// Launch starts bin on a free loopback port with its database in dir and
// waits until it is healthy. It is Start for programs that are not tests
// (the load benchmark); the caller must call Stop.
func Launch(bin, dir string) (*Server, error) {
	// The port is found by binding :0 and releasing it, so another process
	// can take it before sqld does. A lost race shows up as sqld exiting
	// early, and is retried on a new port.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s, err := launch(bin, filepath.Join(dir, "attempt-"+strconv.Itoa(attempt)), port)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("sqld did not start: %w", lastErr)
}

func launch(bin, dir string, port int) (*Server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, addr: "127.0.0.1:" + strconv.Itoa(port), Log: &testenv.Output{}}
	s.URL = "http://" + s.addr
	if err := s.run(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) run() error {
	cmd := exec.Command(s.bin,
		"--db-path", filepath.Join(s.dir, "data.sqld"),
		"--http-listen-addr", s.addr,
		"--no-welcome",
	)
	cmd.Dir = s.dir
	childproc.DieWithParent(cmd) // a test binary killed at its timeout takes sqld with it
	s.Log.Reset()
	cmd.Stdout = s.Log
	cmd.Stderr = s.Log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited, s.PID = cmd, exited, cmd.Process.Pid
	if err := waitHealthy(s.URL, s.addr, s.Log, exited); err != nil {
		s.Kill()
		return fmt.Errorf("%w; sqld log:\n%s", err, s.Log.String())
	}
	return nil
}

// Kill stops sqld with SIGKILL and waits for it to exit.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Stop is Kill, for programs that launched the server.
func (s *Server) Stop() { s.Kill() }

// Restart starts sqld again on the same port with the same database. It may
// be called from any goroutine; the test should fail on its error.
func (s *Server) Restart() error { return s.run() }

// waitHealthy polls GET /health until it answers 200, sqld exits, or
// readyTimeout passes. A 200 alone is not enough: if another process already
// holds the port, our sqld exits while that process answers /health, and the
// test would run against someone else's database. So the answer only counts
// once our sqld has logged that it listens on addr, which it does only after
// binding, and while it is still running.
func waitHealthy(url, addr string, log *testenv.Output, exited <-chan struct{}) error {
	bound := "listening for incoming user HTTP connection on " + addr
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
		if strings.Contains(log.String(), bound) {
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
				select {
				case <-exited:
				default:
					if resp.StatusCode == http.StatusOK {
						return nil
					}
				}
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("sqld exited before it was healthy")
		case <-ctx.Done():
			return fmt.Errorf("sqld not healthy at %s after %s", url, readyTimeout)
		case <-tick.C:
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Backend is one ledger backend for a table-driven test.
type Backend struct {
	Name   string  // "embedded" or "sqld"
	URL    string  // a LIBSQL_URL value
	Server *Server // the sqld process; nil for the embedded file
}

// Backends returns a fresh embedded database file and a fresh sqld, so a
// test can run the same assertions against both. Both are removed when the
// test ends.
func Backends(t testing.TB) []Backend {
	t.Helper()
	srv := StartServer(t)
	return []Backend{
		{Name: "embedded", URL: "file:" + filepath.Join(t.TempDir(), "ledger.db")},
		{Name: "sqld", URL: srv.URL, Server: srv},
	}
}

// CountingProxy puts a reverse proxy before the libSQL server at target,
// delaying each request by delay (a server as far away as Turso is from a
// Worker), and counts the Hrana pipeline requests (…/pipeline) through it.
// A WebSocket upgrade passes through uncounted.
func CountingProxy(t testing.TB, target string, delay time.Duration) (string, *atomic.Int64) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/pipeline") {
			n.Add(1)
		}
		time.Sleep(delay)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

// Fate is what AnswerProxy does with the libSQL server's answer to one
// request.
type Fate int

const (
	// Forward passes the answer on.
	Forward Fate = iota
	// Drop closes the client's connection instead of answering: the server
	// ran the request, the client never learns it.
	Drop
	// Cut sends the answer's headers and half its body, then closes the
	// connection.
	Cut
	// GatewayTimeout answers 504 instead, as a proxy that gave up waiting
	// does: the server ran the request.
	GatewayTimeout
)

// AnswerProxy relays HTTP to the libSQL server at target, refusing
// WebSocket upgrades (so a client speaks Hrana over HTTP), and lets fate
// decide, from each request's body, what becomes of the server's answer.
func AnswerProxy(t testing.TB, target string, fate func(body []byte) Fate) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			http.Error(w, "no WebSocket here", http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(r.Body)
		out, _ := http.NewRequest(r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
		out.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch fate(body) {
		case Drop:
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		case Cut:
			w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
			w.WriteHeader(resp.StatusCode)
			w.Write(answer[:len(answer)/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		case GatewayTimeout:
			http.Error(w, "upstream timed out", http.StatusGatewayTimeout)
			return
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
