// Package testenv finds the build outputs tests run against. Tests use the
// real TinyGo modules, so a missing module is a failure with the command that
// builds it, never a skip.
package testenv

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Root returns the repository root (the directory holding go.mod).
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("testenv: go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Wasm reads a built module, e.g. "functions/config.wasm" or
// "testguests/testguest.wasm", from build/.
func Wasm(t testing.TB, rel string) []byte {
	t.Helper()
	p := filepath.Join(Root(t), "build", rel)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("testenv: %v (run `make build` first)", err)
	}
	return b
}

// Binary returns the path of bin/gateway (or $GATEWAY_BIN).
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("GATEWAY_BIN"); p != "" {
		return p
	}
	p := filepath.Join(Root(t), "bin", "gateway")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("testenv: %v (run `make build` first)", err)
	}
	return p
}

// Output collects a child process's output, written from exec's goroutines
// while a failing test may read it.
type Output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

// Reset forgets what was written.
func (o *Output) Reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Reset()
}

func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// FreeAddr returns a loopback address whose port was free a moment ago.
// Another process may take it first; the server then fails to start and
// the test says so.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// WaitFor polls cond every 10 ms until it holds, and fails the test if it
// has not within 15 s: for a state another process or goroutine reaches.
func WaitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 15s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// RoomInWindow waits, when fewer than need are left of the current fixed
// window of length window (rate limits count in windows that start at
// multiples of it since the epoch), until the next one begins: for a test
// whose requests must all count in one window.
func RoomInWindow(t testing.TB, window, need time.Duration) {
	t.Helper()
	if left := window - time.Duration(time.Now().UnixNano()%int64(window)); left < need {
		time.Sleep(left + 50*time.Millisecond)
	}
}
