package upstreamkinds_test

import (
	"net/http"
	"strings"
	"testing"
)

// bindingResult is a Workers AI REST success answering decision.
const bindingResult = `{"result":{"model":"vendor/model-2026-01-15","answers":[
 {"name":"team","probabilities":[0.8,0.2]},
 {"name":"urgency","probabilities":[0.25,0.75],"confidence":0.75},
 {"name":"refund","noul":0.9}],"usage":{"prompt_tokens":50,"completion_tokens":9}},"success":true,"errors":[],"messages":[]}`

func newBinding(t *testing.T) *fake {
	return newFake(t, func(w http.ResponseWriter, r *http.Request, body []byte) { writeJSON(w, 200, bindingResult) })
}

func TestEdgeDecisionEndToEnd(t *testing.T) {
	b := newBinding(t)
	g := startGateway(t, "edge", b.URL+"/ai")
	acct, key := g.account(100)

	r := g.decide(key, decision)
	if r.Status != 200 || r.Header.Get("X-Service-Response-Mode") != "edge-runtime" {
		t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
	}
	if c := g.charged(r, acct, 100); c <= 0 {
		t.Errorf("a success charged %d", c)
	}
	got := r.json(t)
	if got["model"] != "vendor/model-2026-01-15" || path(got, "answers", "team", "choice") != "billing" ||
		!near(path(got, "answers", "urgency", "score"), 0.75) || path(got, "answers", "urgency", "legend", "1") != "high" ||
		!near(path(got, "answers", "refund", "noul"), 0.9) || !near(path(got, "usage", "input_tokens"), 50) {
		t.Errorf("answer %s", r.Body)
	}

	reqs := b.Seen()
	if len(reqs) != 1 || reqs[0].Method != "POST" || reqs[0].Path != "/ai/run/vendor/model" {
		t.Fatalf("binding received %+v", reqs)
	}
	if reqs[0].Header.Get("Authorization") != "Bearer "+operatorKey {
		t.Errorf("binding Authorization %q", reqs[0].Header.Get("Authorization"))
	}
	var in struct {
		State     map[string]any
		Questions []map[string]any
	}
	decodeInto(t, reqs[0].Body, &in)
	if in.State["ticket"] == nil || len(in.Questions) != 3 || in.Questions[0]["name"] != "team" ||
		path(in.Questions[1], "extensions", "x-hint") != "kept" {
		t.Errorf("binding input %s", reqs[0].Body)
	}
}

// UPSTREAM_URL may end with a slash: the binding is still called at
// {base}/run/{model}, on either build (the socket build's module makes the
// call itself, from its environment).
func TestEdgeBaseURLWithTrailingSlashReachesTheBinding(t *testing.T) {
	b := newBinding(t)
	g := startGateway(t, "edge", b.URL+"/ai/")
	_, key := g.account(100)
	if r := g.decide(key, decision); r.Status != 200 {
		t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
	}
	if reqs := b.Seen(); len(reqs) != 1 || reqs[0].Path != "/ai/run/vendor/model" {
		for _, r := range reqs {
			t.Errorf("binding received %s %s", r.Method, r.Path)
		}
		t.Fatalf("want one POST /ai/run/vendor/model")
	}
}

func TestEdgeModelAliasesReachTheBinding(t *testing.T) {
	b := newBinding(t)
	g := startGateway(t, "edge", b.URL)
	_, key := g.account(1000)
	for model, want := range map[string]string{
		"model-latest":            "/run/vendor/model",
		"model-2025-01-01":        "/run/vendor/model",
		"another-vendor/big":      "/run/vendor/model",
		"vendor/model-2026-01-15": "/run/vendor/model-2026-01-15",
	} {
		before := len(b.Seen())
		if r := g.decide(key, withModel(model)); r.Status != 200 {
			t.Errorf("%s: %d %s", model, r.Status, r.Body)
		}
		if reqs := b.Seen(); len(reqs) != before+1 || reqs[before].Path != want {
			t.Errorf("%s: binding called at %v, want %s", model, reqs[before:], want)
		}
	}
}

func TestEdgeDeploymentDefaultModel(t *testing.T) {
	// SERVICE_DEFAULT_MODEL=model-latest is an alias: the binding still
	// gets vendor/model.
	b := newBinding(t)
	g := startGateway(t, "edge", b.URL, "SERVICE_DEFAULT_MODEL", "model-latest")
	_, key := g.account(100)
	if r := g.decide(key, decision); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if reqs := b.Seen(); len(reqs) != 1 || reqs[0].Path != "/run/vendor/model" {
		t.Errorf("binding called at %+v", reqs)
	}
}

func TestEdgeRejectsExtensionFieldsBeforeAnyCharge(t *testing.T) {
	b := newBinding(t)
	g := startGateway(t, "edge", b.URL)
	acct, key := g.account(100)
	r := g.decide(key, strings.Replace(decision, `"state"`, `"temperature":0.2,"state"`, 1))
	if r.Status != 400 || r.code() != "unsupported_extension_field" || r.source() != "platform" ||
		!strings.Contains(string(r.Body), "temperature") {
		t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
	}
	if g.charged(r, acct, 100) != 0 || len(b.Seen()) != 0 {
		t.Errorf("rejected request reached the binding or was charged")
	}
	if n := g.count(`SELECT COUNT(*) FROM requests`); n != 0 {
		t.Errorf("%d decision records for a rejected body", n)
	}
	// A vendor/ name that is not path-safe never reaches the binding URL.
	r = g.decide(key, withModel("vendor/../../tokens"))
	if r.Status != 400 || r.code() != "unsupported_model" || g.charged(r, acct, 100) != 0 || len(b.Seen()) != 0 {
		t.Errorf("vendor/../../tokens: %d %s %s, binding got %d requests", r.Status, r.code(), r.Body, len(b.Seen()))
	}
}

func TestEdgeBadOutputIsRefunded(t *testing.T) {
	b := newBinding(t)
	g := startGateway(t, "edge", b.URL)
	acct, key := g.account(100)
	b.Handle(func(w http.ResponseWriter, r *http.Request, body []byte) {
		// The probabilities sum to 0.5: mapped, then refused by validation.
		writeJSON(w, 200, strings.Replace(bindingResult, "[0.8,0.2]", "[0.3,0.2]", 1))
	})
	r := g.decide(key, decision)
	if r.Status != 502 || r.code() != "invalid_upstream_answer" || r.source() != "platform" {
		t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
	}
	if g.charged(r, acct, 100) != 0 {
		t.Errorf("a refused answer was charged")
	}
	if n := g.count(`SELECT COUNT(*) FROM requests WHERE state = 'failed' AND charged = 0`); n != 1 {
		t.Errorf("%d failed, refunded records", n)
	}
}

func TestEdgeBindingErrorsKeepStatusAndBody(t *testing.T) {
	b := newBinding(t)
	g := startGateway(t, "edge", b.URL)
	acct, key := g.account(100)
	const busy = `{"result":null,"success":false,"errors":[{"code":3040,"message":"Capacity temporarily exceeded"}],"messages":[]}`
	cases := []struct {
		status int
		body   string
		code   string
		source string
	}{
		{429, busy, "provider_busy", "upstream"},
		{400, strings.Replace(busy, "3040", "5007", 1), "upstream_rejected_request", "upstream"},
		{503, "upstream connect error", "provider_busy", "platform"},
	}
	for _, tc := range cases {
		b.Handle(func(w http.ResponseWriter, r *http.Request, body []byte) {
			writeJSON(w, tc.status, tc.body, "Content-Type", "text/plain", "Retry-After", "9")
		})
		r := g.decide(key, decision)
		if r.Status != tc.status || r.code() != tc.code || r.source() != tc.source {
			t.Errorf("binding %d: %d %s %s %s", tc.status, r.Status, r.code(), r.source(), r.Body)
		}
		if tc.source == "upstream" && (string(r.Body) != tc.body || r.Header.Get("X-Service-Response-Mode") != "edge-runtime") {
			t.Errorf("binding %d: body %s mode %q", tc.status, r.Body, r.Header.Get("X-Service-Response-Mode"))
		}
		if g.charged(r, acct, 100) != 0 {
			t.Errorf("binding %d: charged", tc.status)
		}
	}
}

// TestEdgeBindingPastTheDeadlineIsRefunded: a binding that never answers is
// given up early enough for the decision to settle, as a vendor's or
// router's call is (settings.UpstreamTimeout): 504 upstream_timeout,
// refunded at once, not an unsettled attempt left to its lease.
func TestEdgeBindingPastTheDeadlineIsRefunded(t *testing.T) {
	b := newFake(t, func(w http.ResponseWriter, r *http.Request, body []byte) { <-r.Context().Done() })
	// 4 s: the binding is given up at 3 s, and the decision has the 1 s
	// settle margin (a quarter) to resume, settle and answer. With 2 s its
	// 500 ms margin was up to 300 ms spent on a loaded 2-core machine, and
	// an answer past the deadline is 504 function_timeout, unsettled.
	g := startGateway(t, "edge", b.URL, "GATEWAY_REQUEST_TIMEOUT", "4s")
	acct, key := g.account(100)
	for i := 0; i < 3; i++ {
		r := g.decide(key, decision)
		if r.Status != 504 || r.code() != "upstream_timeout" || r.source() != "platform" {
			t.Fatalf("attempt %d: %d %s %s", i+1, r.Status, r.code(), r.Body)
		}
		if g.charged(r, acct, 100) != 0 {
			t.Errorf("attempt %d: a timed-out binding call was charged", i+1)
		}
	}
	if n := g.count(`SELECT COUNT(*) FROM requests WHERE state = 'failed' AND charged = 0`); n != 3 {
		t.Errorf("%d failed, refunded records, want 3", n)
	}
	g.CheckInvariant()
}
