package canary_test

import (
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"decisiongateway/testkit/hosttest"
	"decisiongateway/testkit/testenv"
	"decisiongateway/wasm-host/canary"
)

// TestReleaseCommandsApplyToRunningHostsWithoutRestart runs two real hosts
// (wasm-host/app, as `gateway serve` assembles it) on one ledger, with the
// canary tests' first build as their config function, and drives them with
// the operator commands of bin/gateway: a canary, its promotion and the
// rollback of that promotion each reach both hosts through the ledger while
// they keep serving. Neither host has the new module on disk: they load it
// from the ledger.
func TestReleaseCommandsApplyToRunningHostsWithoutRestart(t *testing.T) {
	bin := testenv.Binary(t)
	dir := t.TempDir()
	fns := filepath.Join(dir, "functions")
	if err := os.MkdirAll(fns, 0o755); err != nil {
		t.Fatal(err)
	}
	v1 := testenv.Wasm(t, "testguests/canaryv1.wasm")
	if err := os.WriteFile(filepath.Join(fns, "config.wasm"), v1, 0o644); err != nil {
		t.Fatal(err)
	}
	v2path := filepath.Join(testenv.Root(t), "build", "testguests", "canaryv2.wasm")
	ledgerURL := "file:" + filepath.Join(dir, "ledger.db")
	hosts := []*hosttest.Host{
		hosttest.Start(t, map[string]string{"LIBSQL_URL": ledgerURL, "GATEWAY_FUNCTIONS_DIR": fns, "TEST_TEST_GUESTS": "1"}),
		hosttest.Start(t, map[string]string{"LIBSQL_URL": ledgerURL, "GATEWAY_FUNCTIONS_DIR": fns, "TEST_TEST_GUESTS": "1"}),
	}
	u, _ := url.Parse(hosts[0].URL)
	gateway := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"release"}, args...)...)
		cmd.Env = append(os.Environ(), "LIBSQL_URL="+ledgerURL, "GATEWAY_FUNCTIONS_DIR="+fns,
			"GATEWAY_DATA_DIR="+filepath.Join(dir, "operator"), "SERVICE_ADDR="+u.Host)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("gateway release %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// served asks every host for the config route as the same account and
	// waits until each answers with body want: the hosts apply the ledger
	// every 2 s.
	served := func(want string, pin string) {
		t.Helper()
		for _, h := range hosts {
			deadline := time.Now().Add(30 * time.Second)
			for {
				req, _ := http.NewRequest("GET", h.URL+"/api/service/config", nil)
				if pin != "" {
					req.Header.Set("X-Gateway-Version", pin)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var body [8]byte
				n, _ := resp.Body.Read(body[:])
				resp.Body.Close()
				if string(body[:n]) == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("host %s still answers %q, want %q", h.URL, body[:n], want)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}

	served("v1", "")
	out := gateway("canary", "config", v2path, "0", "--min-samples", "1000")
	if !strings.Contains(out, "canary config@") {
		t.Fatalf("canary output:\n%s", out)
	}
	served("v2", "canary") // a smoke test reaches the 0% canary on both hosts
	served("v1", "")

	out = gateway("promote", "config")
	served("v2", "")
	status := gateway("status", "config")
	v2 := canary.VersionOf("config", testenv.Wasm(t, "testguests/canaryv2.wasm"))
	t.Logf("gateway release status config:\n%s", status)
	var release, counters []string
	for _, line := range strings.Split(status, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 2 && f[0] == "config":
			release = f
		case len(f) > 4 && f[0] == "step" && f[3] == v2.Label() && f[4] != "0":
			// The fleet's counts of the smoke tests pinned to the canary:
			// each host wrote them in the tick that applied the promotion.
			counters = f
		}
	}
	if len(release) < 3 || release[1] != v2.Label() || release[2] != "-" {
		t.Errorf("status shows release %q, want stable %s and no canary", release, v2.Label())
	}
	if len(counters) == 0 || !strings.Contains(status, "promote") {
		t.Errorf("status lacks the promotion event or the fleet's counters for %s", v2.Label())
	}
	if strings.Contains(status, "latest analysis") {
		t.Errorf("status shows the analysis of a canary that was promoted by hand")
	}

	out = gateway("rollback", "config")
	if !strings.Contains(out, "rolled back the promotion") {
		t.Fatalf("rollback output:\n%s", out)
	}
	served("v1", "")
}
