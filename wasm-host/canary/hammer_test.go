package canary_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"decisiongateway/shared/keys"
	"decisiongateway/wasm-host/canary"
)

// TestConcurrentFailuresRollTheCanaryBackOnce sends failing requests from 16
// goroutines at once to a canary holding half the accounts, with the host
// ticking on its own as it would in production (Start: a tick at once after
// a failed canary request). However the requests and ticks interleave, the
// canary serves at most its 30-request sample, every request it served is
// counted as an error, and the ledger records one automatic rollback.
func TestConcurrentFailuresRollTheCanaryBackOnce(t *testing.T) {
	h := startHost(t)
	v2 := h.canary(t, 5000, canary.Policy{MaxErrorRate: 0.5, MinSamples: 30, MaxLatencyRatio: 1.5})
	h.table.Start(time.Hour) // only the failures' kicks tick
	const workers, each = 16, 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	canaryAnswers := 0
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				req, _ := http.NewRequest("GET", h.url+"/trap", nil)
				req.Header.Set("Authorization", "Bearer "+keys.New(keys.APIKey, account(w*each+i)))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.Header.Get("X-Function-Version") == v2.Label() {
					mu.Lock()
					canaryAnswers++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()

	m := h.metrics(t)
	s2 := versionMetrics(t, m, v2.Label())
	if s2.Errors != s2.Requests || s2.Requests != int64(canaryAnswers) {
		t.Errorf("canary counted %d requests and %d errors; %d answers came from it", s2.Requests, s2.Errors, canaryAnswers)
	}
	if s2.Requests < 1 || s2.Requests > 30 {
		t.Errorf("canary served %d requests, want 1 to 30 (its sample)", s2.Requests)
	}
	t.Logf("canary served %d of %d requests before it was rolled back", s2.Requests, workers*each)

	ctx := context.Background()
	// Ticks run on the host's own goroutine; the test waits for the one
	// that decides (no timing is asserted, only the outcome).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the automatic rollback never reached the ledger")
		}
		events, err := h.store.Events(ctx, function, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) > 0 && events[0].Action == "auto-rollback" {
			if len(events) != 2 {
				t.Errorf("release events %+v, want the canary and one auto-rollback", events)
			}
			break
		}
	}
}

// TestMetricsAreForLoopbackOnly checks the metrics endpoint: Prometheus
// text for a local scraper, per function and version, and the host's
// ordinary 404 for anyone else, as for any path off the route table.
func TestMetricsAreForLoopbackOnly(t *testing.T) {
	h := startHost(t)
	v1 := canary.VersionOf(function, h.v1)
	h.get(t, "/x")
	resp, err := http.Get(h.url + canary.MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	labels := `function="` + function + `",version="` + v1.Label() + `"`
	for _, want := range []string{
		"# TYPE gateway_function_requests_total counter",
		"gateway_function_requests_total{" + labels + "} 1\n",
		"gateway_function_errors_total{" + labels + "} 0\n",
		"gateway_function_duration_seconds_bucket{" + labels + `,le="+Inf"} 1` + "\n",
		"gateway_function_duration_seconds_count{" + labels + "} 1\n",
		"gateway_release_version_info{" + labels + `,role="stable"} 1` + "\n",
		`gateway_release_canary_share_ratio{function="` + function + `"} 0` + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q:\n%s", want, text)
		}
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}

	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", canary.MetricsPath, nil)
	req.RemoteAddr = "192.0.2.9:4444"
	h.handler.ServeHTTP(rec, req)
	if rec.Code != 404 || strings.Contains(rec.Body.String(), "gateway_function") || rec.Header().Get("X-Service-Error-Code") != "not_found" {
		t.Errorf("a remote client got %d %s", rec.Code, rec.Body)
	}
}
