// Package hosttest starts the real wazero host (real modules from
// build/functions, real ledger) behind an httptest server, for end-to-end
// tests in any package. Only what lives outside — the vendor, router, model
// binding, mail — is faked, by the tests themselves. Every answer is also
// validated against the OpenAPI document (wasm-host/openapi/check).
package hosttest

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"decisiongateway/testkit/sqldtest"
	"decisiongateway/testkit/testenv"
	"decisiongateway/wasm-host/app"
	"decisiongateway/wasm-host/hostconfig"
	"decisiongateway/wasm-host/ledger"
	"decisiongateway/wasm-host/openapi/check"
)

// Host is a running host.
type Host struct {
	URL    string
	App    *app.App
	Server *httptest.Server
	t      testing.TB
	logs   *testenv.Output
}

// Start runs a host with env as its environment. LIBSQL_URL defaults to a
// fresh embedded file, or to a fresh real sqld when the process environment
// has TEST_LEDGER=sqld (make test runs the end-to-end suites both ways);
// GATEWAY_FUNCTIONS_DIR defaults to the repo's build/functions. Logs are
// kept for Logs, and also written to the test's log when env["TEST_LOG"]
// is set. Every answer is validated against the OpenAPI document, unless
// env["TEST_TEST_GUESTS"] says test guests serve the routes.
func Start(t testing.TB, env map[string]string) *Host {
	t.Helper()
	e := map[string]string{
		"LIBSQL_URL":            "file:" + filepath.Join(t.TempDir(), "ledger.db"),
		"GATEWAY_FUNCTIONS_DIR": filepath.Join(testenv.Root(t), "build", "functions"),
		"GATEWAY_DATA_DIR":      t.TempDir(),
	}
	socket := SocketBuild() || env["GATEWAY_MODULES"] == "socket"
	if _, set := env["LIBSQL_URL"]; !set && (os.Getenv("TEST_LEDGER") == "sqld" || socket) {
		e["LIBSQL_URL"] = sqldtest.Start(t)
	}
	if socket {
		useSocketBuild(t, e, env)
	}
	for k, v := range env {
		e[k] = v
	}
	cfg, err := hostconfig.From(func(k string) string { return e[k] })
	if err != nil {
		t.Fatal(err)
	}
	logs := &testenv.Output{}
	var w io.Writer = logs
	if e["TEST_LOG"] != "" {
		w = io.MultiWriter(logs, testWriter{t})
	}
	// As an operator would: `gateway admin migrate` first, since the host
	// refuses a ledger that does not exist or is not migrated.
	Migrate(t, cfg.LedgerURL)
	a, err := app.New(context.Background(), cfg, slog.New(slog.NewJSONHandler(w, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// The host's own http.Server settings (header and idle timeouts, header
	// size), so tests with real sockets meet what `gateway serve` runs.
	// Every answer to a documented operation is checked against the served
	// OpenAPI document; registered before the server's cleanup, its report
	// runs after the last request is answered.
	// env["TEST_TEST_GUESTS"] set: test guests stand in for the route
	// functions, and their answers are not the API's.
	handler := a.Handler()
	if e["TEST_TEST_GUESTS"] == "" {
		handler = check.Middleware(t, handler)
	}
	srv := httptest.NewUnstartedServer(handler)
	srv.Config = a.HTTPServer()
	srv.Config.Handler = handler
	srv.Start()
	t.Cleanup(func() { srv.Close(); a.Close(context.Background()) })
	return &Host{URL: srv.URL, App: a, Server: srv, t: t, logs: logs}
}

// Logs returns every line the host has logged so far (JSON, one a line).
func (h *Host) Logs() string {
	if h.logs == nil {
		return ""
	}
	return h.logs.String()
}

// Migrate creates the ledger at url if it is a file that does not exist
// and applies every migration, as `gateway admin migrate` does.
func Migrate(t testing.TB, url string) {
	t.Helper()
	led, err := ledger.OpenWith(context.Background(), url, "", ledger.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	if err := led.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
