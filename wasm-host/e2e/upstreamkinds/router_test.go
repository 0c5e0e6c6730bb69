package upstreamkinds_test

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
)

// completion is a Chat Completions reply answering decision, whose choice
// token carries log-probabilities: billing 0.6, repairs 0.4.
func completion(t *testing.T) string {
	content := []string{
		`{"answers":{"team":{"choice":"`,
		`billing"`,
		`,"probabilities":{"billing":0.9,"repairs":0.1}},"urgency":{"level":1,"probabilities":{"0":1,"1":3}},"refund":{"holds":true,"probability":0.7}}}`,
	}
	entry := func(tok string, lp float64, alts map[string]float64) map[string]any {
		tops := []any{}
		for a, p := range alts {
			tops = append(tops, map[string]any{"token": a, "logprob": math.Log(p)})
		}
		return map[string]any{"token": tok, "logprob": lp, "top_logprobs": tops}
	}
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-9", "object": "chat.completion", "model": "acme/decider-2026-02",
		"choices": []any{map[string]any{
			"index":   0,
			"message": map[string]any{"role": "assistant", "content": strings.Join(content, "")},
			"logprobs": map[string]any{"content": []any{
				entry(content[0], 0, nil),
				entry(content[1], math.Log(0.6), map[string]float64{`billing"`: 0.6, `repairs"`: 0.4}),
				// No entry for the rest: those answers use the stated numbers.
			}},
			"finish_reason": "stop",
		}},
		"usage": map[string]any{"prompt_tokens": 400, "completion_tokens": 60, "total_tokens": 460},
	})
	return string(b)
}

func newRouter(t *testing.T) *fake {
	body := completion(t)
	return newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		writeJSON(w, 200, body, "X-Request-Id", "router-req-1", "X-RateLimit-Remaining", "41", "Set-Cookie", "r=1")
	})
}

func TestRouterDecisionEndToEnd(t *testing.T) {
	rt := newRouter(t)
	g := startGateway(t, "router", rt.URL+"/api/v1")
	acct, key := g.account(100)

	r := g.decide(key, withModel("acme/decider"))
	if r.Status != 200 || r.Header.Get("X-Service-Response-Mode") != "router-adapted" {
		t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
	}
	if c := g.charged(r, acct, 100); c <= 0 {
		t.Errorf("a success charged %d", c)
	}
	got := r.json(t)
	// The choice distribution comes from the log-probabilities, not the
	// stated 0.9/0.1; the others from the stated numbers, normalised.
	if got["model"] != "acme/decider-2026-02" || path(got, "answers", "team", "choice") != "billing" ||
		!near(path(got, "answers", "team", "probabilities", "repairs"), 0.4) ||
		!near(path(got, "answers", "urgency", "score"), 0.75) || !near(path(got, "answers", "refund", "noul"), 0.7) ||
		!near(path(got, "usage", "output_tokens"), 60) {
		t.Errorf("answer %s", r.Body)
	}
	if r.Header.Get("X-Upstream-Request-Id") != "router-req-1" || r.Header.Get("X-Upstream-RateLimit-Remaining") != "41" ||
		r.Header.Get("Set-Cookie") != "" || r.Header.Get("X-RateLimit-Remaining") != "119" {
		t.Errorf("headers %v", r.Header)
	}

	reqs := rt.Seen()
	if len(reqs) != 1 || reqs[0].Method != "POST" || reqs[0].Path != "/api/v1/chat/completions" ||
		reqs[0].Header.Get("Authorization") != "Bearer "+operatorKey {
		t.Fatalf("router received %+v", reqs)
	}
	var sent map[string]any
	decodeInto(t, reqs[0].Body, &sent)
	if sent["model"] != "acme/decider" || sent["logprobs"] != true ||
		path(sent, "response_format", "json_schema", "strict") != true ||
		len(path(sent, "response_format", "json_schema", "schema", "properties", "answers", "required").([]any)) != 3 {
		t.Errorf("router request %s", reqs[0].Body)
	}
}

func TestRouterDefaultModelIsForwarded(t *testing.T) {
	rt := newRouter(t)
	g := startGateway(t, "router", rt.URL)
	_, key := g.account(100)
	if r := g.decide(key, decision); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var sent map[string]any
	decodeInto(t, rt.Seen()[0].Body, &sent)
	if sent["model"] != "model-latest" {
		t.Errorf("model %v", sent["model"])
	}
}

func TestRouterRejectsExtensionFieldsBeforeAnyCharge(t *testing.T) {
	rt := newRouter(t)
	g := startGateway(t, "router", rt.URL)
	acct, key := g.account(100)
	r := g.decide(key, strings.Replace(decision, `"state"`, `"metadata":{"user":"u1"},"state"`, 1))
	if r.Status != 400 || r.code() != "unsupported_extension_field" || !strings.Contains(string(r.Body), "metadata") {
		t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
	}
	if g.charged(r, acct, 100) != 0 || len(rt.Seen()) != 0 || g.count(`SELECT COUNT(*) FROM requests`) != 0 {
		t.Errorf("a rejected request was forwarded, charged or recorded")
	}
}

func TestRouterErrorsAndRateLimitHeadersMapped(t *testing.T) {
	rt := newRouter(t)
	g := startGateway(t, "router", rt.URL)
	acct, key := g.account(100)
	const limited = `{"error":{"message":"Rate limit exceeded: free-models-per-min","code":429}}`
	rt.Handle(func(w http.ResponseWriter, r *http.Request, _ []byte) {
		writeJSON(w, 429, limited, "Retry-After", "17", "X-RateLimit-Limit", "20", "X-RateLimit-Remaining", "0",
			"X-RateLimit-Reset", "1790000000", "Set-Cookie", "router=1", "X-Internal-Trace", "abc")
	})
	r := g.decide(key, decision)
	if r.Status != 429 || r.code() != "provider_busy" || r.source() != "upstream" || string(r.Body) != limited {
		t.Fatalf("%d %s %s %s", r.Status, r.code(), r.source(), r.Body)
	}
	if r.Header.Get("Retry-After") != "17" || r.Header.Get("X-Upstream-RateLimit-Limit") != "20" ||
		r.Header.Get("X-Upstream-RateLimit-Remaining") != "0" || r.Header.Get("X-Upstream-RateLimit-Reset") != "1790000000" {
		t.Errorf("upstream headers %v", r.Header)
	}
	// The platform's own window is reported apart from the router's.
	if r.Header.Get("X-RateLimit-Limit") != "120" || r.Header.Get("Set-Cookie") != "" || r.Header.Get("X-Internal-Trace") != "" {
		t.Errorf("platform headers %v", r.Header)
	}
	if g.charged(r, acct, 100) != 0 {
		t.Errorf("a provider_busy was charged")
	}

	for _, tc := range []struct {
		status       int
		body, ct     string
		code, source string
	}{
		{500, `{"error":{"message":"upstream provider error"}}`, "application/json", "upstream_error", "upstream"},
		{401, `{"error":{"message":"bad key"}}`, "application/json", "upstream_auth_failed", "upstream"},
		{502, `<html>bad gateway</html>`, "text/html", "upstream_invalid_response", "platform"},
		{200, `{"id":"x","choices":[{"message":{"content":"I think billing."},"finish_reason":"stop"}]}`, "application/json", "invalid_upstream_answer", "platform"},
	} {
		rt.Handle(func(w http.ResponseWriter, r *http.Request, _ []byte) {
			writeJSON(w, tc.status, tc.body, "Content-Type", tc.ct)
		})
		r := g.decide(key, decision)
		want := tc.status
		if tc.source == "platform" {
			want = 502
		}
		if r.Status != want || r.code() != tc.code || r.source() != tc.source {
			t.Errorf("router %d: %d %s %s %s", tc.status, r.Status, r.code(), r.source(), r.Body)
		}
		if g.charged(r, acct, 100) != 0 {
			t.Errorf("router %d: charged", tc.status)
		}
	}
	if n := g.count(`SELECT COUNT(*) FROM requests WHERE state = 'failed' AND charged = 0`); n != 5 {
		t.Errorf("%d failed, refunded records, want 5", n)
	}
}
