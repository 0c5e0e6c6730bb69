package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"decisiongateway/schema"
	"decisiongateway/shared/abi"
	"decisiongateway/testkit/hosttest"
	"decisiongateway/testkit/sqldtest"
	"decisiongateway/testkit/testenv"
)

type readiness struct {
	Ready  bool
	Checks struct{ Ledger, Upstream, Functions string }
	// MissingFunctions and Reasons say what is not ready.
	MissingFunctions []string
	Reasons          []string
}

func probe(t *testing.T, method, url string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("Cache-Control") != "no-store" || !requestIDPattern.MatchString(resp.Header.Get("X-Request-Id")) {
		t.Errorf("%s %s: headers %v", method, url, resp.Header)
	}
	return resp.StatusCode, resp.Header, body
}

func ready(t *testing.T, base string) (int, readiness) {
	t.Helper()
	status, _, body := probe(t, "GET", base+"/readyz")
	var r readiness
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("/readyz %d: %s", status, body)
	}
	return status, r
}

// waitReadiness polls /readyz until it answers status (a readiness answer
// is reused for a second), failing after a deadline generous for a loaded
// machine.
func waitReadiness(t *testing.T, base string, status int) readiness {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, r := ready(t, base)
		if got == status {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d %+v, want %d", got, r, status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A host with its ledger, an upstream and every function is alive and
// ready; the probes run no function and take GET and HEAD only.
func TestHealthAndReadinessOfACompleteHost(t *testing.T) {
	for _, b := range sqldtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			srv := startHost(t, b.URL, map[string]string{"UPSTREAM_KIND": "vendor", "UPSTREAM_URL": "http://127.0.0.1:9/v1"})
			if status, _, body := probe(t, "GET", srv.URL+"/healthz"); status != 200 || string(body) != `{"status":"ok"}` {
				t.Errorf("/healthz: %d %s", status, body)
			}
			// Modules load in the background after start: until then the
			// host is alive but says its functions are still loading.
			if status, r := ready(t, srv.URL); status != 200 && (r.Checks.Functions != "loading" || r.Checks.Ledger != "ok" || r.Checks.Upstream != "ok") {
				t.Errorf("/readyz while loading: %d %+v", status, r)
			}
			r := waitReadiness(t, srv.URL, 200)
			status := 200
			if !r.Ready || r.Checks.Ledger != "ok" || r.Checks.Upstream != "ok" || r.Checks.Functions != "ok" || len(r.Reasons) != 0 {
				t.Errorf("/readyz: %d %+v", status, r)
			}
			if status, _, body := probe(t, "HEAD", srv.URL+"/readyz"); status != 200 || len(body) != 0 {
				t.Errorf("HEAD /readyz: %d %q", status, body)
			}
			if status, h, _ := probe(t, "POST", srv.URL+"/healthz"); status != 405 || h.Get("X-Service-Error-Code") != "method_not_allowed" || h.Get("Allow") != "GET, HEAD" {
				t.Errorf("POST /healthz: %d %v", status, h)
			}
		})
	}
}

// Without an upstream and with modules missing from the functions folder
// the host is alive but not ready, and /readyz says why.
func TestReadinessNamesWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	built := filepath.Join(testenv.Root(t), "build", "functions")
	entries, err := os.ReadDir(built)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "decide.wasm" || e.Name() == "models.wasm" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(built, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644)
	}
	srv := startHost(t, "file:"+filepath.Join(t.TempDir(), "l.db"), map[string]string{"GATEWAY_FUNCTIONS_DIR": dir})
	if status, _, _ := probe(t, "GET", srv.URL+"/healthz"); status != 200 {
		t.Errorf("/healthz: %d", status)
	}
	status, r := ready(t, srv.URL)
	if status != 503 || r.Ready || r.Checks.Ledger != "ok" || r.Checks.Upstream != "not_configured" || r.Checks.Functions != "missing" ||
		!slices.Equal(r.MissingFunctions, []string{"decide", "models"}) || len(r.Reasons) != 2 {
		t.Errorf("/readyz: %d %+v", status, r)
	}
}

// A ledger that loses a migration, or stops answering, makes the host not
// ready (and it recovers with the ledger); liveness is unaffected.
func TestReadinessFollowsTheLedger(t *testing.T) {
	srv := sqldtest.StartServer(t)
	h := hosttest.Start(t, map[string]string{"LIBSQL_URL": srv.URL, "UPSTREAM_KIND": "vendor", "UPSTREAM_URL": "http://127.0.0.1:9/v1"})
	waitReadiness(t, h.URL, 200)

	ms, _ := schema.Migrations()
	last := abi.Int64(int64(ms[len(ms)-1].Version))
	h.Rows("DELETE FROM schema_migrations WHERE version = ?", last)
	if r := waitReadiness(t, h.URL, 503); r.Checks.Ledger != "not_migrated" || r.Checks.Upstream != "ok" {
		t.Errorf("migration gone: %+v", r)
	}
	h.Rows("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", last, abi.String(ms[len(ms)-1].Name))
	waitReadiness(t, h.URL, 200)

	// The server goes away: its connections end with it (a proxy closed
	// in front of it would keep the writer's WebSocket, which it no longer
	// tracks once upgraded, and the ledger would in fact still answer).
	srv.Kill()
	if r := waitReadiness(t, h.URL, 503); r.Checks.Ledger != "unreachable" {
		t.Errorf("ledger gone: %+v", r)
	}
	if status, _, _ := probe(t, "GET", h.URL+"/healthz"); status != 200 {
		t.Errorf("/healthz with the ledger gone: %d", status)
	}
}
