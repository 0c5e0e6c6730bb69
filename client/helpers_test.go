package client_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"decisiongateway/client"
	"decisiongateway/shared/keys"
	"decisiongateway/testkit/hosttest"
	"decisiongateway/testkit/testenv"
)

// The tests run the real gateway: the in-process host of testkit/hosttest
// (real modules on wazero, a real ledger, a real socket), or bin/gateway
// itself where a process must die. Only the vendor is fake.

const operatorKey = "sk-operator-client-test"

// apple is a one-question request; it costs one credit.
var apple = client.Request{
	Model: "model-x",
	State: "a ripe red apple",
	Questions: map[string]client.Question{
		"fruit": {Type: "choice", Criteria: map[string]string{"apple": "an apple", "pear": "a pear"}},
	},
}

// vendor is a fake vendor API: valid answers and a model list, until a
// test hands it other answers. It notes when each decision arrived.
type vendor struct {
	*hosttest.Recorder
	mu       sync.Mutex
	arrivals []time.Time
	next     func(n int, w http.ResponseWriter, body []byte) // n counts decisions from 1
}

func newVendor(t testing.TB) *vendor {
	v := &vendor{}
	v.Recorder = hosttest.NewRecorder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			fmt.Fprint(w, `{"models":[{"name":"model-x","description":"the test model","release_date":"2026-09-18","context":4096},{"name":"model-y","description":7}]}`)
			return
		}
		v.mu.Lock()
		v.arrivals = append(v.arrivals, time.Now())
		n, next := len(v.arrivals), v.next
		v.mu.Unlock()
		if next != nil {
			next(n, w, body)
			return
		}
		answer(w, body)
	})
	return v
}

// answer writes a valid decision for body.
func answer(w http.ResponseWriter, body []byte) {
	out, _ := json.Marshal(map[string]any{"model": "model-x-2026", "answers": hosttest.Answers(body), "usage": map[string]int{"input_tokens": 9, "output_tokens": 3}, "vendor_extra": true})
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// answerWith makes the vendor answer with next from now on.
func (v *vendor) answerWith(next func(n int, w http.ResponseWriter, body []byte)) {
	v.mu.Lock()
	v.next = next
	v.mu.Unlock()
}

// decisions returns when each decision reached the vendor.
func (v *vendor) decisions() []time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]time.Time(nil), v.arrivals...)
}

// startHost runs the in-process gateway in front of a fresh vendor.
func startHost(t testing.TB, env map[string]string) (*hosttest.Host, *vendor) {
	v := newVendor(t)
	e := map[string]string{"UPSTREAM_KIND": "vendor", "UPSTREAM_URL": v.URL + "/v1", "UPSTREAM_API_KEY": operatorKey}
	for k, val := range env {
		e[k] = val
	}
	return hosttest.Start(t, e), v
}

func newClient(t testing.TB, base, key string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(base+"/v1", key, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func email() string { return keys.NewAccountID() + "@client.test" }

// checkCharged fails unless the account holds start − charged credits and
// every balance equals the sum of its entries.
func checkCharged(t *testing.T, h *hosttest.Host, acct string, start, charged int64) {
	t.Helper()
	if b := h.Balance(acct); b != start-charged {
		t.Errorf("balance %d, want %d: charged %d times the cost, not %d", b, start-charged, start-b, charged)
	}
	h.CheckInvariant()
}

// process is bin/gateway serve on a fixed address and ledger, which a test
// can kill (SIGKILL, as a crash would) and start again.
type process struct {
	t    *testing.T
	addr string
	env  []string
	cmd  *exec.Cmd
	out  testenv.Output
}

func startProcess(t *testing.T, ledgerURL, upstream string, env ...string) *process {
	p := &process{t: t, addr: testenv.FreeAddr(t)}
	p.env = append(os.Environ(), "SERVICE_ADDR="+p.addr, "LIBSQL_URL="+ledgerURL, "UPSTREAM_KIND=vendor",
		"UPSTREAM_URL="+upstream+"/v1", "UPSTREAM_API_KEY="+operatorKey,
		"GATEWAY_FUNCTIONS_DIR="+filepath.Join(testenv.Root(t), "build", "functions"), "GATEWAY_DATA_DIR="+t.TempDir())
	p.env = append(p.env, env...)
	p.start()
	t.Cleanup(func() {
		if p.cmd != nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("gateway output:\n%s", p.out.String())
		}
	})
	return p
}

// start runs the gateway and waits until it is ready for decisions. It
// may be called from any goroutine: a failure fails the test without
// stopping it.
func (p *process) start() {
	p.t.Helper()
	p.cmd = exec.Command(testenv.Binary(p.t), "serve")
	p.cmd.Env = p.env
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		p.t.Error(err)
		return
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get("http://" + p.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
	}
	p.t.Error("the gateway was not ready within 30 s")
}

// kill stops the gateway at once, as a crash or an OOM kill would.
func (p *process) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
	p.cmd = nil
}

func (p *process) url() string { return "http://" + p.addr }

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// observed wraps a transport and calls on with every answer the client
// receives, before the client sees it: tests act on the client's real
// traffic instead of on timing.
type observed struct{ on func(*http.Response) }

func (o observed) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		o.on(resp)
	}
	return resp, err
}

// gateOn409 returns a gate for the vendor and an HTTP client that opens
// it when the client is first told request_in_progress: so the attempt
// that runs is answered only after the client stopped waiting for it.
func gateOn409(t testing.TB) (chan struct{}, *http.Client) {
	gate := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	return gate, &http.Client{Transport: observed{on: func(r *http.Response) {
		if r.Header.Get("X-Service-Error-Code") == "request_in_progress" {
			open()
		}
	}}}
}
