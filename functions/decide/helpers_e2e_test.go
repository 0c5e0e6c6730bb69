package decide_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/keys"
	"decisiongateway/testkit/hosttest"
	"decisiongateway/testkit/sqldtest"
)

// operatorKey is the upstream credential; it must reach the vendor and
// nothing else.
const operatorKey = "sk-operator-8f2c"

// newVendor is a fake vendor HTTP API that records what it received and,
// until a test gives it another handler, answers valid decisions and lists
// its models as a vendor does (a test whose minute rolls over between its
// requests can list models where it meant to be refused).
func newVendor(t testing.TB) *hosttest.Recorder {
	return hosttest.NewRecorder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/models") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"models":[{"name":"vendor-resolved-1","description":"the fake vendor's model","release_date":"2026-01-01"}]}`)
			return
		}
		answerValid(w, body)
	})
}

// gated answers valid decisions only once gate is closed.
func gated(gate chan struct{}) func(w http.ResponseWriter, r *http.Request, body []byte) {
	return func(w http.ResponseWriter, _ *http.Request, body []byte) {
		<-gate
		answerValid(w, body)
	}
}

// answerValid writes a valid decision for the request body, with vendor
// extension fields and headers the gateway must keep or drop.
func answerValid(w http.ResponseWriter, body []byte) {
	answers := hosttest.Answers(body)
	out, _ := json.Marshal(map[string]any{"model": "vendor-resolved-1", "answers": answers, "usage": map[string]int{"input_tokens": 11, "output_tokens": 7}, "ext": "kept"})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Vendor-Request-Id", "vrid-1")
	w.Header().Set("Request-Id", "rid-low")
	w.Header().Set("X-RateLimit-Remaining", "99")
	w.Header().Set("Set-Cookie", "vendor_session=1")
	w.Header().Set("X-Vendor-Internal", "secret-ish")
	w.Write(out)
}

// killsLedger makes the vendor kill sqld s as it answers and restart it two
// seconds later, reporting the restart on the channel it returns.
func (g *gateway) killsLedger(s *sqldtest.Server) <-chan error {
	restarted := make(chan error, 1)
	g.vendor.Handle(func(w http.ResponseWriter, _ *http.Request, body []byte) {
		s.Kill()
		go func() {
			time.Sleep(2 * time.Second)
			restarted <- s.Restart()
		}()
		answerValid(w, body)
	})
	return restarted
}

// gateway is a host under test with its ledger and fake vendor.
type gateway struct {
	*hosttest.Host
	vendor *hosttest.Recorder
	t      testing.TB
}

func backends(t *testing.T, f func(t *testing.T, ledgerURL string)) {
	for _, b := range sqldtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { f(t, b.URL) })
	}
}

func startGateway(t testing.TB, ledgerURL string, env map[string]string) *gateway {
	v := newVendor(t)
	e := map[string]string{
		"UPSTREAM_KIND": "vendor", "UPSTREAM_URL": v.URL + "/v1",
		"UPSTREAM_API_KEY": operatorKey, "GATEWAY_POOL_SIZE": "8",
	}
	if ledgerURL != "" { // otherwise hosttest gives each test its own file
		e["LIBSQL_URL"] = ledgerURL
	}
	for k, val := range env {
		e[k] = val
	}
	return &gateway{Host: hosttest.Start(t, e), vendor: v, t: t}
}

type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r reply) code() string { return r.Header.Get("X-Service-Error-Code") }

func (g *gateway) post(key string, body string, headers ...string) reply {
	g.t.Helper()
	return g.send("POST", "/v1/service", key, body, headers...)
}

// send makes one request: a JSON body when there is one, the key as a
// Bearer token when there is one, and headers as name/value pairs.
func (g *gateway) send(method, path, key, body string, headers ...string) reply {
	g.t.Helper()
	req, _ := http.NewRequest(method, g.URL+path, bytes.NewReader([]byte(body)))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, data}
}

const simpleRequest = `{"model":"model-x","state":"a red apple","questions":{"fruit":{"type":"choice","criteria":{"apple":"an apple","pear":"a pear"}}}}`

func str(s string) abi.Value { return abi.String(s) }

// hashOfLoopback is the auth counter's scope for requests from 127.0.0.1.
var hashOfLoopback = keys.HashClient("127.0.0.1")

// randomEmail gives each test account its own address.
func randomEmail() string { return keys.NewAccountID() + "@decide.test" }

// addKey gives acct another live key.
func (g *gateway) addKey(acct string) string {
	g.t.Helper()
	_, secret, err := g.Store().CreateKey(acct, "second")
	if err != nil {
		g.t.Fatal(err)
	}
	return secret
}

// exec runs one statement on the ledger (test setup and fault injection).
func (g *gateway) exec(sql string, args ...abi.Value) [][]abi.Value { return g.Rows(sql, args...) }

// timedDecision sends simpleRequest to url with key and returns how long
// the answer took; anything but a 200 fails the benchmark.
func timedDecision(b *testing.B, client *http.Client, url, key string) time.Duration {
	b.Helper()
	req, _ := http.NewRequest("POST", url, bytes.NewReader([]byte(simpleRequest)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("%s: status %d", url, resp.StatusCode)
	}
	return time.Since(start)
}
