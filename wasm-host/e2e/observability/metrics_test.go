package observability_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"decisiongateway/testkit/hosttest"
	"decisiongateway/testkit/sqldtest"
	"decisiongateway/wasm-host/app"
)

const decideRoute = `route="POST /v1/service"`

// The metrics move as requests are served, each by what was observed on
// the wire: answers by route, status and code; credits charged (the sum of
// X-Service-Credits) and moved by the ledger (reserve, refund, grant);
// rate-limit refusals; upstream calls by outcome as the fake vendor saw
// them; ledger batches; the pools; and the release table's per-version
// families, all in one scrape.
func TestMetricsMoveAsRequestsAreServed(t *testing.T) {
	for _, b := range sqldtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			var fail atomic.Bool
			vendor := hosttest.NewRecorder(t, func(w http.ResponseWriter, _ *http.Request, body []byte) {
				if fail.Load() {
					w.WriteHeader(500)
					w.Write([]byte(`{"error":"internal"}`))
					return
				}
				answerValid(w, body)
			})
			h := start(t, b.URL, vendor, "SERVICE_RATE_LIMIT", "2")
			_, key := h.NewAccount("limited@example.com", 1000)
			_, other := h.NewAccount("refunded@example.com", 1000)
			before := read(t, h)

			// Decisions of one account until its limit refuses one: a
			// minute may turn between them, so count what was answered.
			statuses := map[int]int{}
			var charged int64
			var limitCode string
			for i := 0; i < 8 && statuses[429] == 0; i++ {
				r := send(t, h, "POST", "/v1/service", key, decision)
				statuses[r.status]++
				if r.status == 429 {
					limitCode = r.header.Get("X-Service-Error-Code")
				}
				n, _ := strconv.ParseInt(r.header.Get("X-Service-Credits"), 10, 64)
				charged += n
			}
			if statuses[429] != 1 || statuses[200] < 2 || len(statuses) != 2 {
				t.Fatalf("answers by status: %v", statuses)
			}
			cost := charged / int64(statuses[200])
			// One decision the vendor fails: answered 5xx and refunded.
			fail.Store(true)
			failed := send(t, h, "POST", "/v1/service", other, decision)
			fail.Store(false)
			if failed.status < 500 || failed.header.Get("X-Service-Credits") != "0" {
				t.Fatalf("failed decision: %d, credits %q", failed.status, failed.header.Get("X-Service-Credits"))
			}
			unrouted := send(t, h, "POST", "/nowhere", "", "")
			after := read(t, h)

			series := func(status int, code string) string {
				return `gateway_http_requests_total{code="` + code + `",` + decideRoute + `,status="` + strconv.Itoa(status) + `"}`
			}
			for _, c := range []struct {
				series string
				want   float64
			}{
				{series(200, ""), float64(statuses[200])},
				{series(429, limitCode), 1},
				{series(failed.status, failed.header.Get("X-Service-Error-Code")), 1},
				{`gateway_http_requests_total{code="not_found",route="unrouted",status="` + strconv.Itoa(unrouted.status) + `"}`, 1},
				{`gateway_http_request_duration_seconds_count{` + decideRoute + `}`, float64(statuses[200] + 2)},
				{`gateway_rate_limited_total{code="` + limitCode + `",` + decideRoute + `}`, 1},
				{`gateway_credits_charged_total{}`, float64(charged)},
				{`gateway_ledger_credits_total{kind="reserve"}`, float64(cost * int64(statuses[200]+1))},
				{`gateway_ledger_credits_total{kind="refund"}`, float64(cost)},
				{`gateway_ledger_credits_total{kind="welcome"}`, 0},
				{`gateway_upstream_requests_total{outcome="ok",target="upstream"}`, float64(statuses[200])},
				{`gateway_upstream_requests_total{outcome="http_5xx",target="upstream"}`, 1},
				{`gateway_upstream_duration_seconds_count{target="upstream"}`, float64(len(vendor.Seen()))},
				{`gateway_ledger_batch_failures_total{}`, 0},
			} {
				if got := moved(before, after, c.series); got != c.want {
					t.Errorf("%s moved by %v, want %v", c.series, got, c.want)
				}
			}
			if limitCode != "rate_limit_exceeded" || unrouted.status != 404 || cost < 1 || len(vendor.Seen()) != statuses[200]+1 {
				t.Errorf("429 code %q, unrouted %d, cost %d, vendor saw %d requests", limitCode, unrouted.status, cost, len(vendor.Seen()))
			}
			// The grants of the two accounts were made before the first
			// scrape: the ledger totals count every entry since the ledger
			// began, on every host alike.
			if after[`gateway_ledger_credits_total{kind="grant"}`] != 2000 {
				t.Errorf("grant total %v, want 2000", after[`gateway_ledger_credits_total{kind="grant"}`])
			}
			// A decision runs at least two batches (reserve, settle); a
			// refusal at least one.
			if moved(before, after, `gateway_ledger_batch_duration_seconds_count{}`) < float64(2*(statuses[200]+1)+1) {
				t.Errorf("ledger batches moved by %v for %v decisions", moved(before, after, `gateway_ledger_batch_duration_seconds_count{}`), statuses)
			}
			// The writer's own counts: every batch committed in some
			// transaction, none in more than one; requests only to a server.
			batches, txs := moved(before, after, `gateway_ledger_batches_total{}`), moved(before, after, `gateway_ledger_transactions_total{}`)
			requests := moved(before, after, `gateway_ledger_requests_total{}`)
			if batches < float64(2*(statuses[200]+1)+1) || txs < 1 || txs > batches || (b.Server == nil) != (requests == 0) {
				t.Errorf("ledger writer moved by %v batches, %v transactions, %v requests for %v decisions", batches, txs, requests, statuses)
			}
			decidePool := `{function="decide",version="decide@`
			if after.sum(`gateway_pool_size`+decidePool) != 8 || after.sum(`gateway_pool_instances_created_total`+decidePool) < 1 {
				t.Errorf("decide pool: size %v, created %v", after.sum(`gateway_pool_size`+decidePool), after.sum(`gateway_pool_instances_created_total`+decidePool))
			}
			if versioned := int(after.sum(`gateway_function_requests_total{function="decide",`)); versioned != statuses[200]+2 {
				t.Errorf("release table counted %d decide requests, want %d", versioned, statuses[200]+2)
			}
			// The ledger's distance: none for a file; sqld answered a ping
			// on the connection its batches went over.
			rtt, ok := after[`gateway_ledger_round_trip_seconds{}`]
			if _, counted := after[`gateway_ledger_pipelined_total{}`]; !ok || !counted || (b.Server == nil) != (rtt == 0) {
				t.Errorf("ledger round trip %v (served %v), pipelined served %v; want 0 for a file, more for sqld", rtt, ok, counted)
			}
		})
	}
}

// A decision waiting on its upstream holds no instance: the pool shows it
// awaiting, with no instance in use, until the upstream answers.
func TestMetricsShowADecisionAwaitingItsUpstream(t *testing.T) {
	gate, arrived := make(chan struct{}), make(chan struct{}, 1)
	vendor := hosttest.NewRecorder(t, func(w http.ResponseWriter, _ *http.Request, body []byte) {
		arrived <- struct{}{}
		<-gate
		answerValid(w, body)
	})
	h := start(t, "file:"+t.TempDir()+"/ledger.db", vendor)
	_, key := h.NewAccount("waiting@example.com", 100)
	done := make(chan reply, 1)
	go func() { done <- send(t, h, "POST", "/v1/service", key, decision) }()
	<-arrived
	during := read(t, h)
	close(gate)
	if r := <-done; r.status != 200 {
		t.Fatalf("decision: %d", r.status)
	}
	after := read(t, h)
	for _, c := range []struct {
		s         scrape
		series    string
		want      float64
		whenLabel string
	}{
		{during, `gateway_pool_requests_awaiting{function="decide",`, 1, "while the upstream answers"},
		{during, `gateway_pool_instances_in_use{function="decide",`, 0, "while the upstream answers"},
		{during, `gateway_pool_size{function="decide",`, 8, "while the upstream answers"},
		{after, `gateway_pool_requests_awaiting{function="decide",`, 0, "after"},
	} {
		if got := c.s.sum(c.series); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.series, c.whenLabel, got, c.want)
		}
	}
}

// The endpoint on the main listener answers loopback clients only; the
// handler for GATEWAY_METRICS_ADDR answers anyone who reaches it.
func TestMetricsEndpointIsLoopbackOnly(t *testing.T) {
	vendor := hosttest.NewRecorder(t, func(w http.ResponseWriter, _ *http.Request, body []byte) { answerValid(w, body) })
	h := start(t, "file:"+t.TempDir()+"/ledger.db", vendor)
	for _, c := range []struct {
		handler http.Handler
		want    bool
	}{{h.App.Handler(), false}, {h.App.MetricsHandler(), true}} {
		req := httptest.NewRequest("GET", app.MetricsPath, nil)
		req.RemoteAddr = "192.0.2.10:5555"
		w := httptest.NewRecorder()
		c.handler.ServeHTTP(w, req)
		if got := strings.Contains(w.Body.String(), "gateway_build_info"); got != c.want {
			t.Errorf("a remote client got the metrics: %v, want %v (status %d)", got, c.want, w.Code)
		}
	}
}
