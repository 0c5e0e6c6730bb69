package decide_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"decisiongateway/testkit/sqldtest"
)

// BenchmarkDecisionPath measures what the gateway adds to a decision: each
// iteration sends the same request once through a plain
// httputil.ReverseProxy and once through the gateway (validation, two
// ledger batches, the upstream call, settlement), to the same fake upstream,
// and times both. Reported: p50/p99 of each, the added latency, and
// requests/s of an 8-way burst through each, so every figure and ratio comes
// from one run under the same load; and the ledger's statements, sqld
// requests and transactions per decision of the burst.
func BenchmarkDecisionPath(b *testing.B) {
	for _, be := range sqldtest.Backends(b) {
		b.Run(be.Name, func(b *testing.B) { benchmarkDecisionPath(b, be.URL) })
	}
}

func benchmarkDecisionPath(b *testing.B, ledger string) {
	g := startGateway(b, ledger, map[string]string{"SERVICE_RATE_LIMIT": "100000000", "SERVICE_AUTH_RATE_LIMIT": "100000000"})
	_, key := g.NewAccount(randomEmail(), 1_000_000_000)
	// The upstream answers a precomputed valid decision at once.
	var canned bytes.Buffer
	answerValid(headerSink{&canned}, []byte(simpleRequest))
	answer := canned.Bytes()
	g.vendor.Handle(func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})
	target, _ := url.Parse(g.vendor.URL)
	proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
	defer proxy.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	send := func(u string) time.Duration { return timedDecision(b, client, u, key) }
	var viaProxy, viaGateway []time.Duration
	for b.Loop() {
		viaProxy = append(viaProxy, send(proxy.URL+"/v1/service"))
		viaGateway = append(viaGateway, send(g.URL+"/v1/service"))
	}
	pp, gp := percentiles(viaProxy), percentiles(viaGateway)
	b.ReportMetric(float64(pp[0].Microseconds()), "proxy-p50-µs")
	b.ReportMetric(float64(gp[0].Microseconds()), "gateway-p50-µs")
	b.ReportMetric(float64(gp[1].Microseconds()), "gateway-p99-µs")
	b.ReportMetric(float64((gp[0] - pp[0]).Microseconds()), "added-p50-µs")
	b.ReportMetric(float64((gp[1] - pp[1]).Microseconds()), "added-p99-µs")

	burst := func(u string) float64 {
		const n, workers = burstRequests, 8
		var wg sync.WaitGroup
		next := make(chan struct{}, n)
		for i := 0; i < n; i++ {
			next <- struct{}{}
		}
		close(next)
		start := time.Now()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range next {
					send(u)
				}
			}()
		}
		wg.Wait()
		return n / time.Since(start).Seconds()
	}
	pr := burst(proxy.URL + "/v1/service")
	before := g.App.Ledger.Stats()
	gr := burst(g.URL + "/v1/service")
	led := g.App.Ledger.Stats().Sub(before)
	b.ReportMetric(pr, "proxy-req/s")
	b.ReportMetric(gr, "gateway-req/s")
	b.ReportMetric(gr/pr, "gateway/proxy-throughput")
	// What the ledger did per decision of the burst: statements the
	// database ran, requests to sqld, and transactions (below 2 when group
	// commit shares them between decisions).
	per := func(v int64) float64 { return float64(v) / burstRequests }
	b.ReportMetric(per(led.Statements), "ledger-stmts/decision")
	b.ReportMetric(per(led.RoundTrips), "ledger-trips/decision")
	b.ReportMetric(per(led.Transactions), "ledger-tx/decision")
}

// burstRequests is how many requests the 8-way burst sends through each path.
const burstRequests = 400

func percentiles(d []time.Duration) [2]time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(p float64) time.Duration { return s[int(p*float64(len(s)-1))] }
	return [2]time.Duration{at(0.50), at(0.99)}
}

// headerSink is an http.ResponseWriter that keeps only the body.
type headerSink struct{ w io.Writer }

func (h headerSink) Header() http.Header         { return http.Header{} }
func (h headerSink) Write(p []byte) (int, error) { return h.w.Write(p) }
func (h headerSink) WriteHeader(int)             {}
