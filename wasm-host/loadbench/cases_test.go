package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"decisiongateway/wasm-host/canary"
)

// TestCaseLineReportsCPUPerAnswer: the line gives the medians of each
// side's CPU per 2xx answer and of their per-round ratio, sqld's share
// counted on the gateway's side.
func TestCaseLineReportsCPUPerAnswer(t *testing.T) {
	rounds := []roundResult{
		{proxyCPU: 40, gatewayCPU: 200, sqldCPU: 100},
		{proxyCPU: 50, gatewayCPU: 150, sqldCPU: 100},
		{proxyCPU: 60, gatewayCPU: 240, sqldCPU: 60},
	}
	for _, c := range []struct{ ledger, want string }{
		{"embedded", "CPU per 2xx proxy 50µs gateway 200µs (4.0×)"},
		{"sqld", "CPU per 2xx proxy 50µs gateway 200µs + sqld 100µs (5.0×)"},
	} {
		rs := rounds
		if c.ledger == "embedded" {
			rs = nil
			for _, r := range rounds {
				r.sqldCPU = 0
				rs = append(rs, r)
			}
		}
		line := caseLine(benchCase{name: "closed16/small/" + c.ledger, ledger: c.ledger}, rs, 0)
		if !strings.Contains(line, c.want) {
			t.Errorf("%s: %q lacks %q", c.ledger, line, c.want)
		}
	}
	if got := perAnswer(0.5, 2500); got != 200 {
		t.Errorf("perAnswer(0.5 s, 2500) = %v µs, want 200", got)
	}
	if got := perAnswer(0.5, 0); got != 0 {
		t.Errorf("perAnswer without answers = %v, want 0", got)
	}
}

// A ratio just short of its target is never printed as the target itself
// beside FAIL.
func TestRatioNearItsTargetShowsWhichSide(t *testing.T) {
	for _, c := range []struct {
		r, target float64
		decimals  int
		want      string
	}{
		{0.3996, 0.4, 2, "0.3996×"},
		{0.398, 0.4, 2, "0.398×"},
		{0.4, 0.4, 2, "0.40×"},
		{0.4049, 0.4, 2, "0.405×"},
		{0.37, 0.4, 2, "0.37×"},
		{0.93, 0.95, 2, "0.93×"},
		{3.04, 3, 1, "3.04×"},
		{2.96, 3, 1, "2.96×"},
		{3.3, 3, 1, "3.3×"},
		{0.33, 0, 2, "0.33×"},
	} {
		if got := fmtRatio(c.r, c.target, c.decimals); got != c.want {
			t.Errorf("fmtRatio(%v, %v, %d) = %q, want %q", c.r, c.target, c.decimals, got, c.want)
		}
	}
}

func TestStaggeredClientsStartSpread(t *testing.T) {
	var (
		mu    sync.Mutex
		first []time.Time
		seen  = map[string]bool{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if id := r.Header.Get("Authorization"); !seen[id] {
			seen[id] = true
			first = append(first, time.Now())
		}
		mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}))
	defer srv.Close()
	const conns = 4
	start := time.Now()
	l := load{url: srv.URL, keys: []string{"k0", "k1", "k2", "k3"}, body: []byte("{}"), dur: 600 * time.Millisecond, grace: time.Second, stagger: 400 * time.Millisecond}
	r := closedLoop(&l, conns)
	if len(r.samples) == 0 {
		t.Fatal("no requests")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(first) != conns {
		t.Fatalf("%d clients' first requests, want %d", len(first), conns)
	}
	slices.SortFunc(first, func(a, b time.Time) int { return a.Compare(b) })
	// Client i starts no sooner than i/conns of the stagger: the last of
	// four no sooner than 300 ms after the run began.
	if d := first[conns-1].Sub(start); d < 300*time.Millisecond {
		t.Fatalf("the last client started %v after the run, want at least 300ms", d)
	}
}

// The ledger's figures come from two scrapes of the gateway's metrics:
// batches per commit and commits per answer, medians over rounds; a round
// whose scrapes failed is left out rather than counted as zero.
func TestCaseLineReportsTheLedgersGroupCommit(t *testing.T) {
	metrics := "# HELP gateway_ledger_batches_total x\n# TYPE gateway_ledger_batches_total counter\ngateway_ledger_batches_total 1200\n" +
		"# TYPE gateway_ledger_transactions_total counter\ngateway_ledger_transactions_total 150\ngateway_ledger_requests_total 150\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != canary.MetricsPath {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, metrics)
	}))
	defer srv.Close()
	before, ok := scrapeLedger(strings.TrimPrefix(srv.URL, "http://"))
	if !ok || before != (ledgerCounts{batches: 1200, transactions: 150}) {
		t.Fatalf("scrape = %+v, %v", before, ok)
	}
	if _, ok := scrapeLedger("127.0.0.1:1"); ok {
		t.Error("a scrape of nothing succeeded")
	}
	after := ledgerCounts{batches: 1200 + 640, transactions: 150 + 100}
	rounds := []roundResult{
		{ledger: ledgerWork(after.since(before), 320)},                                                // 6.4 per commit, 100 commits for 320 answers
		{ledger: ledgerWork(ledgerCounts{batches: 1300, transactions: 250}.since(before), 0)},         // no answers: left out
		{ledger: ledgerWork(ledgerCounts{batches: 1200 + 400, transactions: 200}.since(before), 200)}, // 8 per commit, 0.25 per answer
	}
	line := caseLine(benchCase{name: "closed16/small/sqld", ledger: "sqld"}, rounds, 0)
	if want := "ledger 7.2 batches/commit, 0.28 commits/2xx"; !strings.Contains(line, want) {
		t.Errorf("%q lacks %q", line, want)
	}
}

// The 1 s upstream case's line also gives the added p50 of the requests
// started in the run's second half, once the start's herd has spread:
// beside the whole run's figure, which keeps the verdict.
func TestSecondHalfP50LeavesTheStartOut(t *testing.T) {
	side := func(startLat, lateLat time.Duration) summary {
		r := run{dur: 10 * time.Second, elapsed: 10 * time.Second}
		for i := 0; i < 100; i++ {
			at := time.Duration(i) * 100 * time.Millisecond // 0 … 9.9 s
			lat := startLat                                 // the herd takes the first 6 s to spread
			if at >= 6*time.Second {
				lat = lateLat
			}
			r.samples = append(r.samples, sample{at: at, lat: lat, status: 200})
		}
		return summarise(r)
	}
	proxy := side(1002*time.Millisecond, 1001*time.Millisecond)
	gateway := side(1060*time.Millisecond, 1004*time.Millisecond)
	if gateway.late50.d != 1004*time.Millisecond || proxy.late50.d != 1001*time.Millisecond {
		t.Fatalf("second half p50: gateway %v proxy %v, want 1.004 s and 1.001 s", gateway.late50.d, proxy.late50.d)
	}
	rounds := []roundResult{{proxy: proxy, gateway: gateway}}
	slow := benchCase{name: "closed500-1s/small/embedded", latency: time.Second, conns: 500,
		targets: targets{maxAddedP50: 5 * time.Millisecond}}
	line := caseLine(slow, rounds, 0)
	// 60 of the 100 requests are the herd's: the whole run's p50 is theirs.
	if want := "added p50 +58.00ms [≤5.00ms FAIL] (second half +3.00ms)"; !strings.Contains(line, want) {
		t.Errorf("%q lacks %q", line, want)
	}
	instant := benchCase{name: "closed16/small/embedded", conns: 16}
	if line := caseLine(instant, rounds, 0); strings.Contains(line, "second half") {
		t.Errorf("an instant upstream's line has the second half: %q", line)
	}
}

// The cold start runs at least minColdStarts rounds, more when asked.
func TestColdStartRunsEnoughRounds(t *testing.T) {
	for _, c := range []struct{ asked, want int }{{1, minColdStarts}, {3, minColdStarts}, {minColdStarts + 4, minColdStarts + 4}} {
		if got := coldStartRounds(c.asked); got != c.want {
			t.Errorf("coldStartRounds(%d) = %d, want %d", c.asked, got, c.want)
		}
	}
}

// With -v, the 1 s upstream case prints each side's p50 by the second of
// the run its requests started in, the 2xx answers only: how a herd that
// started together spreads, or stays in step.
func TestBySecondIsTheP50OfEachSecondsStarts(t *testing.T) {
	r := run{samples: []sample{
		{at: 0, lat: 1200 * time.Millisecond, status: 200},
		{at: 10 * time.Millisecond, lat: 1100 * time.Millisecond, status: 200},
		{at: 20 * time.Millisecond, lat: 1300 * time.Millisecond, status: 200},
		{at: 30 * time.Millisecond, lat: 5 * time.Millisecond, status: 503},
		{at: 2100 * time.Millisecond, lat: 1004 * time.Millisecond, status: 200},
		{at: 2200 * time.Millisecond, lat: 900 * time.Millisecond, cut: true},
	}}
	if got, want := bySecond(r), "1200ms×3 - 1004ms×1"; got != want {
		t.Fatalf("bySecond = %q, want %q", got, want)
	}
}
