package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"decisiongateway/shared/abi"
	"decisiongateway/wasm-host/routes"
	"decisiongateway/wasm-host/runtime"
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

// A whole scrape, the families read at scrape time included, is the text
// format a Prometheus parser reads, and label values that need escaping
// come back as they went in.
func TestScrapeParses(t *testing.T) {
	h := New(routes.Table, `v1 "quoted"`)
	h.WatchPools(func() []Pool {
		return []Pool{{Function: "decide", Version: "decide@0123456789ab", Stats: runtime.Stats{Size: 4, Idle: 3, Created: 5}}}
	})
	h.WatchCredits(func(context.Context, int64) (map[string]int64, int64, error) {
		return map[string]int64{"grant": 40, "reserve": 7}, 2, nil
	}, nil)
	odd := "odd\"code\\with\nbreak"
	h.Served(nil, &abi.Response{Status: 404, Headers: abi.Headers{{Name: "x-service-error-code", Value: odd}}}, time.Millisecond)
	h.Batch(3*time.Millisecond, true)
	h.WatchLedger(func() Ledger {
		return Ledger{RoundTrip: 2500 * time.Microsecond, Pipelined: 7,
			Batches: 60, Transactions: 9, Requests: 11, Statements: 31, Retries: 2}
	})
	h.WatchConnections(func() int64 { return 12 }, 9872)

	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(scrapeText(t, h)))
	if err != nil {
		t.Fatalf("scrape is not the text format: %v", err)
	}
	value := func(name string, labels map[string]string) (float64, bool) {
		for _, m := range families[name].GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if fmt.Sprint(got) != fmt.Sprint(labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount()), true
			}
		}
		return 0, false
	}
	pool := map[string]string{"function": "decide", "version": "decide@0123456789ab"}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"gateway_http_requests_total", map[string]string{"route": Unrouted, "status": "404", "code": odd}, 1},
		{"gateway_http_request_duration_seconds", map[string]string{"route": Unrouted}, 1},
		{"gateway_ledger_batch_duration_seconds", map[string]string{}, 1},
		{"gateway_ledger_batch_failures_total", map[string]string{}, 1},
		{"gateway_pool_size", pool, 4},
		{"gateway_pool_instances_idle", pool, 3},
		{"gateway_pool_instances_created_total", pool, 5},
		{"gateway_ledger_credits_total", map[string]string{"kind": "grant"}, 40},
		{"gateway_ledger_credits_total", map[string]string{"kind": "refund"}, 0},
		{"gateway_build_info", map[string]string{"version": `v1 "quoted"`}, 1},
		{"gateway_ledger_round_trip_seconds", map[string]string{}, 0.0025},
		{"gateway_ledger_pipelined_total", map[string]string{}, 7},
		{"gateway_ledger_batches_total", map[string]string{}, 60},
		{"gateway_ledger_transactions_total", map[string]string{}, 9},
		{"gateway_ledger_requests_total", map[string]string{}, 11},
		{"gateway_ledger_statements_total", map[string]string{}, 31},
		{"gateway_ledger_retries_total", map[string]string{}, 2},
		{"gateway_connections_open", map[string]string{}, 12},
		{"gateway_connections_max", map[string]string{}, 9872},
	} {
		if got, ok := value(c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if families["process_resident_memory_bytes"] == nil || families["go_goroutines"] == nil {
		t.Error("process and Go runtime families missing")
	}
}
