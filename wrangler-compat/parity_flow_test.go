//go:build linux

package wranglercompat_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// vendorAnswer is the fake vendor's decision for decisionBody.
const vendorAnswer = `{"model":"vendor-resolved-1","answers":{"fruit":{"type":"choice","choice":"apple","probabilities":{"apple":0.7,"pear":0.3},"confidence":0.7}},"usage":{"input_tokens":11,"output_tokens":7},"ext":"kept"}`

const decisionBody = `{"model":"model-x","state":"a red apple","questions":{"fruit":{"type":"choice","criteria":{"apple":"an apple","pear":"a pear"}}}}`

// answerVendor plays the vendor API: a decision with tracking, rate-limit
// and headers the gateway must not forward, or a 429 when the state asks
// for one.
func answerVendor(w http.ResponseWriter, r *http.Request, body []byte) {
	if bytes.Contains(body, []byte("provider-busy")) {
		w.Header().Set("Retry-After", "7")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"type":"rate_limit","message":"busy"}}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Vendor-Request-Id", "vrid-1")
	w.Header().Set("X-RateLimit-Remaining", "99")
	w.Header().Set("RateLimit-Remaining", "98") // the other spelling: x-ratelimit-* is kept
	w.Header().Add("X-RateLimit-Limit", "100")  // repeated: forwarded joined on both hosts
	w.Header().Add("X-RateLimit-Limit", "101")
	w.Header().Set("Set-Cookie", "vendor_session=1")
	w.Header().Set("X-Vendor-Internal", "not-for-callers")
	io.WriteString(w, vendorAnswer)
}

// TestDecisionsAndKeysAgreeOnBothHosts runs one story on the wazero host
// and on the Workers, each with its own sqld and fake vendor: a decision,
// its replay and a conflicting reuse of its idempotency key, a default
// model, refusals before any upstream call, a busy upstream, and the key
// lifecycle of the console (create, list, use, revoke). Every answer must
// be the same on both hosts, headers included, and so must what the vendor
// received and what each ledger holds afterwards.
func TestDecisionsAndKeysAgreeOnBothHosts(t *testing.T) {
	p := startPair(t, "vendor", "/v1", answerVendor)
	key := p.each(func(i int) string { return p.admin(i, "key", "decider@example.test") })
	withKey := func(extra ...string) func(i int) []string {
		return func(i int) []string { return append(bearer(key[i]), extra...) }
	}

	first := p.both("POST", "/v1/service", decisionBody, withKey("Idempotency-Key", "op-1"))
	p.same("decision", first, false, decisionHeaders...)
	if first[0].status != 200 || string(first[0].body) != vendorAnswer {
		t.Fatalf("decision: %d %s", first[0].status, first[0].body)
	}
	for i, a := range first {
		if hasHeader(a.header, "Set-Cookie") || hasHeader(a.header, "X-Vendor-Internal") || a.header.Get("X-Service-Credits") == "" ||
			a.header.Get("X-Upstream-RateLimit-Remaining") != "99" || a.header.Get("X-Upstream-RateLimit-Limit") != "100, 101" {
			t.Errorf("%s: decision headers %v", p.sides[i].name, a.header)
		}
	}

	replay := p.both("POST", "/v1/service", decisionBody, withKey("Idempotency-Key", "op-1"))
	p.same("replay", replay, false, decisionHeaders...)
	for i, a := range replay {
		if a.header.Get("X-Idempotency-Replayed") != "true" || a.header.Get("X-Service-Credits") != "0" || a.header.Get("X-Request-Id") != first[i].header.Get("X-Request-Id") {
			t.Errorf("%s: replay %d %v", p.sides[i].name, a.status, a.header)
		}
	}

	conflict := p.both("POST", "/v1/service", strings.Replace(decisionBody, "red", "green", 1), withKey("Idempotency-Key", "op-1"))
	p.same("conflicting reuse of a key", conflict, true, decisionHeaders...)

	// A key sent twice is no key: both hosts refuse it before any charge
	// (the Workers runtime joins the fields into "op-1, op-2").
	twice := p.both("POST", "/v1/service", decisionBody, withKey("Idempotency-Key", "op-1", "Idempotency-Key", "op-2"))
	p.same("Idempotency-Key sent twice", twice, true, decisionHeaders...)
	if twice[0].status != 400 || twice[0].header.Get("X-Service-Error-Code") != "invalid_idempotency_key" {
		t.Errorf("Idempotency-Key sent twice: %d %q", twice[0].status, twice[0].header.Get("X-Service-Error-Code"))
	}

	p.same("default model", p.both("POST", "/v1/service", strings.Replace(decisionBody, `"model":"model-x",`, "", 1), withKey()), false, decisionHeaders...)

	for _, c := range []struct{ what, body string }{
		{"duplicate key", `{"state":1,"state":2,"questions":{"q":{"type":"noul"}}}`},
		{"not JSON", `{"state":`},
		{"boolean type", `{"state":null,"questions":{"q":{"type":"boolean"}}}`},
		{"oversize", `{"state":"` + strings.Repeat("x", 65536) + `","questions":{"q":{"type":"noul"}}}`},
	} {
		refusal := p.both("POST", "/v1/service", c.body, withKey())
		p.same(c.what, refusal, true, decisionHeaders...)
		for i, a := range refusal {
			if a.header.Get("X-Service-Credits") != "0" {
				t.Errorf("%s: %s: X-Service-Credits %q, want 0 (nothing charged)", p.sides[i].name, c.what, a.header.Get("X-Service-Credits"))
			}
		}
	}
	unknown := newUnknownKey()
	p.same("unknown key", p.both("POST", "/v1/service", decisionBody, func(int) []string { return bearer(unknown) }), true, decisionHeaders...)
	p.same("no key", p.both("POST", "/v1/service", decisionBody, nil), true, decisionHeaders...)
	p.same("busy upstream", p.both("POST", "/v1/service", strings.Replace(decisionBody, "a red apple", "provider-busy", 1), withKey()), true, decisionHeaders...)

	// The vendor saw the same calls from both hosts: the replay, the
	// conflict and the refusals never reached it.
	var calls [2][]seen
	for i, s := range p.sides {
		calls[i] = s.upstream.seen()
		for _, c := range calls[i] {
			if c.header.Get("Authorization") != "Bearer "+upstreamKey || c.path != "/v1/service" {
				t.Errorf("%s: vendor call %s with Authorization %q", s.name, c.path, c.header.Get("Authorization"))
			}
		}
	}
	if len(calls[0]) != 3 || len(calls[1]) != 3 {
		t.Fatalf("vendor calls: wazero %d, workerd %d; want 3 each (decision, default model, busy)", len(calls[0]), len(calls[1]))
	}
	for k := range calls[0] {
		if !bytes.Equal(calls[0][k].body, calls[1][k].body) {
			t.Errorf("vendor call %d bodies differ:\n%s\n%s", k, calls[0][k].body, calls[1][k].body)
		}
	}
	if !bytes.Equal(calls[0][0].body, []byte(decisionBody)) {
		t.Errorf("an explicit model must forward the original bytes; the vendor got %s", calls[0][0].body)
	}

	// The console's key lifecycle.
	cookie := p.each(func(i int) string { return p.admin(i, "session", "owner@example.test") })
	session := func(extra ...string) func(i int) []string {
		return func(i int) []string { return append([]string{"Cookie", cookie[i], "Origin", consoleOrigin}, extra...) }
	}
	created := p.both("POST", "/api/service/keys", `{"name":"ci"}`, session("Content-Type", "application/json"))
	for i, a := range created {
		var k map[string]any
		if a.status != 201 || json.Unmarshal(a.body, &k) != nil || k["name"] != "ci" || k["secret"] == nil || k["prefix"] == nil || k["id"] == nil {
			t.Fatalf("%s: create key: %d %s", p.sides[i].name, a.status, a.body)
		}
	}
	if created[0].status != created[1].status || created[0].header.Get("Content-Type") != created[1].header.Get("Content-Type") {
		t.Errorf("create key: %d %v / %d %v", created[0].status, created[0].header, created[1].status, created[1].header)
	}
	// A second key from the same instance has its own secret and id: each
	// call starts from init's memory (schema/abi.md, "The arena"), and
	// randomness must not come from state the reset puts back.
	second := p.both("POST", "/api/service/keys", `{"name":"ci-2"}`, session("Content-Type", "application/json"))
	for i, a := range second {
		if a.status != 201 || keyOf(a) == keyOf(created[i]) || idOf(a) == idOf(created[i]) {
			t.Errorf("%s: second key: %d %s (first %s)", p.sides[i].name, a.status, a.body, created[i].body)
		}
	}
	listed := p.both("GET", "/api/service/keys", "", session())
	for i, a := range listed {
		if a.status != 200 || !strings.Contains(string(a.body), idOf(created[i])) || strings.Contains(string(a.body), keyOf(created[i])) {
			t.Errorf("%s: list keys: %d %s", p.sides[i].name, a.status, a.body)
		}
	}
	useNew := func(i int) []string { return bearer(keyOf(created[i])) }
	p.same("decision with the new key", p.both("POST", "/v1/service", decisionBody, useNew), false, decisionHeaders...)
	revoked := [2]answer{}
	for i := range revoked {
		revoked[i] = p.do(i, "DELETE", "/api/service/keys/"+idOf(created[i]), "", session()(i)...)
	}
	for i, a := range revoked {
		// The body names the key, whose id is each ledger's own.
		a.body = bytes.Replace(a.body, []byte(idOf(created[i])), []byte("ID"), 1)
		revoked[i] = a
	}
	p.same("revoke", revoked, true, "Content-Type")
	p.same("decision with a revoked key", p.both("POST", "/v1/service", decisionBody, useNew), true, decisionHeaders...)
	p.same("key write from another origin", p.both("POST", "/api/service/keys", `{"name":"x"}`, func(i int) []string {
		return []string{"Cookie", cookie[i], "Origin", "https://evil.example"}
	}), true, decisionHeaders...)
	p.same("keys without a session", p.both("GET", "/api/service/keys", "", nil), true, decisionHeaders...)

	for _, email := range []string{"decider@example.test", "owner@example.test"} {
		if b := p.balances(email); b[0] != b[1] {
			t.Errorf("%s: balance %d on the wazero host, %d on Workers", email, b[0], b[1])
		}
	}
}

// bindingAnswer is the Workers AI REST service's answer for edgeBody.
const bindingAnswer = `{"result":{"model":"vendor/model-2026-01-15","answers":[
 {"name":"team","probabilities":[0.8,0.2]},
 {"name":"urgency","probabilities":[0.25,0.75],"confidence":0.75},
 {"name":"refund","noul":0.9}],"usage":{"prompt_tokens":50,"completion_tokens":9}},"success":true,"errors":[],"messages":[]}`

const edgeBody = `{"state":{"ticket":"my kettle arrived broken, I want a refund"},"questions":{
 "team":{"type":"choice","criteria":{"billing":"refunds","repairs":"broken hardware"}},
 "urgency":{"type":"score","criteria":["low","high"]},
 "refund":{"type":"noul","criteria":{"true":"a refund is wanted"}}}}`

// TestEdgeDecisionsAgreeOnBothHosts runs the edge-runtime upstream on both
// hosts: the wazero host calls the Workers AI REST stand-in directly, the
// Workers call env.AI.run, bound offline to the local AI Worker that calls
// the same stand-in. The model input, the mapped answers and the public
// model catalog must agree.
func TestEdgeDecisionsAgreeOnBothHosts(t *testing.T) {
	p := startPair(t, "edge", "", func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, bindingAnswer)
	})
	key := p.each(func(i int) string { return p.admin(i, "key", "edge@example.test") })
	withKey := func(i int) []string { return bearer(key[i]) }

	d := p.both("POST", "/v1/service", edgeBody, withKey)
	p.same("edge decision", d, false, decisionHeaders...)
	if d[0].status != 200 || d[0].header.Get("X-Service-Response-Mode") != "edge-runtime" {
		t.Fatalf("edge decision: %d %v %s", d[0].status, d[0].header, d[0].body)
	}
	p.same("edge decision with an alias", p.both("POST", "/v1/service", `{"model":"model-2025-01-01",`+edgeBody[1:], withKey), false, decisionHeaders...)
	p.same("models", p.both("GET", "/v1/models", "", withKey), false, decisionHeaders...)

	var calls [2][]seen
	for i, s := range p.sides {
		calls[i] = s.upstream.seen()
	}
	if len(calls[0]) != 2 || len(calls[1]) != 2 {
		t.Fatalf("binding calls: wazero %d, workerd %d; want 2 each", len(calls[0]), len(calls[1]))
	}
	for k := range calls[0] {
		var a, b any
		json.Unmarshal(calls[0][k].body, &a)
		json.Unmarshal(calls[1][k].body, &b)
		if calls[0][k].path != calls[1][k].path || !jsonEqual(a, b) {
			t.Errorf("binding call %d differs:\n%s %s\n%s %s", k, calls[0][k].path, calls[0][k].body, calls[1][k].path, calls[1][k].body)
		}
	}
	if b := p.balances("edge@example.test"); b[0] != b[1] {
		t.Errorf("balance %d on the wazero host, %d on Workers", b[0], b[1])
	}
}

// TestEdgeBindingPastTheDeadlineAgreesOnBothHosts: a binding that never
// answers is given up where a vendor's fetch would be, before the request's
// deadline, so on both hosts the decision settles: 504 upstream_timeout,
// X-Service-Credits 0, the reservation refunded at once.
func TestEdgeBindingPastTheDeadlineAgreesOnBothHosts(t *testing.T) {
	p := startPairWith(t, "edge", "", func(w http.ResponseWriter, r *http.Request, body []byte) {
		<-r.Context().Done()
	}, func(_ int, env map[string]string) { env["GATEWAY_REQUEST_TIMEOUT"] = "4s" })
	p.refusedAndRefunded("a binding that never answers", "slow-binding@example.test", 504, "upstream_timeout")
}

// TestEdgeOversizedBindingOutputAgreesOnBothHosts: a binding output past
// the 4 MiB every upstream answer is held to is refused on both hosts, 502
// upstream_response_too_large, refunded, never handed to the module.
func TestEdgeOversizedBindingOutputAgreesOnBothHosts(t *testing.T) {
	huge := strings.Replace(bindingAnswer, `"usage":`, `"padding":"`+strings.Repeat("x", 4<<20)+`","usage":`, 1)
	p := startPair(t, "edge", "", func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, huge)
	})
	p.refusedAndRefunded("an oversized binding output", "huge-binding@example.test", 502, "upstream_response_too_large")
}

// refusedAndRefunded sends edgeBody with a new key of email's to both
// hosts and checks that both answer alike, status and code, with
// X-Service-Credits 0 and the balance as it was (the reservation refunded).
func (p *pair) refusedAndRefunded(what, email string, status int, code string) {
	p.t.Helper()
	key := p.each(func(i int) string { return p.admin(i, "key", email) })
	before := p.balances(email)
	d := p.both("POST", "/v1/service", edgeBody, func(i int) []string { return bearer(key[i]) })
	p.same(what, d, true, decisionHeaders...)
	for i, a := range d {
		if a.status != status || a.header.Get("X-Service-Error-Code") != code || a.header.Get("X-Service-Credits") != "0" {
			p.t.Errorf("%s: %s: %d %v %.300s", p.sides[i].name, what, a.status, a.header, a.body)
		}
	}
	if after := p.balances(email); after != before {
		p.t.Errorf("%s: balances %v, want %v (refunded)", what, after, before)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
