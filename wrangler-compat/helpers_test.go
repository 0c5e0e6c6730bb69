//go:build linux

// Package wranglercompat_test checks the Workers shim against real parts:
// workerd through wrangler, a real sqld, the TinyGo modules of build/, and
// the wazero host bin/gateway as the reference. Missing tools fail the tests
// with the command that installs them; they never skip, because a skipped
// host would let a difference between the two hosts through.
package wranglercompat_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a server may take to answer its first
// request. wrangler dev bundles the Worker and starts workerd, a few seconds
// on an idle machine; the margin is for a loaded CI box with 2 cores.
const startTimeout = 90 * time.Second

// offlineEnv keeps wrangler from calling home: no metrics, no error reports,
// no request.cf lookup, no interactive prompts.
var offlineEnv = []string{
	"WRANGLER_SEND_METRICS=false",
	"WRANGLER_SEND_ERROR_REPORTS=false",
	"CLOUDFLARE_CF_FETCH_ENABLED=false",
	"CI=true",
}

// repoRoot is the directory holding go.mod, one up from this package.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("repository root not found from %s: %v", dir, err)
	}
	return dir
}

// nodeBin returns wrangler-compat/node_modules/.bin, which holds node (22),
// wrangler and workerd, or fails naming the installer.
func nodeBin(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(repoRoot(t), "wrangler-compat", "node_modules", ".bin")
	for _, tool := range []string{"node", "wrangler", "workerd"} {
		if !isExecutable(filepath.Join(bin, tool)) {
			t.Fatalf("%s is missing from %s: run scripts/install-node-tools.sh", tool, bin)
		}
	}
	return bin
}

// functionWasm returns the path of build/functions/NAME.wasm or fails naming
// the build target.
func functionWasm(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(repoRoot(t), "build", "functions", name+".wasm")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%v: run `make build` (it builds build/functions/*.wasm with TinyGo)", err)
	}
	return p
}

// gatewayBinary returns $GATEWAY_BIN or bin/gateway, or fails naming the
// build target.
func gatewayBinary(t testing.TB) string {
	t.Helper()
	p := os.Getenv("GATEWAY_BIN")
	if p == "" {
		p = filepath.Join(repoRoot(t), "bin", "gateway")
	}
	if !isExecutable(p) {
		t.Fatalf("the wazero host %s is missing: run `make build` (or set GATEWAY_BIN)", p)
	}
	return p
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// runNode runs a script with the Node 22 of node_modules and returns its
// standard output; a failure fails the test with standard error.
func runNode(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	bin := nodeBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "node"), args...)
	cmd.Dir = filepath.Join(repoRoot(t), "wrangler-compat")
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// process is a server started by a test, in its own process group so that
// its children (workerd under wrangler) stop with it.
type process struct {
	name   string
	cmd    *exec.Cmd
	log    *syncBuffer
	exited chan struct{}
}

func startProcess(t testing.TB, name string, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{name: name, cmd: cmd, log: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout = p.log
	cmd.Stderr = p.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s log:\n%s", name, p.log.String())
		}
	})
	return p
}

// stop ends the process group: SIGTERM first so wrangler can stop workerd
// cleanly, then SIGKILL.
func (p *process) stop() {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.exited
	}
	// workerd may outlive wrangler by a moment; make sure the group is gone.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// waitReady polls url until ready accepts an answer, the process exits or
// startTimeout passes, and returns how long it took.
func (p *process) waitReady(url string, ready func(*http.Response) bool) (time.Duration, error) {
	start := time.Now()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		if resp, err := client.Get(url); err == nil {
			ok := ready(resp)
			resp.Body.Close()
			if ok {
				return time.Since(start), nil
			}
		}
		select {
		case <-p.exited:
			return 0, fmt.Errorf("%s exited before it was ready", p.name)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Since(start) > startTimeout {
			return 0, fmt.Errorf("%s not ready at %s after %s", p.name, url, startTimeout)
		}
	}
}

// freeAddr returns a loopback address with a port that was free a moment
// ago. Another process may take it first; the server then fails to start and
// the test says so.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// sqldVersion is the release scripts/install-sqld.sh installs.
const sqldVersion = "0.24.1-pre.42"

// startSqld starts a real libSQL server on a fresh database and returns its
// http URL. It stands in for wasm-host/sqldtest, which Go's
// internal-package rule keeps out of reach of this directory; it finds the
// binary the same way ($SQLD_BIN, else the installer's cache path).
func startSqld(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("SQLD_BIN")
	if bin == "" {
		cache := os.Getenv("DG_CACHE")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache", "decision-gateway")
		}
		bin = filepath.Join(cache, "sqld-"+sqldVersion, "sqld")
	}
	if !isExecutable(bin) {
		t.Fatalf("sqld not found at %s: run scripts/install-sqld.sh (or set SQLD_BIN)", bin)
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--db-path", filepath.Join(dir, "data.sqld"), "--http-listen-addr", addr, "--no-welcome")
	cmd.Dir = dir
	p := startProcess(t, "sqld", cmd)
	url := "http://" + addr
	if _, err := p.waitReady(url+"/health", func(r *http.Response) bool { return r.StatusCode == http.StatusOK }); err != nil {
		t.Fatalf("%v\n%s", err, p.log.String())
	}
	return url
}

// server is a host under test.
type server struct {
	name    string
	url     string
	startup time.Duration
}

// startWrangler runs `wrangler dev` offline on a free loopback port with the
// given vars and returns once the Worker itself answers (a response carrying
// X-Request-Id, which only the shim sets).
func startWrangler(t testing.TB, vars map[string]string) server {
	t.Helper()
	bin := nodeBin(t)
	functionWasm(t, "config")
	dir := filepath.Join(repoRoot(t), "wrangler-compat")
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	args := []string{
		filepath.Join(dir, "node_modules", "wrangler", "bin", "wrangler.js"), "dev",
		"--ip", "127.0.0.1", "--port", port,
		"--inspector-port", strconv.Itoa(mustFreePort(t)),
		"--persist-to", t.TempDir(),
		"--show-interactive-dev-session=false",
		"--log-level", "info",
	}
	for k, v := range vars {
		args = append(args, "--var", k+":"+v)
	}
	cmd := exec.Command(filepath.Join(bin, "node"), args...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), offlineEnv...)
	cmd.Env = append(cmd.Env,
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		// wrangler keeps logs, a device id and its dev registry under the
		// user's config directory; a test leaves the user's alone.
		"WRANGLER_LOG_PATH="+t.TempDir(),
		"XDG_CONFIG_HOME="+t.TempDir(),
	)
	p := startProcess(t, "wrangler dev", cmd)
	url := "http://" + addr
	took, err := p.waitReady(url+"/__ready", func(r *http.Response) bool { return r.Header.Get("X-Request-Id") != "" })
	if err != nil {
		t.Fatalf("%v\n%s", err, p.log.String())
	}
	return server{name: "workerd", url: url, startup: took}
}

// startGateway runs the wazero host `bin/gateway serve` from the repository
// root with env as its settings.
func startGateway(t testing.TB, env map[string]string) server {
	t.Helper()
	bin := gatewayBinary(t)
	functionWasm(t, "config")
	addr := freeAddr(t)
	cmd := exec.Command(bin, "serve")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(cleanEnv(), "SERVICE_ADDR="+addr, "SERVICE_ORIGIN=http://"+addr)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := startProcess(t, "bin/gateway serve", cmd)
	url := "http://" + addr
	took, err := p.waitReady(url+"/__ready", func(r *http.Response) bool { return r.Header.Get("X-Request-Id") != "" })
	if err != nil {
		t.Fatalf("%v\n%s", err, p.log.String())
	}
	return server{name: "wazero", url: url, startup: took}
}

func mustFreePort(t testing.TB) int {
	_, port, _ := net.SplitHostPort(freeAddr(t))
	n, _ := strconv.Atoi(port)
	return n
}

// cleanEnv is this process's environment without the settings a host reads,
// so a developer's shell cannot change what the test compares.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "SERVICE_"), strings.HasPrefix(name, "UPSTREAM_"),
			strings.HasPrefix(name, "LIBSQL_"), strings.HasPrefix(name, "GATEWAY_"),
			strings.HasPrefix(name, "WRANGLER_"), strings.HasPrefix(name, "CLOUDFLARE_"):
			continue
		}
		out = append(out, kv)
	}
	return out
}

// syncBuffer collects a child's output, written from exec's goroutines while
// a failing test may read it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
