package upstreamkinds_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"decisiongateway/testkit/hosttest"
	"decisiongateway/testkit/testenv"
)

// TestServeDevAnswersWithEveryKind is `make run` per UPSTREAM_KIND: the
// real binary with --dev and its built-in emulator answers a decision and
// lists models as spec §4.2 says, and says it is an emulator.
func TestServeDevAnswersWithEveryKind(t *testing.T) {
	bin := testenv.Binary(t)
	for _, tc := range []struct {
		kind, mode, listed string
		listStatus         int
	}{
		{"", "vendor-native", "emulator/model-latest", 200},
		{"edge", "edge-runtime", "vendor/model", 200},
		{"router", "router-adapted", "", 501},
	} {
		t.Run("kind="+tc.kind, func(t *testing.T) {
			dir := t.TempDir()
			addr := testenv.FreeAddr(t)
			env := append(os.Environ(),
				"LIBSQL_URL=file:"+filepath.Join(dir, "ledger.db"), "GATEWAY_DATA_DIR="+dir,
				"GATEWAY_FUNCTIONS_DIR="+filepath.Join(testenv.Root(t), "build", "functions"),
				"SERVICE_ADDR="+addr, "UPSTREAM_KIND="+tc.kind, "UPSTREAM_URL=", "UPSTREAM_API_KEY=")
			logFile, err := os.Create(filepath.Join(dir, "serve.log"))
			if err != nil {
				t.Fatal(err)
			}
			defer logFile.Close()
			log := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
			// `make run`: migrate, then serve (only migrate creates a ledger).
			migrate := exec.Command(bin, "admin", "migrate")
			migrate.Env = env
			if out, err := migrate.CombinedOutput(); err != nil {
				t.Fatalf("admin migrate: %v\n%s", err, out)
			}
			serve := exec.Command(bin, "serve", "--dev")
			serve.Env, serve.Stdout, serve.Stderr = env, logFile, logFile
			if err := serve.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { serve.Process.Kill(); serve.Wait() })
			base := "http://" + addr
			waitReady(t, base+"/api/service/config", log)

			admin := exec.Command(bin, "admin", "key", "dev@example.test")
			admin.Env = env
			out, err := admin.Output()
			if err != nil {
				t.Fatalf("admin key: %v %s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			g := &gateway{Host: &hosttest.Host{URL: base}, t: t}

			r := g.decide(lines[len(lines)-1], decision)
			if r.Status != 200 || r.Header.Get("X-Service-Response-Mode") != tc.mode || r.Header.Get("X-Service-Credits") == "0" {
				t.Fatalf("decision: %d %v %s\n%s", r.Status, r.Header, r.Body, log())
			}
			if m, _ := r.json(t)["model"].(string); !strings.HasPrefix(m, "emulator/") {
				t.Errorf("resolved model %q does not say emulator", m)
			}
			l := g.models(lines[len(lines)-1])
			if l.Status != tc.listStatus || (tc.listed != "" && path(l.json(t), "models", 0, "name") != tc.listed) {
				t.Errorf("models: %d %s", l.Status, l.Body)
			}
			if tc.listed != "" && path(l.json(t), "models", 0, "emulator") != true {
				t.Errorf("model list does not say emulator: %s", l.Body)
			}
			cfg := g.do("GET", "/api/service/config", "", "").json(t)
			if path(cfg, "upstream", "emulator") != true || !strings.Contains(log(), "EMULATOR") {
				t.Errorf("config %v; log:\n%s", cfg, log())
			}
		})
	}
}

// waitReady polls url until the server answers (the server compiles its
// modules first).
func waitReady(t *testing.T, url string, log func() string) {
	for i := 0; i < 300; i++ {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("server never answered at %s\n%s", url, log())
}
