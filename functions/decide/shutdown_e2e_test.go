package decide_test

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"decisiongateway/testkit/testenv"
)

// TestGracefulShutdownFinishesInFlightDecision stops the real binary with
// SIGTERM while a decision waits on its upstream: the host stops accepting,
// lets the decision finish and settle, then exits cleanly.
func TestGracefulShutdownFinishesInFlightDecision(t *testing.T) {
	g := startGateway(t, "", nil)
	acct, key := g.NewAccount(randomEmail(), 10)
	gate := make(chan struct{})
	g.vendor.Handle(gated(gate))
	addr := testenv.FreeAddr(t)
	cmd := exec.Command(testenv.Binary(t), "serve")
	cmd.Env = append(os.Environ(), "SERVICE_ADDR="+addr, "LIBSQL_URL="+g.App.Config.LedgerURL, "UPSTREAM_KIND=vendor",
		"UPSTREAM_URL="+g.vendor.URL+"/v1", "UPSTREAM_API_KEY="+operatorKey,
		"GATEWAY_FUNCTIONS_DIR="+filepath.Join(testenv.Root(t), "build", "functions"), "GATEWAY_DATA_DIR="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	testenv.WaitFor(t, func() bool {
		resp, err := http.Get("http://" + addr + "/api/service/config")
		return err == nil && resp.StatusCode == 200
	})

	type result struct {
		status  int
		credits string
		err     error
	}
	done := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/service", strings.NewReader(simpleRequest))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- result{status: resp.StatusCode, credits: resp.Header.Get("X-Service-Credits")}
	}()
	testenv.WaitFor(t, func() bool { return len(g.vendor.Seen()) == 1 })
	cmd.Process.Signal(syscall.SIGTERM)
	// New connections are refused once shutdown has begun.
	testenv.WaitFor(t, func() bool { _, err := http.Get("http://" + addr + "/api/service/config"); return err != nil })
	select {
	case err := <-exited:
		t.Fatalf("host exited (%v) with a decision in flight", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(gate)
	r := <-done
	if r.err != nil || r.status != 200 || r.credits != "1" {
		t.Fatalf("in-flight decision: %+v", r)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("host did not exit after its last request")
	}
	if g.Balance(acct) != 9 {
		t.Fatalf("balance %d", g.Balance(acct))
	}
	g.CheckInvariant()
}
