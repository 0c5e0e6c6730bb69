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
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"decisiongateway/shared/contract"
	"decisiongateway/testkit/testenv"
	"decisiongateway/wasm-host/routes"
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

// nodeBin returns wrangler-compat/node_modules/.bin, which holds node (22),
// wrangler and workerd, or fails naming the installer.
func nodeBin(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(testenv.Root(t), "wrangler-compat", "node_modules", ".bin")
	for _, tool := range []string{"node", "wrangler", "workerd"} {
		if !isExecutable(filepath.Join(bin, tool)) {
			t.Fatalf("%s is missing from %s: run scripts/install-node-tools.sh", tool, bin)
		}
	}
	return bin
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
	cmd.Dir = filepath.Join(testenv.Root(t), "wrangler-compat")
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
	log    *testenv.Output
	exited chan struct{}
}

func startProcess(t testing.TB, name string, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{name: name, cmd: cmd, log: &testenv.Output{}, exited: make(chan struct{})}
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

// waitReadyz polls url's /readyz until it answers 200, failing after a
// deadline generous for a loaded machine.
func waitReadyz(t testing.TB, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/readyz not 200 after 30 s (last: %v)", url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// server is a host under test.
type server struct {
	name    string
	url     string
	startup time.Duration
	log     *testenv.Output // everything the host printed
}

// startWrangler generates the Workers of every built function from the
// wazero host's route table (offline flavour: AI bound to the local
// stand-in), gives each the settings as its .dev.vars, and runs them all in
// one `wrangler dev` on a free loopback port, the front Worker first. It
// returns once the front answers (a response carrying X-Request-Id, which
// only the shim sets). settings["AI_REST_URL"] goes to the AI stand-in;
// the front gets the plain settings and the ledger's secrets, as `workers
// dev` gives them. genArgs are more arguments for `workers generate`.
func startWrangler(t testing.TB, settings map[string]string, genArgs ...string) server {
	t.Helper()
	bin := nodeBin(t)
	out := generateWorkers(t, true, genArgs...)
	m := readManifest(t, out)
	var vars, front strings.Builder
	for k, v := range settings {
		if k != "AI_REST_URL" {
			fmt.Fprintf(&vars, "%s=%s\n", k, strconv.Quote(v))
		}
		if k != "AI_REST_URL" && (k == "LIBSQL_URL" || k == "LIBSQL_AUTH_TOKEN" || !contract.IsSecret(k)) {
			fmt.Fprintf(&front, "%s=%s\n", k, strconv.Quote(v))
		}
	}
	writeFile(t, filepath.Join(out, m.Front.Dir, ".dev.vars"), front.String())
	configs := []string{"-c", filepath.Join(out, m.Front.Dir, "wrangler.toml")}
	for _, f := range m.Functions {
		dir := filepath.Join(out, f.Dir)
		writeFile(t, filepath.Join(dir, ".dev.vars"), vars.String())
		configs = append(configs, "-c", filepath.Join(dir, "wrangler.toml"))
	}
	if m.AI != nil {
		dir := filepath.Join(out, m.AI.Dir)
		writeFile(t, filepath.Join(dir, ".dev.vars"), "AI_REST_URL="+strconv.Quote(settings["AI_REST_URL"])+"\n")
		configs = append(configs, "-c", filepath.Join(dir, "wrangler.toml"))
	}
	addr := testenv.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	args := append([]string{
		filepath.Join(testenv.Root(t), "wrangler-compat", "node_modules", "wrangler", "bin", "wrangler.js"), "dev",
	}, configs...)
	args = append(args,
		"--ip", "127.0.0.1", "--port", port,
		"--inspector-port", strconv.Itoa(mustFreePort(t)),
		"--persist-to", t.TempDir(),
		"--show-interactive-dev-session=false",
		"--log-level", "info",
	)
	cmd := exec.Command(filepath.Join(bin, "node"), args...)
	cmd.Dir = out
	cmd.Env = wranglerEnv(t, bin)
	p := startProcess(t, "wrangler dev", cmd)
	url := "http://" + addr
	took, err := p.waitReady(url+"/__ready", func(r *http.Response) bool { return r.Header.Get("X-Request-Id") != "" })
	if err != nil {
		t.Fatalf("%v\n%s", err, p.log.String())
	}
	return server{name: "workerd", url: url, startup: took, log: p.log}
}

// wranglerEnv is the environment wrangler runs in during tests: offline,
// with its state under the test's temporary directories.
func wranglerEnv(t testing.TB, bin string) []string {
	env := append(cleanEnv(), offlineEnv...)
	return append(env,
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		// wrangler keeps logs, a device id and its dev registry under the
		// user's config directory; a test leaves the user's alone.
		"WRANGLER_LOG_PATH="+t.TempDir(),
		"XDG_CONFIG_HOME="+t.TempDir(),
	)
}

// startGateway runs the wazero host `bin/gateway serve` from the repository
// root with env as its settings.
func startGateway(t testing.TB, env map[string]string) server {
	t.Helper()
	bin := testenv.Binary(t)
	addr := testenv.FreeAddr(t)
	environ := append(cleanEnv(), "SERVICE_ADDR="+addr, "SERVICE_ORIGIN=http://"+addr, "GATEWAY_DATA_DIR="+t.TempDir())
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	// As an operator would: the host serves only a ledger `admin migrate`
	// has prepared.
	migrate := exec.Command(bin, "admin", "migrate")
	migrate.Dir, migrate.Env = testenv.Root(t), environ
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("bin/gateway admin migrate: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Dir = testenv.Root(t)
	cmd.Env = environ
	p := startProcess(t, "bin/gateway serve", cmd)
	url := "http://" + addr
	took, err := p.waitReady(url+"/__ready", func(r *http.Response) bool { return r.Header.Get("X-Request-Id") != "" })
	if err != nil {
		t.Fatalf("%v\n%s", err, p.log.String())
	}
	return server{name: "wazero", url: url, startup: took, log: p.log}
}

// workersTool builds the Workers generator and release tool
// (wrangler-compat/workers) once per test binary.
var workersTool = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "workers-tool-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "workers")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goBin, "build", "-o", out, "./workers")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./wrangler-compat/workers: %v\n%s", err, b)
	}
	return out, nil
})

// runWorkers runs the Workers tool from the repository root and returns its
// standard output; a failure fails the test with its output.
func runWorkers(t testing.TB, args ...string) string {
	t.Helper()
	return runWorkersEnv(t, nil, args...)
}

// runWorkersEnv is runWorkers with more environment variables.
func runWorkersEnv(t testing.TB, env []string, args ...string) string {
	t.Helper()
	tool, err := workersTool()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tool, args...)
	cmd.Dir = testenv.Root(t)
	cmd.Env = append(wranglerEnv(t, nodeBin(t)), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("workers %s: %v\n%s\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// generateWorkers writes the Workers of every built function into a fresh
// directory, from the route table `bin/gateway routes` prints, as an
// operator would, and returns the directory.
func generateWorkers(t testing.TB, local bool, extra ...string) string {
	t.Helper()
	root := testenv.Root(t)
	routesJSON, err := exec.Command(testenv.Binary(t), "routes").Output()
	if err != nil {
		t.Fatalf("bin/gateway routes: %v", err)
	}
	dir := t.TempDir()
	routesFile := filepath.Join(dir, "routes.json")
	writeFile(t, routesFile, string(routesJSON))
	out := filepath.Join(dir, "workers")
	args := []string{"generate", "-routes", routesFile, "-functions", filepath.Join(root, "build", "functions"), "-out", out}
	if local {
		args = append(args, "-local")
	}
	runWorkers(t, append(args, extra...)...)
	return out
}

// manifest is the part of the generator's workers.json the tests read.
type manifest struct {
	Front     struct{ Name, Dir string }
	AI        *struct{ Name, Dir string }
	Functions []struct {
		Name, Dir, Function, Version, SHA256 string
		Routes                               []routes.Route
	}
	Missing []string
}

func readManifest(t testing.TB, out string) manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, "workers.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustFreePort(t testing.TB) int {
	_, port, _ := net.SplitHostPort(testenv.FreeAddr(t))
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

// logHolding returns s's log once it holds every one of needles (the
// request ids of answers whose lines must be there before it is
// searched): wrangler passes a Worker's console lines on after the answer.
func logHolding(t testing.TB, s server, needles ...string) string {
	t.Helper()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		text := s.log.String()
		missing := ""
		for _, n := range needles {
			if !strings.Contains(text, n) {
				missing = n
			}
		}
		if missing == "" {
			return text
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("%s: %q is not in the log:\n%s", s.name, missing, text)
		}
	}
}
