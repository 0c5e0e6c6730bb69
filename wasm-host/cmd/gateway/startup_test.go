package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/sqldtest"
	"decisiongateway/testkit/testenv"
	"decisiongateway/wasm-host/ledger"
)

// gateway runs bin/gateway in dir with env (and nothing else of this
// process's settings) and returns its combined output and whether it
// succeeded. A command that should refuse to start but serves instead is
// stopped after a minute and fails the test.
func gateway(t *testing.T, dir string, env []string, args ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.Binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "SERVICE_ADDR=127.0.0.1:0",
		"GATEWAY_FUNCTIONS_DIR=" + filepath.Join(testenv.Root(t), "build", "functions"), "GATEWAY_DATA_DIR=" + t.TempDir()}, env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("gateway %v did not exit:\n%s", args, out)
	}
	return string(out), err == nil
}

// Only `admin migrate` creates a ledger. Run from a folder without one,
// `serve` and the account commands refuse, naming the file by its absolute
// path and the command that creates it, and leave nothing behind; after
// `admin migrate` the same command works.
func TestOnlyMigrateCreatesALedger(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".data", "ledger.db")
	for _, args := range [][]string{{"serve"}, {"admin", "key", "ops@example.com"}, {"admin", "session", "ops@example.com"}, {"admin", "credits", "ops@example.com", "5", "--create"}, {"release", "status", "decide"}} {
		out, ok := gateway(t, dir, nil, args...)
		if ok || !strings.Contains(out, path) || !strings.Contains(out, "admin migrate") {
			t.Errorf("%v without a ledger: ok=%v\n%s", args, ok, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".data")); !os.IsNotExist(err) {
		t.Fatalf("a refused command created %s (%v)", filepath.Join(dir, ".data"), err)
	}
	if out, ok := gateway(t, dir, nil, "admin", "migrate"); !ok || !strings.Contains(out, path) || !strings.Contains(out, "0001_") {
		t.Fatalf("admin migrate: ok=%v\n%s", ok, out)
	}
	if out, ok := gateway(t, dir, nil, "admin", "key", "ops@example.com"); !ok {
		t.Fatalf("admin key after migrate:\n%s", out)
	}
	if out, ok := gateway(t, dir, nil, "admin", "migrate"); !ok || !strings.Contains(out, "up to date") {
		t.Fatalf("second admin migrate: ok=%v\n%s", ok, out)
	}
}

// A sqld ledger that was never migrated is refused by serve and the
// operator commands, naming it, until `admin migrate` runs.
func TestServeRefusesAnUnmigratedLedger(t *testing.T) {
	env := []string{"LIBSQL_URL=" + sqldtest.Start(t)}
	for _, args := range [][]string{{"serve"}, {"admin", "key", "ops@example.com"}} {
		out, ok := gateway(t, t.TempDir(), env, args...)
		if ok || !strings.Contains(out, "not migrated") || !strings.Contains(out, env[0][len("LIBSQL_URL="):]) {
			t.Errorf("%v on an unmigrated sqld: ok=%v\n%s", args, ok, out)
		}
	}
	if out, ok := gateway(t, t.TempDir(), env, "admin", "migrate"); !ok {
		t.Fatalf("admin migrate:\n%s", out)
	}
	if out, ok := gateway(t, t.TempDir(), env, "admin", "key", "ops@example.com"); !ok {
		t.Fatalf("admin key after migrate:\n%s", out)
	}
}

// A setting that would let the host start and then fail every request, or
// refuse every console write, stops `serve` at once with the reason.
func TestServeRefusesMisconfiguration(t *testing.T) {
	dir := t.TempDir()
	if out, ok := gateway(t, dir, nil, "admin", "migrate"); !ok {
		t.Fatalf("admin migrate:\n%s", out)
	}
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"UPSTREAM_KIND=vendor"}, "UPSTREAM_KIND=vendor needs UPSTREAM_URL"},
		{[]string{"UPSTREAM_KIND=router", "UPSTREAM_API_KEY=sk-x"}, "UPSTREAM_KIND=router needs UPSTREAM_URL"},
		{[]string{"UPSTREAM_KIND=edge"}, "UPSTREAM_KIND=edge needs UPSTREAM_URL"},
		{[]string{"UPSTREAM_KIND=openai", "UPSTREAM_URL=http://127.0.0.1:9/v1"}, `UPSTREAM_KIND="openai"`},
		{[]string{"UPSTREAM_URL=http://127.0.0.1:9/v1"}, "UPSTREAM_KIND is not"},
		{[]string{"SERVICE_ORIGIN=notaurl"}, `SERVICE_ORIGIN="notaurl"`},
		{[]string{"SERVICE_ORIGIN=https://gateway.example.com/"}, `"https://gateway.example.com"`},
		{[]string{"SERVICE_ORIGIN=https://gateway.example.com/console"}, `"https://gateway.example.com"`},
		{[]string{"SERVICE_ORIGIN=https://Gateway.example.com:443"}, `"https://gateway.example.com"`},
		{[]string{"GATEWAY_TRUSTED_PROXIES=10.0.0.0/33"}, "GATEWAY_TRUSTED_PROXIES"},
		{[]string{"GATEWAY_BODY_TIMEOUT=soon"}, "GATEWAY_BODY_TIMEOUT"},
	} {
		out, ok := gateway(t, dir, c.env, "serve")
		if ok || !strings.Contains(out, c.want) {
			t.Errorf("%v: ok=%v, want %q in\n%s", c.env, ok, c.want, out)
		}
	}
}

// A host whose address is taken stops at once with an error that names
// SERVICE_ADDR, rather than starting without a listener or retrying.
func TestServeStopsWhenItsAddressIsTaken(t *testing.T) {
	dir := t.TempDir()
	if out, ok := gateway(t, dir, nil, "admin", "migrate"); !ok {
		t.Fatalf("admin migrate:\n%s", out)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	out, ok := gateway(t, dir, []string{"SERVICE_ADDR=" + taken.Addr().String()}, "serve")
	if ok || !strings.Contains(out, "SERVICE_ADDR") || !strings.Contains(out, "address already in use") {
		t.Errorf("serve on a taken address: ok=%v, want an error naming SERVICE_ADDR in\n%s", ok, out)
	}
}

// Operator commands against a sqld that refuses with 429 "Timed out while
// opening database connection" (it ran nothing) retry with backoff instead
// of failing, at open and on every batch, and do each thing once.
func TestOperatorCommandsRideOutRefusals(t *testing.T) {
	sqld := sqldtest.Start(t)
	target, _ := url.Parse(sqld)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Every other request is refused, the first two included.
		if n := requests.Add(1); n <= 2 || n%2 == 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":"Timed out while opening database connection"}`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	env := []string{"LIBSQL_URL=" + srv.URL}
	for _, args := range [][]string{{"admin", "migrate"}, {"admin", "key", "ops@example.com"}, {"admin", "credits", "ops@example.com", "5"}, {"admin", "key", "ops@example.com", "second"}} {
		if out, ok := gateway(t, t.TempDir(), env, args...); !ok {
			t.Fatalf("%v through refusals:\n%s", args, out)
		}
	}
	led, err := ledger.Open(context.Background(), sqld, "")
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	res := led.Exec(context.Background(), &abi.Batch{Steps: []abi.Statement{
		{SQL: "SELECT count(*) FROM accounts"}, {SQL: "SELECT count(*) FROM api_keys"}, {SQL: "SELECT balance FROM accounts"},
	}})
	if res.Err != "" {
		t.Fatal(res.Err)
	}
	if a, k := res.Steps[0].Rows[0][0].AsInt(), res.Steps[1].Rows[0][0].AsInt(); a != 1 || k != 2 {
		t.Errorf("%d accounts and %d keys, want 1 and 2: a refused batch ran twice or not at all", a, k)
	}
	if requests.Load() < 10 {
		t.Errorf("only %d requests reached the proxy: the refusals were not exercised", requests.Load())
	}
}

// A sqld that starts after the host (a compose file starting both) is
// waited for, as operator commands wait (ledger.OperatorPatience), rather
// than ending serve at once.
func TestServeWaitsForASqldStartingBesideIt(t *testing.T) {
	s := sqldtest.StartServer(t)
	env := []string{"LIBSQL_URL=" + s.URL}
	if out, ok := gateway(t, t.TempDir(), env, "admin", "migrate"); !ok {
		t.Fatalf("admin migrate:\n%s", out)
	}
	s.Kill()
	go func() {
		time.Sleep(2 * time.Second)
		if err := s.Restart(); err != nil {
			t.Error(err)
		}
	}()
	start := time.Now()
	var line struct {
		Msg string `json:"msg"`
	}
	serveUntil(t, t.TempDir(), nil, env, "serving", &line, "serve")
	if line.Msg != "serving" {
		t.Fatalf("serve ended before sqld answered (after %v)", time.Since(start))
	}
	if waited := time.Since(start); waited < 2*time.Second {
		t.Errorf("serving after %v, before sqld was started again", waited)
	}
}
