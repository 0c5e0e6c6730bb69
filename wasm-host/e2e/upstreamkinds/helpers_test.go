// Package upstreamkinds_test runs the edge and router upstream kinds and
// GET /v1/models end to end: the real TinyGo modules in the wazero host and
// a real ledger, with only the upstreams faked by httptest servers that
// record what they received.
package upstreamkinds_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/keys"
	"decisiongateway/testkit/hosttest"
)

// operatorKey is the upstream credential; only the upstream may see it.
const operatorKey = "sk-operator-kinds-5d1e"

// fake is an upstream that records every request: hosttest's Recorder.
type fake = hosttest.Recorder

func newFake(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, body []byte)) *fake {
	return hosttest.NewRecorder(t, handle)
}

func writeJSON(w http.ResponseWriter, status int, body string, headers ...string) {
	for i := 0; i+1 < len(headers); i += 2 {
		w.Header().Set(headers[i], headers[i+1])
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// gateway is a host under test.
type gateway struct {
	*hosttest.Host
	t *testing.T
}

// startGateway runs the host with an upstream of kind at url (none when
// kind is "").
func startGateway(t *testing.T, kind, url string, env ...string) *gateway {
	e := map[string]string{"UPSTREAM_API_KEY": operatorKey}
	if kind != "" {
		e["UPSTREAM_KIND"], e["UPSTREAM_URL"] = kind, url
	}
	for i := 0; i+1 < len(env); i += 2 {
		e[env[i]] = env[i+1]
	}
	return &gateway{Host: hosttest.Start(t, e), t: t}
}

func (g *gateway) count(sql string, args ...abi.Value) int64 {
	return g.exec(sql, args...)[0][0].AsInt()
}

type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r reply) code() string   { return r.Header.Get("X-Service-Error-Code") }
func (r reply) source() string { return r.Header.Get("X-Service-Error-Source") }

// json decodes the body into generic values.
func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("status %d, body not JSON: %s", r.Status, r.Body)
	}
	return m
}

func (g *gateway) do(method, path, key, body string) reply {
	g.t.Helper()
	req, _ := http.NewRequest(method, g.URL+path, bytes.NewReader([]byte(body)))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, data}
}

func (g *gateway) decide(key, body string) reply { return g.do("POST", "/v1/service", key, body) }
func (g *gateway) models(key string) reply       { return g.do("GET", "/v1/models", key, "") }

// charged checks that a reply's X-Service-Credits is what the balance lost.
func (g *gateway) charged(r reply, acct string, before int64) int64 {
	g.t.Helper()
	c, err := strconv.ParseInt(r.Header.Get("X-Service-Credits"), 10, 64)
	if err != nil {
		g.t.Fatalf("X-Service-Credits %q (status %d %s)", r.Header.Get("X-Service-Credits"), r.Status, r.Body)
	}
	if after := g.Balance(acct); before-after != c {
		g.t.Errorf("X-Service-Credits %d but the balance went %d → %d", c, before, after)
	}
	return c
}

// path walks decoded JSON by keys and indexes.
func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func near(v any, want float64) bool {
	f, ok := v.(float64)
	return ok && f-want < 1e-6 && want-f < 1e-6
}

// decision asks three questions, one of each type.
const decision = `{"state":{"ticket":"my kettle arrived broken, I want a refund"},"questions":{
 "team":{"type":"choice","criteria":{"billing":"refunds","repairs":"broken hardware"}},
 "urgency":{"type":"score","criteria":["low","high"],"x-hint":"kept"},
 "refund":{"type":"noul","criteria":{"true":"a refund is wanted"}}}}`

// withModel returns decision with an explicit model.
func withModel(model string) string {
	return `{"model":` + strconv.Quote(model) + "," + decision[1:]
}

func decodeInto(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

func strArg(s string) abi.Value { return abi.String(s) }

func (g *gateway) exec(sql string, args ...abi.Value) [][]abi.Value { return g.Rows(sql, args...) }

// account creates an account holding credits and returns a live API key.
func (g *gateway) account(credits int64) (acct, key string) {
	return g.NewAccount(keys.NewAccountID()+"@kinds.test", credits)
}
