package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/wasm-host/routes"
)

// Counting an answer is on every request's path: once its route, status
// and code have been seen, it allocates nothing.
func TestObservingAllocatesNothing(t *testing.T) {
	h := New(routes.Table, "test")
	route := &routes.Table[0]
	ok := abi.Response{Status: 200, Headers: abi.Headers{{Name: "x-service-credits", Value: "3"}}}
	limited := abi.Response{Status: 429, Headers: abi.Headers{{Name: "x-service-error-source", Value: "platform"}, {Name: "x-service-error-code", Value: "rate_limited"}}}
	observe := func() {
		h.Served(route, &ok, time.Millisecond)
		h.Served(route, &limited, time.Millisecond)
		h.Served(nil, &limited, time.Millisecond)
		h.Outbound("upstream", Outcome(200, ""), time.Millisecond)
		h.Batch(time.Microsecond, false)
	}
	observe()
	if n := testing.AllocsPerRun(100, observe); n != 0 {
		t.Errorf("%v allocations per round of observations, want 0", n)
	}
	body := scrapeText(t, h)
	for _, want := range []string{
		`gateway_http_requests_total{code="",route="POST /v1/service",status="200"} 102`,
		`gateway_http_requests_total{code="rate_limited",route="unrouted",status="429"} 102`,
		`gateway_rate_limited_total{code="rate_limited",route="POST /v1/service"} 102`,
		`gateway_credits_charged_total 306`,
		`gateway_upstream_requests_total{outcome="ok",target="upstream"} 102`,
		`gateway_build_info{version="test"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("missing %q in\n%s", want, body)
		}
	}
}

// Families added as text follow the registry's own in one answer.
func TestAddedTextIsServed(t *testing.T) {
	h := New(routes.Table, "test")
	h.AddText(func(w io.Writer) { io.WriteString(w, "# TYPE extra_total counter\nextra_total 7\n") })
	if body := scrapeText(t, h); !strings.HasSuffix(body, "extra_total 7\n") || !strings.Contains(body, "gateway_build_info") {
		t.Errorf("scrape:\n%s", body)
	}
}

func TestOutcome(t *testing.T) {
	for _, c := range []struct {
		status int
		kind   string
		want   string
	}{{200, "", "ok"}, {404, "", "http_4xx"}, {503, "", "http_5xx"}, {0, "timeout", "timeout"}, {200, "credential_leak", "credential_leak"}} {
		if got := Outcome(c.status, c.kind); got != c.want {
			t.Errorf("Outcome(%d, %q) = %q, want %q", c.status, c.kind, got, c.want)
		}
	}
}

func scrapeText(t *testing.T, h *Host) string {
	t.Helper()
	w := httptest.NewRecorder()
	h.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != 200 {
		t.Fatalf("scrape: %d", w.Code)
	}
	return w.Body.String()
}
