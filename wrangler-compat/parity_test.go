//go:build linux

package wranglercompat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/keys"
	"decisiongateway/testkit/sqldtest"
	"decisiongateway/testkit/testenv"
	"decisiongateway/wasm-host/ledger"
	"decisiongateway/wasm-host/openapi/check"
)

// consoleOrigin is SERVICE_ORIGIN on both hosts: browser writes must send it.
const consoleOrigin = "https://console.example.test"

// recorder is a fake upstream (the vendor API, or the Workers AI REST
// service the AI binding stands on) that records what it received.
type recorder struct {
	mu     sync.Mutex
	got    []seen
	answer func(w http.ResponseWriter, r *http.Request, body []byte)
	srv    *httptest.Server
}

type seen struct {
	path   string
	header http.Header
	body   []byte
}

func newRecorder(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, body []byte)) *recorder {
	rec := &recorder{answer: answer}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.got = append(rec.got, seen{r.URL.Path, r.Header.Clone(), body})
		rec.mu.Unlock()
		rec.answer(w, r, body)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *recorder) seen() []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]seen(nil), rec.got...)
}

// side is one host of a pair with its own ledger and upstream.
type side struct {
	server
	ledger   string
	upstream *recorder
	env      map[string]string
}

// pair runs one deployment on both hosts, the wazero host (bin/gateway
// serve) and the generated Workers under wrangler dev, with the same
// settings. Each host has its own sqld and its own fake upstream, so that
// the same operations on both leave the same state on both, and any
// difference is the hosts'.
type pair struct {
	t     *testing.T
	sides [2]*side
}

// startPair starts both hosts for UPSTREAM_KIND kind. upstreamPath is
// appended to the fake's URL for UPSTREAM_URL (the vendor's includes /v1).
func startPair(t *testing.T, kind, upstreamPath string, answer func(w http.ResponseWriter, r *http.Request, body []byte)) *pair {
	return startPairWith(t, kind, upstreamPath, answer, nil)
}

// startPairWith is startPair with more settings: more, when not nil, is
// called with each side's index and settings before the hosts start.
func startPairWith(t *testing.T, kind, upstreamPath string, answer func(w http.ResponseWriter, r *http.Request, body []byte), more func(i int, env map[string]string)) *pair {
	testenv.Binary(t) // fail before the slow starts when the reference is missing
	nodeBin(t)
	p := &pair{t: t}
	for i := range p.sides {
		up := newRecorder(t, answer)
		s := &side{ledger: sqldtest.Start(t), upstream: up}
		s.env = map[string]string{
			"LIBSQL_URL":              s.ledger,
			"UPSTREAM_KIND":           kind,
			"UPSTREAM_URL":            up.srv.URL + upstreamPath,
			"UPSTREAM_API_KEY":        upstreamKey,
			"SERVICE_ORIGIN":          consoleOrigin,
			"SERVICE_DEFAULT_MODEL":   "e2e-model",
			"SERVICE_WELCOME_CREDITS": "100",
			"SERVICE_RATE_LIMIT":      "50",
		}
		if kind == "edge" {
			s.env["SERVICE_DEFAULT_MODEL"] = "model-latest"
		}
		if more != nil {
			more(i, s.env)
		}
		p.sides[i] = s
	}
	p.sides[0].server = startGateway(t, p.sides[0].env)
	// Workers run no migrations: the operator applies them once with
	// `gateway admin migrate` against the deployment's libSQL.
	p.admin(1, "migrate")
	env := map[string]string{"AI_REST_URL": p.sides[1].env["UPSTREAM_URL"]}
	for k, v := range p.sides[1].env {
		env[k] = v
	}
	p.sides[1].server = startWrangler(t, env)
	return p
}

// admin runs `bin/gateway admin ARGS` against side i's ledger and returns
// the last line it printed (the cookie or key secret).
func (p *pair) admin(i int, args ...string) string {
	p.t.Helper()
	cmd := exec.Command(testenv.Binary(p.t), append([]string{"admin"}, args...)...)
	cmd.Env = cleanEnv()
	for k, v := range p.sides[i].env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.Output()
	if err != nil {
		p.t.Fatalf("gateway admin %s: %v", strings.Join(args, " "), err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// each returns a value per side, made by f.
func (p *pair) each(f func(i int) string) [2]string {
	return [2]string{f(0), f(1)}
}

// do sends the same request to side i, with header as name/value pairs.
func (p *pair) do(i int, method, path, body string, header ...string) answer {
	p.t.Helper()
	req, err := http.NewRequest(method, p.sides[i].url+path, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	for k := 0; k+1 < len(header); k += 2 {
		req.Header.Add(header[k], header[k+1]) // a name given twice is sent twice
	}
	// A redirect is an answer to compare, never followed.
	resp, err := (&http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		p.t.Fatalf("%s %s on %s: %v", method, path, p.sides[i].name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	// Every answer of either host fits the OpenAPI document both serve.
	v, err := check.Served()
	if err == nil {
		// Both hosts route by the decoded path; so is it matched here.
		u := *req.URL
		u.RawPath = ""
		err = v.Response(&http.Request{Method: req.Method, URL: &u, Header: req.Header, Host: req.Host}, resp.StatusCode, resp.Header, b)
	}
	if err != nil {
		p.t.Errorf("%s: %v", p.sides[i].name, err)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

// pairRoom is the time left in a minute that a request sent to both sides
// needs to be counted in that minute on both (a pair whose upstream hangs
// until its deadline asks for room itself).
const pairRoom = 2 * time.Second

// both sends a request to each side; per-side values (a key, a cookie)
// come from vary, called with the side's index. A request to a route an
// account's per-minute rate limit counts (decisions, the playground, model
// listings) is sent to both sides in one minute: otherwise one host would
// count it in the next window and answer another X-RateLimit-Remaining
// from then on.
func (p *pair) both(method, path, body string, vary func(i int) []string) [2]answer {
	p.t.Helper()
	if strings.HasPrefix(path, "/v1/") || path == "/api/service/playground" {
		testenv.RoomInWindow(p.t, time.Minute, pairRoom)
	}
	var out [2]answer
	for i := range out {
		var h []string
		if vary != nil {
			h = vary(i)
		}
		out[i] = p.do(i, method, path, body, h...)
	}
	return out
}

// same asserts that both hosts answered alike: status, body (byte for byte,
// or as JSON when asJSON) and the named headers.
func (p *pair) same(what string, a [2]answer, asJSON bool, headers ...string) {
	p.t.Helper()
	n0, n1 := p.sides[0].name, p.sides[1].name
	if a[0].status != a[1].status {
		p.t.Errorf("%s: status %s %d, %s %d\n%s\n%s", what, n0, a[0].status, n1, a[1].status, a[0].body, a[1].body)
	}
	if asJSON {
		var x, y any
		if json.Unmarshal(a[0].body, &x) != nil || json.Unmarshal(a[1].body, &y) != nil || !reflect.DeepEqual(x, y) {
			p.t.Errorf("%s: bodies differ\n%s: %s\n%s: %s", what, n0, a[0].body, n1, a[1].body)
		}
	} else if !bytes.Equal(a[0].body, a[1].body) {
		p.t.Errorf("%s: bodies differ\n%s: %s\n%s: %s", what, n0, a[0].body, n1, a[1].body)
	}
	// Strict-Transport-Security is the platform's, on every answer.
	for _, h := range append(headers, "Strict-Transport-Security") {
		if a[0].header.Values(h) == nil && a[1].header.Values(h) == nil {
			continue
		}
		if !reflect.DeepEqual(a[0].header.Values(h), a[1].header.Values(h)) {
			p.t.Errorf("%s: %s: %s %q, %s %q", what, h, n0, a[0].header.Values(h), n1, a[1].header.Values(h))
		}
	}
	for i, x := range a {
		host := p.sides[i].name + " " + what
		if x.header.Get("Cache-Control") != "no-store" || x.header.Get("X-Content-Type-Options") != "nosniff" || !requestIDPattern.MatchString(x.header.Get("X-Request-Id")) {
			p.t.Errorf("%s: platform headers missing: %v", host, x.header)
		}
		if bytes.Contains(x.body, []byte(upstreamKey)) {
			p.t.Errorf("%s: the upstream key leaked into an answer", host)
		}
	}
}

// balances reads an account's balance from each side's ledger and checks
// the ledger invariant there: balance equals the sum of the entries.
func (p *pair) balances(email string) [2]int64 {
	p.t.Helper()
	var out [2]int64
	for i, s := range p.sides {
		led, err := ledger.Open(context.Background(), s.ledger, "")
		if err != nil {
			p.t.Fatal(err)
		}
		res := led.Exec(context.Background(), &abi.Batch{Steps: []abi.Statement{{
			SQL:  "SELECT a.balance, COALESCE((SELECT SUM(delta) FROM credit_entries e WHERE e.account_id = a.id), 0) FROM accounts a WHERE a.email = ?",
			Args: []abi.Value{abi.String(email)},
		}}})
		led.Close()
		if res.Err != "" || len(res.Steps[0].Rows) != 1 {
			p.t.Fatalf("%s: balance of %s: %s", s.name, email, res.Err)
		}
		row := res.Steps[0].Rows[0]
		if row[0].AsInt() != row[1].AsInt() {
			p.t.Errorf("%s: %s has balance %d but entries summing to %d", s.name, email, row[0].AsInt(), row[1].AsInt())
		}
		out[i] = row[0].AsInt()
	}
	return out
}

// Headers a decision answer carries that must agree between the hosts.
// X-Request-Id differs by nature, X-RateLimit-Reset by the clock.
var decisionHeaders = []string{
	"Content-Type", "X-Service-Credits", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-Service-Response-Mode",
	"X-Upstream-Request-Id", "X-Vendor-Request-Id", "X-Idempotency-Replayed", "X-Service-Error-Source",
	"X-Service-Error-Code", "Retry-After", "X-Function-Version", "Set-Cookie", "Allow",
	"X-Upstream-RateLimit-Limit", "X-Upstream-RateLimit-Remaining", "X-Upstream-RateLimit-Reset",
}

func bearer(key string) []string {
	return []string{"Authorization", "Bearer " + key, "Content-Type", "application/json"}
}

func hasHeader(h http.Header, name string) bool { return len(h.Values(name)) > 0 }

func keyOf(a answer) string {
	var k struct{ Secret string }
	json.Unmarshal(a.body, &k)
	return k.Secret
}

func idOf(a answer) string {
	var k struct{ ID string }
	json.Unmarshal(a.body, &k)
	return k.ID
}

func newUnknownKey() string { return keys.New(keys.APIKey, keys.NewAccountID()) }
