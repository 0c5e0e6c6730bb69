package decide_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/keys"
	"decisiongateway/shared/ledgerq"
	"decisiongateway/wasm-host/hosttest"
	"decisiongateway/wasm-host/sqldtest"
)

// operatorKey is the upstream credential; it must reach the vendor and
// nothing else.
const operatorKey = "sk-operator-8f2c"

// vendor is a fake vendor HTTP API that records what it received and
// answers valid decisions unless a test replaces its behaviour.
type vendor struct {
	mu       sync.Mutex
	calls    []received
	respond  func(w http.ResponseWriter, r *http.Request, body []byte)
	server   *httptest.Server
	inflight chan struct{} // when set, each call blocks until it is closed
}

type received struct {
	Path   string
	Header http.Header
	Body   []byte
}

func newVendor(t testing.TB) *vendor {
	v := &vendor{}
	v.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		v.mu.Lock()
		v.calls = append(v.calls, received{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		respond, gate := v.respond, v.inflight
		v.mu.Unlock()
		if gate != nil {
			<-gate
		}
		if respond != nil {
			respond(w, r, body)
			return
		}
		answerValid(w, body)
	}))
	t.Cleanup(v.server.Close)
	return v
}

func (v *vendor) received() []received {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]received(nil), v.calls...)
}

// answerValid writes a valid decision for the request body: uniform
// distributions, the first option chosen, the middle score.
func answerValid(w http.ResponseWriter, body []byte) {
	var req struct {
		Model     string
		Questions map[string]struct {
			Type     string
			Criteria json.RawMessage
		}
	}
	json.Unmarshal(body, &req)
	answers := map[string]any{}
	for name, q := range req.Questions {
		switch q.Type {
		case "choice":
			var opts map[string]any
			json.Unmarshal(q.Criteria, &opts)
			probs, first := map[string]float64{}, ""
			for o := range opts {
				probs[o] = 1 / float64(len(opts))
				if first == "" || o < first {
					first = o
				}
			}
			answers[name] = map[string]any{"type": "choice", "choice": first, "probabilities": probs, "confidence": 0.5}
		case "score":
			var levels []any
			json.Unmarshal(q.Criteria, &levels)
			probs, legend := map[string]float64{}, map[string]string{}
			for i := range levels {
				probs[strconv.Itoa(i)] = 1 / float64(len(levels))
				legend[strconv.Itoa(i)] = fmt.Sprint(levels[i])
			}
			answers[name] = map[string]any{"type": "score", "score": float64(len(levels)-1) / 2, "probabilities": probs, "confidence": 0.4, "legend": legend, "vendor_extra": true}
		case "noul":
			answers[name] = map[string]any{"type": "noul", "noul": 0.25}
		}
	}
	out, _ := json.Marshal(map[string]any{"model": "vendor-resolved-1", "answers": answers, "usage": map[string]int{"input_tokens": 11, "output_tokens": 7}, "ext": "kept"})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Vendor-Request-Id", "vrid-1")
	w.Header().Set("Request-Id", "rid-low")
	w.Header().Set("X-RateLimit-Remaining", "99")
	w.Header().Set("Set-Cookie", "vendor_session=1")
	w.Header().Set("X-Vendor-Internal", "secret-ish")
	w.Write(out)
}

// gateway is a host under test with its ledger and fake vendor.
type gateway struct {
	*hosttest.Host
	vendor *vendor
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
		"UPSTREAM_KIND": "vendor", "UPSTREAM_URL": v.server.URL + "/v1",
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

func (g *gateway) exec(sql string, args ...abi.Value) abi.BatchResult {
	g.t.Helper()
	res := g.App.Ledger.Exec(context.Background(), &abi.Batch{Steps: []abi.Statement{{SQL: sql, Args: args}}})
	if res.Err != "" {
		g.t.Fatalf("%s: %s", sql, res.Err)
	}
	return res
}

// account creates an account with credits and a live API key.
func (g *gateway) account(credits int64) (acct, key string) {
	g.t.Helper()
	acct = keys.NewAccountID()
	key = keys.New(keys.APIKey, acct)
	now := abi.Int64(time.Now().Unix())
	g.exec(`INSERT INTO accounts (id, email, verified_at, balance, created_at) VALUES (?, ?, ?, ?, ?)`,
		abi.String(acct), abi.String(acct+"@example.test"), now, abi.Int64(credits), now)
	g.exec(`INSERT INTO credit_entries (account_id, delta, kind, created_at) VALUES (?, ?, 'grant', ?)`, abi.String(acct), abi.Int64(credits), now)
	g.exec(`INSERT INTO api_keys (id, account_id, name, prefix, secret_hash, created_at) VALUES (?, ?, 'test', ?, ?, ?)`,
		abi.String(keys.NewID("key_")), abi.String(acct), abi.String(keys.DisplayPrefix(key)), abi.String(keys.Hash(key)), now)
	return acct, key
}

func (g *gateway) balance(acct string) int64 {
	return g.exec(`SELECT balance FROM accounts WHERE id = ?`, abi.String(acct)).Steps[0].First().AsInt()
}

// checkInvariant asserts that every balance equals the sum of its ledger
// entries and none is negative.
func (g *gateway) checkInvariant() {
	g.t.Helper()
	res := g.exec(`SELECT a.id, a.balance, COALESCE((SELECT SUM(delta) FROM credit_entries e WHERE e.account_id = a.id), 0) FROM accounts a`)
	for _, row := range res.Steps[0].Rows {
		if row[1].AsInt() != row[2].AsInt() || row[1].AsInt() < 0 {
			g.t.Errorf("account %s: balance %d, sum of entries %d", row[0].AsString(), row[1].AsInt(), row[2].AsInt())
		}
	}
}

type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r reply) code() string { return r.Header.Get("X-Service-Error-Code") }

func (g *gateway) post(key string, body string, headers ...string) reply {
	g.t.Helper()
	req, _ := http.NewRequest("POST", g.URL+"/v1/service", bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
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
var hashOfLoopback = ledgerq.HashIP("127.0.0.1")

// addKey gives acct another live key.
func (g *gateway) addKey(acct string) string {
	key := keys.New(keys.APIKey, acct)
	g.exec(`INSERT INTO api_keys (id, account_id, name, prefix, secret_hash, created_at) VALUES (?, ?, 'more', ?, ?, 0)`,
		abi.String(keys.NewID("key_")), abi.String(acct), abi.String(keys.DisplayPrefix(key)), abi.String(keys.Hash(key)))
	return key
}

func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
