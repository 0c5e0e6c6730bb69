//go:build linux

package wranglercompat_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"decisiongateway/testkit/testenv"
	"decisiongateway/wasm-host/routes"
)

// TestDeployDryRunChecksEveryWorkerAndItsSize generates the deployable
// Workers (real AI binding) from `bin/gateway routes` and runs
// `wrangler deploy --dry-run` on each through `workers deploy -dry-run`:
// every built function has its own Worker with exactly its routes, every
// Worker bundles, and each bundle's size is printed against the Workers
// limits and fits even the old 3 MiB compressed limit of the Free plan.
func TestDeployDryRunChecksEveryWorkerAndItsSize(t *testing.T) {
	out := generateWorkers(t, false)
	m := readManifest(t, out)
	routesJSON, err := exec.Command(testenv.Binary(t), "routes").Output()
	if err != nil {
		t.Fatal(err)
	}
	var table []routes.Route
	if err := json.Unmarshal(routesJSON, &table); err != nil {
		t.Fatal(err)
	}
	workers := map[string][]routes.Route{}
	for _, f := range m.Functions {
		workers[f.Function] = f.Routes
	}
	for _, r := range table {
		_, built := os.Stat(filepath.Join(testenv.Root(t), "build", "functions", r.Function+".wasm"))
		got, ok := workers[r.Function]
		switch {
		case built == nil && !ok:
			t.Errorf("function %s is built but has no Worker", r.Function)
		case ok && !containsRoute(got, r):
			t.Errorf("the %s Worker lacks route %s %s", r.Function, r.Method, r.Pattern)
		}
	}
	for _, f := range m.Functions {
		toml, _ := os.ReadFile(filepath.Join(out, f.Dir, "wrangler.toml"))
		for _, secret := range []string{"LIBSQL_URL =", "LIBSQL_AUTH_TOKEN =", "UPSTREAM_API_KEY =", "MAIL_API_KEY ="} {
			if strings.Contains(string(toml), secret) {
				t.Errorf("%s's wrangler.toml sets the secret %s", f.Name, secret)
			}
		}
	}

	secrets := filepath.Join(t.TempDir(), "secrets.json")
	writeFile(t, secrets, `{"LIBSQL_URL":"libsql://db.example.test","LIBSQL_AUTH_TOKEN":"t","UPSTREAM_API_KEY":"sk"}`)
	text := runWorkers(t, "deploy", "-dry-run", "-out", out, "-secrets", secrets)
	if n := strings.Count(text, "--dry-run: exiting now."); n != len(m.Functions)+1 {
		t.Errorf("%d Workers were checked by wrangler, want %d function Workers and the front", n, len(m.Functions)+1)
	}
	table3 := text[strings.Index(text, "Worker bundles against"):]
	t.Logf("\n%s", table3)
	for _, line := range strings.Split(table3, "\n")[3:] {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		// WORKER UPLOAD KiB GZIP KiB %64MiB %3MiB %10MiB …
		pct, err := strconv.ParseFloat(strings.TrimSuffix(f[6], "%"), 64)
		if err != nil || pct >= 100 {
			t.Errorf("%s: %s of the 3 MiB compressed limit (%v)", f[0], f[6], err)
		}
	}
}

func containsRoute(rs []routes.Route, r routes.Route) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// TestCanaryRolloutOnWorkersOffline runs the Workers rollout of a new build
// of the config function as far as possible without a Cloudflare account:
// the new version becomes a copy of the config Worker (same name, bindings
// and vars) with the new module, which wrangler bundles and checks (versions
// upload --dry-run), and the deployment commands come out with the
// percentage split, the promotion and the rollback.
func TestCanaryRolloutOnWorkersOffline(t *testing.T) {
	vars := filepath.Join(t.TempDir(), "vars")
	writeFile(t, vars, "SERVICE_RATE_LIMIT=77\n")
	out := generateWorkers(t, false, "-vars", vars)
	v2 := testenv.Wasm(t, "testguests/canaryv2.wasm")
	sum := sha256.Sum256(v2)
	short := hex.EncodeToString(sum[:])[:12]
	path := filepath.Join(testenv.Root(t), "build", "testguests", "canaryv2.wasm")

	text := runWorkers(t, "release", "-out", out, "canary", "config", path, "10", "-dry-run") // the flag after the arguments
	t.Logf("\n%s", text)
	config := filepath.Join(out, "config", "wrangler.toml")
	release := filepath.Join(out, "releases", "config", short)
	for _, want := range []string{
		"--dry-run: exiting now.", // the new version bundled for real
		"would run: wrangler versions upload -c " + filepath.Join(release, "wrangler.toml") + " --tag " + short + " --message 'canary config@" + short + "'",
		"would run: wrangler versions deploy '<new-version-id>@10%' '<stable-version-id>@90%' --yes --message 'canary config@" + short + "' -c " + config,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	toml, _ := os.ReadFile(filepath.Join(release, "wrangler.toml"))
	if !strings.Contains(string(toml), `name = "decision-gateway-config"`) {
		t.Errorf("the new version is not the config Worker:\n%s", toml)
	}
	if !strings.Contains(string(toml), `SERVICE_RATE_LIMIT = "77"`) {
		t.Errorf("the new version lost the Worker's vars:\n%s", toml)
	}
	if js, _ := os.ReadFile(filepath.Join(release, "worker.js")); !strings.Contains(string(js), `"version": "config@`+short+`"`) {
		t.Errorf("the new version does not name its module config@%s", short)
	}

	// Flags after the arguments are read too.
	text = runWorkers(t, "release", "-out", out, "promote", "config", "-dry-run")
	if !strings.Contains(text, "would run: wrangler versions deploy '<canary-version-id>@100%' --yes --message promote -c "+config) {
		t.Errorf("promote:\n%s", text)
	}
	text = runWorkers(t, "release", "-out", out, "-dry-run", "rollback", "config")
	for _, want := range []string{"wrangler versions deploy '<stable-version-id>@100%' --yes --message rollback -c " + config, "wrangler rollback '<previous-stable-version-id>' --yes --message rollback -c " + config} {
		if !strings.Contains(text, want) {
			t.Errorf("rollback lacks %q:\n%s", want, text)
		}
	}
}
