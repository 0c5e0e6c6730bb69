// Package metrics is the wazero host's metric registry: what an operator
// asks of a running host (which routes answer what, what credits moved,
// how often callers are refused, how the upstream and the ledger behave,
// how busy the instance pools are), in the Prometheus text format.
//
// It counts with VictoriaMetrics/metrics rather than prometheus/client_golang,
// whose package initialisation (a default registry with Go runtime and
// process collectors) runs at every process start; the gateway's cold start
// is measured against a bare reverse proxy's. The library writes no help
// text and its type lines are a process-wide switch, so each family keeps
// its series in a set of its own and the host writes the family's HELP and
// TYPE lines (family.write).
//
// The request path stays cheap: every label value a request can carry is
// either fixed in advance (routes) or comes from a small, closed set
// (statuses, error codes, fetch outcomes), and a seen combination is found
// in a lock-free map (vec), so observing a request allocates nothing
// (TestObservingAllocatesNothing).
//
// Other parts of the host add their own families to the same endpoint:
// AddText takes a writer of ready text families (the release table's
// per-version counters in wasm-host/canary). Family names must not repeat
// across them.
package metrics

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	vm "github.com/VictoriaMetrics/metrics"

	"decisiongateway/shared/abi"
	"decisiongateway/wasm-host/routes"
)

// Unrouted is the route label of requests no route took (404, 405).
const Unrouted = "unrouted"

// latencyBuckets span a warm config read (well under a millisecond) to a
// decision waiting on a slow upstream (the default deadline is 60 s).
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// ledgerBuckets are finer: a batch on an embedded ledger takes tens of
// microseconds, one on sqld a millisecond or more.
var ledgerBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5}

// Host holds the host-wide families. The zero value is not usable; use New.
// A nil *Host ignores every observation, so parts built without one (tests,
// operator commands) need no checks.
type Host struct {
	families []*family // in the order served

	requests    vec[requestKey, *vm.Counter]
	charged     *vm.Counter
	refused     vec[[2]string, *vm.Counter] // route, code
	upstream    vec[[2]string, *vm.Counter] // target, outcome
	upstreamDur vec[string, *vm.PrometheusHistogram]
	ledgerDur   *vm.PrometheusHistogram
	ledgerFail  *vm.Counter

	// routes maps each route of the table to its label and its duration
	// series, resolved once.
	routes map[*routes.Route]routeSeries

	pools   pools
	credits *credits
	info    string // gateway_build_info's sample line

	mu    sync.Mutex
	texts []func(io.Writer)
}

type requestKey struct {
	route  string
	status int
	code   string
}

type routeSeries struct {
	label    string
	duration *vm.PrometheusHistogram
}

// New returns a registry with the host families, Go runtime and process
// metrics, and build_info labelled with version.
func New(table []routes.Route, version string) *Host {
	h := &Host{routes: map[*routes.Route]routeSeries{}}
	requests := h.family("gateway_http_requests_total", "counter",
		"Requests answered, by route (METHOD pattern, or unrouted), status and error code (X-Service-Error-Code; empty on success).")
	duration := h.family("gateway_http_request_duration_seconds", "histogram",
		"Time from the request's headers to its answer, by route.")
	charged := h.family("gateway_credits_charged_total", "counter",
		"Credits charged by the answers this host gave (sum of X-Service-Credits).")
	refused := h.family("gateway_rate_limited_total", "counter",
		"Requests refused with 429 by the platform's own limits, by route and error code.")
	upstream := h.family("gateway_upstream_requests_total", "counter",
		"Outbound calls made for functions, by target (upstream, mail, other) and outcome (ok, http_4xx, http_5xx, or the fetch error kind).")
	upstreamDur := h.family("gateway_upstream_duration_seconds", "histogram",
		"Time of outbound calls made for functions, by target, failures included.")
	ledgerDur := h.family("gateway_ledger_batch_duration_seconds", "histogram",
		"Time of the ledger batches functions ran, failures included.")
	ledgerFail := h.family("gateway_ledger_batch_failures_total", "counter",
		"Ledger batches of functions that failed (nothing committed, or the ledger could not say).")

	h.requests.create = func(k requestKey) *vm.Counter {
		return requests.set.NewCounter(series(requests.name, "code", k.code, "route", k.route, "status", strconv.Itoa(k.status)))
	}
	h.charged = charged.set.NewCounter(charged.name)
	h.refused.create = func(k [2]string) *vm.Counter {
		return refused.set.NewCounter(series(refused.name, "code", k[1], "route", k[0]))
	}
	h.upstream.create = func(k [2]string) *vm.Counter {
		return upstream.set.NewCounter(series(upstream.name, "outcome", k[1], "target", k[0]))
	}
	h.upstreamDur.create = func(target string) *vm.PrometheusHistogram {
		return upstreamDur.set.NewPrometheusHistogramExt(series(upstreamDur.name, "target", target), latencyBuckets)
	}
	h.ledgerDur = ledgerDur.set.NewPrometheusHistogramExt(ledgerDur.name, ledgerBuckets)
	h.ledgerFail = ledgerFail.set.NewCounter(ledgerFail.name)
	h.info = "# HELP gateway_build_info 1, labelled with the gateway's version.\n# TYPE gateway_build_info gauge\n" +
		series("gateway_build_info", "version", version) + " 1\n"

	routeSeriesOf := func(label string) routeSeries {
		return routeSeries{label, duration.set.NewPrometheusHistogramExt(series(duration.name, "route", label), latencyBuckets)}
	}
	for i := range table {
		r := &table[i]
		h.routes[r] = routeSeriesOf(r.Method + " " + r.Pattern)
	}
	h.routes[nil] = routeSeriesOf(Unrouted)
	return h
}

// AddText adds a writer of ready Prometheus text families, written after
// the registry's own on every scrape.
func (h *Host) AddText(write func(io.Writer)) {
	h.mu.Lock()
	h.texts = append(h.texts, write)
	h.mu.Unlock()
}

// Served counts one answered request. route is the table's entry, or nil
// when no route took the request. It is the server's hot path: it finds
// existing series and allocates nothing once a route, status and code have
// been seen.
func (h *Host) Served(route *routes.Route, resp *abi.Response, elapsed time.Duration) {
	if h == nil {
		return
	}
	rs, ok := h.routes[route]
	if !ok {
		// A route outside the table this registry was built for (a test's
		// own table): count it unrouted rather than mint a label.
		rs = h.routes[nil]
	}
	status := resp.Status
	if status < 100 || status > 999 {
		status = 0
	}
	var code, credits string
	for _, f := range resp.Headers {
		switch f.Name {
		case "x-service-error-code":
			code = f.Value
		case "x-service-credits":
			credits = f.Value
		}
	}
	h.requests.get(requestKey{rs.label, status, code}).Inc()
	rs.duration.Update(elapsed.Seconds())
	if credits != "" && credits != "0" {
		if n, err := strconv.ParseInt(credits, 10, 64); err == nil && n > 0 {
			h.charged.AddInt64(n)
		}
	}
	if status == http.StatusTooManyRequests && resp.Headers.Get("x-service-error-source") == "platform" {
		h.refused.get([2]string{rs.label, code}).Inc()
	}
}

// Outbound counts one call a function made through the host: target says
// to whom (upstream, mail, other), outcome how it ended (Outcome).
func (h *Host) Outbound(target, outcome string, elapsed time.Duration) {
	if h == nil {
		return
	}
	h.upstream.get([2]string{target, outcome}).Inc()
	h.upstreamDur.get(target).Update(elapsed.Seconds())
}

// Outcome names how a fetch ended: its error kind when it failed, else its
// status class.
func Outcome(status int, errKind string) string {
	switch {
	case errKind != "":
		return errKind
	case status >= 500:
		return "http_5xx"
	case status >= 400:
		return "http_4xx"
	}
	return "ok"
}

// Batch counts one ledger batch of a function.
func (h *Host) Batch(elapsed time.Duration, failed bool) {
	if h == nil {
		return
	}
	h.ledgerDur.Update(elapsed.Seconds())
	if failed {
		h.ledgerFail.Inc()
	}
}

// Handler serves the host's families, then the added text families, in
// the Prometheus text format (version 0.0.4), which every scraper reads.
func (h *Host) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if r.Method == http.MethodHead {
			return
		}
		var b bytes.Buffer
		for _, f := range h.families {
			f.write(&b)
		}
		b.WriteString(h.info)
		h.pools.write(&b)
		h.credits.write(&b)
		vm.WriteGoMetrics(&b)
		vm.WriteProcMetrics(&b)
		vm.WriteFDMetrics(&b)
		w.Write(b.Bytes())
		h.mu.Lock()
		texts := h.texts[:len(h.texts):len(h.texts)]
		h.mu.Unlock()
		for _, write := range texts {
			write(w)
		}
	})
}
