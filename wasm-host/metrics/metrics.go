// Package metrics is the wazero host's metric registry: what an operator
// asks of a running host (which routes answer what, what credits moved,
// how often callers are refused, how the upstream and the ledger behave,
// how busy the instance pools are), in the Prometheus text format.
//
// It is built on prometheus/client_golang for the counting and encoding,
// and keeps the request path cheap: every label value a request can carry
// is either fixed in advance (routes, statuses) or comes from a small,
// closed set (error codes, fetch outcomes), so observing a request finds an
// existing series and allocates nothing (TestObservingAllocatesNothing).
//
// Other parts of the host add their own families to the same endpoint:
// Register takes any prometheus.Collector, and AddText takes a writer of
// ready text families (the release table's per-version counters in
// wasm-host/canary). Family names must not repeat across them.
package metrics

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

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
	reg *prometheus.Registry

	requests    *prometheus.CounterVec   // route, status, code
	duration    *prometheus.HistogramVec // route
	charged     prometheus.Counter
	refused     *prometheus.CounterVec // route, code
	upstream    *prometheus.CounterVec // target, outcome
	upstreamDur *prometheus.HistogramVec
	ledgerDur   prometheus.Histogram
	ledgerFail  prometheus.Counter

	// routes maps each route of the table to its label and its duration
	// series, resolved once.
	routes map[*routes.Route]routeSeries

	pools *poolCollector

	mu    sync.Mutex
	texts []func(io.Writer)
}

type routeSeries struct {
	label    string
	duration prometheus.Observer
}

// statusText holds the decimal form of every status a response can carry,
// so labelling a request does not format a number.
var statusText = func() (s [1000]string) {
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return
}()

// New returns a registry with the host families, Go runtime and process
// collectors, and build_info labelled with version.
func New(table []routes.Route, version string) *Host {
	h := &Host{reg: prometheus.NewRegistry(), routes: map[*routes.Route]routeSeries{}, pools: &poolCollector{}}
	h.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_http_requests_total",
		Help: "Requests answered, by route (METHOD pattern, or unrouted), status and error code (X-Service-Error-Code; empty on success).",
	}, []string{"route", "status", "code"})
	h.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gateway_http_request_duration_seconds",
		Help:    "Time from the request's headers to its answer, by route.",
		Buckets: latencyBuckets,
	}, []string{"route"})
	h.charged = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gateway_credits_charged_total",
		Help: "Credits charged by the answers this host gave (sum of X-Service-Credits).",
	})
	h.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_rate_limited_total",
		Help: "Requests refused with 429 by the platform's own limits, by route and error code.",
	}, []string{"route", "code"})
	h.upstream = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_upstream_requests_total",
		Help: "Outbound calls made for functions, by target (upstream, mail, other) and outcome (ok, http_4xx, http_5xx, or the fetch error kind).",
	}, []string{"target", "outcome"})
	h.upstreamDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gateway_upstream_duration_seconds",
		Help:    "Time of outbound calls made for functions, by target, failures included.",
		Buckets: latencyBuckets,
	}, []string{"target"})
	h.ledgerDur = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "gateway_ledger_batch_duration_seconds",
		Help:    "Time of the ledger batches functions ran, failures included.",
		Buckets: ledgerBuckets,
	})
	h.ledgerFail = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gateway_ledger_batch_failures_total",
		Help: "Ledger batches of functions that failed (nothing committed, or the ledger could not say).",
	})
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "gateway_build_info",
		Help:        "1, labelled with the gateway's version.",
		ConstLabels: prometheus.Labels{"version": version},
	})
	info.Set(1)
	h.reg.MustRegister(h.pools, h.requests, h.duration, h.charged, h.refused, h.upstream, h.upstreamDur, h.ledgerDur, h.ledgerFail, info,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for i := range table {
		r := &table[i]
		label := r.Method + " " + r.Pattern
		h.routes[r] = routeSeries{label: label, duration: h.duration.WithLabelValues(label)}
	}
	h.routes[nil] = routeSeries{label: Unrouted, duration: h.duration.WithLabelValues(Unrouted)}
	return h
}

// Register adds a collector's families to the endpoint.
func (h *Host) Register(c prometheus.Collector) error { return h.reg.Register(c) }

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
	if status < 0 || status >= len(statusText) {
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
	h.requests.WithLabelValues(rs.label, statusText[status], code).Inc()
	rs.duration.Observe(elapsed.Seconds())
	if credits != "" && credits != "0" {
		if n, err := strconv.ParseInt(credits, 10, 64); err == nil && n > 0 {
			h.charged.Add(float64(n))
		}
	}
	if status == http.StatusTooManyRequests && resp.Headers.Get("x-service-error-source") == "platform" {
		h.refused.WithLabelValues(rs.label, code).Inc()
	}
}

// Outbound counts one call a function made through the host: target says
// to whom (upstream, mail, other), outcome how it ended (Outcome).
func (h *Host) Outbound(target, outcome string, elapsed time.Duration) {
	if h == nil {
		return
	}
	h.upstream.WithLabelValues(target, outcome).Inc()
	h.upstreamDur.WithLabelValues(target).Observe(elapsed.Seconds())
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
	h.ledgerDur.Observe(elapsed.Seconds())
	if failed {
		h.ledgerFail.Inc()
	}
}

// Handler serves the registry and the added text families in the
// Prometheus text format (version 0.0.4), which every scraper reads.
func (h *Host) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		families, err := h.reg.Gather()
		if err != nil && len(families) == 0 {
			http.Error(w, "metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		w.Header().Set("Cache-Control", "no-store")
		if r.Method == http.MethodHead {
			return
		}
		for _, mf := range families {
			expfmt.MetricFamilyToText(w, mf)
		}
		h.mu.Lock()
		texts := h.texts[:len(h.texts):len(h.texts)]
		h.mu.Unlock()
		for _, write := range texts {
			write(w)
		}
	})
}
