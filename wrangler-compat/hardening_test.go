//go:build linux

package wranglercompat_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"decisiongateway/schema"
	"decisiongateway/testkit/sqldtest"
	"decisiongateway/testkit/testenv"
)

// echoingVendor plays the vendor API, answering decisionBody; the state
// of the request picks how it hands the operator's key back: in a valid
// answer (an extension field the vendor-native mode passes through), in
// an error's message, or as its request id.
func echoingVendor(w http.ResponseWriter, r *http.Request, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case bytes.Contains(body, []byte("echo-success")):
		io.WriteString(w, strings.Replace(vendorAnswer, `"ext":"kept"`, `"ext":"`+r.Header.Get("Authorization")+`"`, 1))
	case bytes.Contains(body, []byte("echo-error")):
		w.WriteHeader(401)
		io.WriteString(w, `{"error":{"type":"authentication_error","message":"invalid key `+upstreamKey+`"}}`)
	case bytes.Contains(body, []byte("echo-header")):
		w.Header().Set("X-Vendor-Request-Id", upstreamKey)
		io.WriteString(w, vendorAnswer)
	default:
		io.WriteString(w, vendorAnswer)
	}
}

// echoingRouter plays a Chat Completions router the same way: the key as
// the resolved model (which the adapter reports), in an error, or in a
// forwarded header.
func echoingRouter(w http.ResponseWriter, r *http.Request, body []byte) {
	content := `{"answers":{"fruit":{"choice":"apple","probabilities":{"apple":0.7,"pear":0.3}}}}`
	reply := func(model string) string {
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "model": model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content},
				"logprobs": nil, "finish_reason": "stop"}},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
		return string(b)
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case bytes.Contains(body, []byte("echo-success")):
		io.WriteString(w, reply(upstreamKey))
	case bytes.Contains(body, []byte("echo-error")):
		w.WriteHeader(400)
		io.WriteString(w, `{"error":{"message":"no such key: `+upstreamKey+`","code":400}}`)
	case bytes.Contains(body, []byte("echo-header")):
		w.Header().Set("X-Request-Id", "req-"+upstreamKey)
		io.WriteString(w, reply("acme/decider"))
	default:
		io.WriteString(w, reply("acme/decider"))
	}
}

// leaked says where an answer carries the upstream key, if anywhere.
func leaked(a answer) string {
	if bytes.Contains(a.body, []byte(upstreamKey)) {
		return "body"
	}
	for name, values := range a.header {
		for _, v := range values {
			if strings.Contains(name+v, upstreamKey) {
				return "header " + name
			}
		}
	}
	return ""
}

// An upstream that hands the operator's key back, in a success body, an
// error body or a header, on the vendor and router kinds, gets it to no
// caller and no log on either host: both answer the same platform 5xx and
// refund. (On Workers the edge kind's binding is env.AI, which is never
// given UPSTREAM_API_KEY, so it has no key to echo; the wazero host's edge
// kind is tested in wasm-host/e2e/upstreamkinds.) The probes answer the
// same on both hosts too.
func TestEchoedUpstreamKeyNeverLeavesEitherHost(t *testing.T) {
	for _, k := range []struct {
		kind, path string
		answer     func(w http.ResponseWriter, r *http.Request, body []byte)
	}{
		{"vendor", "/v1", echoingVendor},
		{"router", "/api/v1", echoingRouter},
	} {
		t.Run(k.kind, func(t *testing.T) {
			p := startPair(t, k.kind, k.path, k.answer)
			p.same("/healthz", p.both("GET", "/healthz", "", nil), false, "Content-Type")
			doc := p.both("GET", "/openapi.json", "", nil)
			p.same("/openapi.json", doc, true, "Content-Type", "Access-Control-Allow-Origin")
			var served, committed any
			if json.Unmarshal(doc[1].body, &served) != nil || json.Unmarshal(schema.OpenAPI, &committed) != nil || !reflect.DeepEqual(served, committed) {
				t.Errorf("/openapi.json on %s is not schema/openapi.json: %d %.200s", p.sides[1].name, doc[1].status, doc[1].body)
			}
			// The wazero host loads its other modules after its first
			// answer or a readiness probe: wait for it as an orchestrator
			// does before comparing the answers.
			waitReadyz(t, p.sides[0].url)
			ready := p.both("GET", "/readyz", "", nil)
			p.same("/readyz", ready, false, "Content-Type")
			if ready[0].status != 200 || string(ready[0].body) != `{"ready":true,"checks":{"ledger":"ok","upstream":"ok","functions":"ok"}}` {
				t.Errorf("/readyz: %d %s", ready[0].status, ready[0].body)
			}

			email := k.kind + "-echo@example.test"
			key := p.each(func(i int) string { return p.admin(i, "key", email) })
			before := p.balances(email)
			for _, echo := range []string{"echo-success", "echo-error", "echo-header"} {
				a := p.both("POST", "/v1/service", strings.Replace(decisionBody, "a red apple", echo, 1), func(i int) []string { return bearer(key[i]) })
				p.same(echo, a, false, decisionHeaders...)
				for i, x := range a {
					if where := leaked(x); where != "" {
						t.Errorf("%s %s: the key reached the caller in the %s: %d %v %s", p.sides[i].name, echo, where, x.status, x.header, x.body)
					}
					if x.status < 500 || x.header.Get("X-Service-Error-Source") != "platform" {
						t.Errorf("%s %s: want a platform 5xx, got %d %v %s", p.sides[i].name, echo, x.status, x.header, x.body)
					}
				}
			}
			if after := p.balances(email); after != before {
				t.Errorf("balances %v after replaced answers, want %v (refunded)", after, before)
			}
			for _, s := range p.sides {
				if len(s.upstream.seen()) != 3 {
					t.Errorf("%s: upstream called %d times, want 3", s.name, len(s.upstream.seen()))
				}
				if strings.Contains(s.log.String(), upstreamKey) {
					t.Errorf("%s: the key reached the log:\n%s", s.name, s.log.String())
				}
			}
		})
	}
}

// The front Worker's /readyz says what is not ready, in the wazero host's
// words: a ledger that was never migrated, no upstream, a function whose
// Worker is not deployed.
func TestWorkersReadinessSaysWhatIsMissing(t *testing.T) {
	built := filepath.Join(testenv.Root(t), "build", "functions")
	fns := t.TempDir()
	entries, err := os.ReadDir(built)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "decide.wasm" {
			data, _ := os.ReadFile(filepath.Join(built, e.Name()))
			writeFile(t, filepath.Join(fns, e.Name()), string(data))
		}
	}
	w := startWrangler(t, map[string]string{"LIBSQL_URL": sqldtest.Start(t)}, "-functions", fns)
	if a := do(t, "GET", w.url+"/healthz"); a.status != 200 || string(a.body) != `{"status":"ok"}` {
		t.Errorf("/healthz: %d %s", a.status, a.body)
	}
	a := do(t, "GET", w.url+"/readyz")
	var got map[string]any
	json.Unmarshal(a.body, &got)
	want := map[string]any{
		"ready":            false,
		"checks":           map[string]any{"ledger": "not_migrated", "upstream": "not_configured", "functions": "missing"},
		"missingFunctions": []any{"decide"},
		"reasons": []any{
			"ledger not migrated: run `bin/gateway admin migrate`",
			"upstream not configured: set UPSTREAM_KIND and UPSTREAM_URL",
			"functions missing: decide",
		},
	}
	if a.status != 503 || !reflect.DeepEqual(got, want) || a.header.Get("Cache-Control") != "no-store" {
		t.Errorf("/readyz: %d %s", a.status, a.body)
	}
}
