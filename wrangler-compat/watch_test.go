//go:build linux

package wranglercompat_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/sqldtest"
	"decisiongateway/testkit/testenv"
	"decisiongateway/wasm-host/ledger"
)

// TestWorkersCanaryIsJudgedFromTheLedger is the Workers side of issue 14,
// against the Cloudflare API stand-in and one real sqld. Two `wrangler dev`
// stand for the two versions of a gradual deployment of the config
// function (Cloudflare's split is not emulated offline): one serves the
// built config module, the other canaryv2 in its place; both count their
// outcomes into the ledger. `workers release watch -once` then judges the
// canary with the hosts' analysis and drives the deployment:
//
//   - a canary whose requests fail is rolled back (stable@100%), the reason
//     is in the history, and the version is refused by a later canary;
//   - forced again and healthy, it is stepped to 50% with the same two
//     version ids (no upload: callers keep their version), then promoted.
func TestWorkersCanaryIsJudgedFromTheLedger(t *testing.T) {
	root := testenv.Root(t)
	ledgerURL := sqldtest.Start(t)
	led, err := ledger.Open(context.Background(), ledgerURL, "")
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	if err := led.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	v2path := filepath.Join(root, "build", "testguests", "canaryv2.wasm")
	canaryFns := t.TempDir()
	entries, err := os.ReadDir(filepath.Join(root, "build", "functions"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(root, "build", "functions", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "config.wasm" {
			b = testenv.Wasm(t, "testguests/canaryv2.wasm")
		}
		writeFile(t, filepath.Join(canaryFns, e.Name()), string(b))
	}
	settings := e2eSettings(ledgerURL)
	stable := startWrangler(t, settings)
	canaryHost := startWrangler(t, settings, "-functions", canaryFns)

	cf := newCloudflare(t)
	cf.realClock = true
	const worker = "decision-gateway-config"
	first := cf.seed(worker)
	out := generateWorkers(t, false)
	release := func(args ...string) (string, error) {
		t.Helper()
		tool, err := workersTool()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(tool, append([]string{"release", "-out", out, "-ledger", ledgerURL}, args...)...)
		cmd.Dir = root
		cmd.Env = append(wranglerEnv(t, nodeBin(t)), cf.env()...)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	must := func(args ...string) string {
		t.Helper()
		text, err := release(args...)
		if err != nil {
			t.Fatalf("workers release %s: %v\n%s", strings.Join(args, " "), err, text)
		}
		return text
	}
	sent := map[string]int{}
	// traffic waits for a fresh second (the watch reads whole one-second
	// buckets after the deployment), sends n requests to each version and
	// waits until the ledger holds their counts.
	traffic := func(stableN, canaryN int, behaviour string) {
		t.Helper()
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
		send := func(h server, n int, header string) {
			for range n {
				req, _ := http.NewRequest("GET", h.url+"/api/service/config", nil)
				if header != "" {
					req.Header.Set("X-Test-Behaviour", header)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
		}
		send(stable, stableN, "")
		send(canaryHost, canaryN, behaviour)
		sent["stable"] += stableN
		sent["canary"] += canaryN
		want := int64(sent["stable"] + sent["canary"])
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			res := led.Exec(context.Background(), &abi.Batch{Steps: []abi.Statement{{SQL: "SELECT COALESCE(SUM(requests), 0) FROM release_samples WHERE function = 'config'"}}})
			if res.Err != "" {
				t.Fatal(res.Err)
			}
			if got := res.Steps[0].First().AsInt(); got >= want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the Workers counted %d requests, want %d", res.Steps[0].First().AsInt(), want)
			}
		}
	}
	watch := func() string {
		t.Helper()
		text := must("watch", "config", "10,50", "-once", "-min-samples", "20", "-max-latency-ratio", "3")
		t.Logf("watch:\n%s", text)
		return text
	}

	must("canary", "config", v2path, "10")
	canary := cf.latestVersion(worker)
	traffic(40, 25, "error")
	if text := watch(); !strings.Contains(text, "rolled back") || !strings.Contains(text, "error rate") {
		t.Fatalf("the failing canary was not rolled back for its errors:\n%s", text)
	}
	if got := cf.current(worker); !sameTraffic(got, []cfTraffic{{first, 100}}) {
		t.Fatalf("after the automatic rollback: deployment %v, want %s@100%%", got, first)
	}
	if text, err := release("canary", "config", v2path, "10"); err == nil || !strings.Contains(text, "refused") {
		t.Fatalf("the failed version was canaried again: %v\n%s", err, text)
	}

	must("canary", "config", v2path, "10", "-force")
	canary = cf.latestVersion(worker)
	traffic(40, 25, "")
	if text := watch(); !strings.Contains(text, "step to 50%") {
		t.Fatalf("the healthy canary did not step to 50%%:\n%s", text)
	}
	if got := cf.current(worker); !sameTraffic(got, []cfTraffic{{canary.ID, 50}, {first, 50}}) || cf.latestVersion(worker).ID != canary.ID {
		t.Fatalf("after the step: deployment %v, want the same %s@50%% %s@50%% and no new upload", got, canary.ID, first)
	}
	traffic(40, 25, "")
	if text := watch(); !strings.Contains(text, "promoted") {
		t.Fatalf("the healthy canary was not promoted after its last step:\n%s", text)
	}
	if got := cf.current(worker); !sameTraffic(got, []cfTraffic{{canary.ID, 100}}) {
		t.Fatalf("after the promotion: deployment %v, want %s@100%%", got, canary.ID)
	}
	res := led.Exec(context.Background(), &abi.Batch{Steps: []abi.Statement{{SQL: "SELECT action, detail FROM release_events WHERE function = 'config' ORDER BY id"}}})
	var history []string
	for _, r := range res.Steps[0].Rows {
		history = append(history, r[0].AsString())
		if !strings.HasPrefix(r[1].AsString(), "workers: ") {
			t.Errorf("decision without its reason: %s %q", r[0].AsString(), r[1].AsString())
		}
	}
	if strings.Join(history, ",") != "auto-rollback,canary,promote" {
		t.Errorf("history %v, want auto-rollback, canary, promote", history)
	}
}
