package app

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/settings"
	"decisiongateway/wasm-host/canary"
	"decisiongateway/wasm-host/egress"
	"decisiongateway/wasm-host/metrics"
	"decisiongateway/wasm-host/routes"
	"decisiongateway/wasm-host/server"
)

// MetricsPath is where a host answers its metrics on its own listener, to
// loopback clients only (a reverse proxy on the same machine makes every
// client look local: do not forward this path). It is the path the release
// table's counters had, so scrapers keep it; `?format=json` still gives the
// release counters as JSON (`gateway release status`). GATEWAY_METRICS_ADDR
// serves the same families on a listener of their own, for a scraper on
// another machine.
const MetricsPath = canary.MetricsPath

// observe builds the host's metrics: the server counts answers, the
// services count ledger batches and outbound calls, and the pools and the
// ledger's credit entries are read at each scrape. The release table adds
// its per-version families (wasm-host/canary).
func (a *App) observe(version string) {
	m := metrics.New(routes.Table, version)
	a.Metrics = m
	m.WatchPools(a.pools)
	m.WatchLedger(func() metrics.Ledger {
		if a.Ledger == nil {
			return metrics.Ledger{}
		}
		s := a.Ledger.Stats()
		return metrics.Ledger{RoundTrip: a.Ledger.RoundTrip(), Pipelined: s.Pipelined, Batches: s.Batches,
			Transactions: s.Transactions, Requests: s.RoundTrips, Statements: s.Statements, Retries: s.Retries}
	})
	m.WatchConnections(a.conns.Load, a.Config.Connections())
	m.WatchCredits(a.creditSums, func(err error) {
		a.Log.Warn("metrics: the ledger's credit entries could not be read; the previous totals are served", "error", err.Error())
	})
}

// attachReleases adds the release table's families to the metrics.
func (a *App) attachReleases() { a.Metrics.AddText(a.Releases.WritePrometheus) }

// pools lists the built modules' pools that have loaded, labelled with
// their versions as the release families are.
func (a *App) pools() []metrics.Pool {
	var out []metrics.Pool
	for _, name := range routes.Functions(routes.Table) {
		f, ok := a.Functions[name]
		if !ok || !f.Loaded() {
			continue
		}
		fn, _ := f.Ready()
		out = append(out, metrics.Pool{Function: name, Version: f.version, Stats: fn.Stats()})
	}
	return out
}

// creditSums reads the credit entries after entry number after.
func (a *App) creditSums(ctx context.Context, after int64) (map[string]int64, int64, error) {
	res := a.Ledger.Exec(ctx, &abi.Batch{Steps: []abi.Statement{{
		SQL:  "SELECT kind, SUM(abs(delta)), MAX(id) FROM credit_entries WHERE id > ? GROUP BY kind",
		Args: []abi.Value{abi.Int64(after)},
	}}})
	if res.Err != "" {
		return nil, 0, errors.New(res.Err)
	}
	sums, last := map[string]int64{}, after
	for _, r := range res.Steps[0].Rows {
		sums[r[0].AsString()] = r[1].AsInt()
		last = max(last, r[2].AsInt())
	}
	return sums, last, nil
}

// MetricsHandler serves the host's metrics to anyone who reaches it: for
// GATEWAY_METRICS_ADDR, a listener the operator binds where only scrapers
// reach.
func (a *App) MetricsHandler() http.Handler { return a.Metrics.Handler() }

// serveMetrics answers MetricsPath on the main listener for loopback
// clients, and passes every other request on.
func (a *App) serveMetrics(next http.Handler) http.Handler {
	metricsHandler := a.Metrics.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == MetricsPath && r.URL.Query().Get("format") == "" &&
			(r.Method == http.MethodGet || r.Method == http.MethodHead) && a.local(r) {
			metricsHandler.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// local reports whether r comes from this machine: its connection, and the
// client behind any trusted proxy.
func (a *App) local(r *http.Request) bool {
	return loopback(r.RemoteAddr) && loopback(a.client().Of(r))
}

func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// fetch makes a function's outbound call, counting it and noting the
// cause of a failure for the request's log line.
func (a *App) fetch(ctx context.Context, f *abi.FetchRequest) abi.FetchResponse {
	start := time.Now()
	res := a.Egress.Fetch(ctx, f)
	a.outbound(ctx, a.target(f), func() string { return f.Method + " " + withoutQuery(f.URL) }, res.Status, res.ErrKind, res.ErrMsg, time.Since(start))
	return res
}

// runAI calls the model binding (UPSTREAM_KIND=edge), counted and noted
// like a fetch to the upstream.
func (a *App) runAI(ctx context.Context, r *abi.AIRequest) abi.AIResponse {
	if a.Config.UpstreamKind != "edge" {
		return abi.AIResponse{ErrKind: abi.FetchErrDenied, ErrMsg: "no model binding configured"}
	}
	// The call ends where a function's fetch to its upstream would
	// (settings.UpstreamTimeout), not at the request's deadline: the
	// decision still has its margin to settle, answering 504
	// upstream_timeout refunded instead of an attempt left to its lease.
	if dl, ok := ctx.Deadline(); ok {
		s := settings.Settings{RequestTimeout: a.Config.RequestTimeout}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-s.SettleMargin()))
		defer cancel()
	}
	start := time.Now()
	res := a.Egress.RunAI(ctx, a.Config.UpstreamURL, r)
	a.outbound(ctx, "upstream", func() string { return "model " + r.Model }, res.Status, res.ErrKind, res.ErrMsg, time.Since(start))
	return res
}

// outbound counts a call and, when it failed, notes why for the request's
// log line; describe names the call and is called only then.
func (a *App) outbound(ctx context.Context, target string, describe func() string, status int, errKind, errMsg string, elapsed time.Duration) {
	outcome := metrics.Outcome(status, errKind)
	a.Metrics.Outbound(target, outcome, elapsed)
	if outcome == "ok" {
		return
	}
	what := describe()
	took := " after " + elapsed.Round(time.Millisecond).String()
	if errKind != "" {
		server.NoteCause(ctx, target+" "+what+": "+errKind+": "+errMsg+took)
	} else {
		server.NoteCause(ctx, target+" "+what+": answered HTTP "+strconv.Itoa(status)+took)
	}
}

// target names whom a fetch is for: the upstream (it carries the upstream
// credential, or goes to the upstream's origin), the mail endpoint, or
// other.
func (a *App) target(f *abi.FetchRequest) string {
	if f.Credential == abi.CredentialUpstream {
		return "upstream"
	}
	origin := egress.Origin(f.URL)
	switch {
	case origin != "" && origin == egress.Origin(a.Config.UpstreamURL):
		return "upstream"
	case origin != "" && origin == egress.Origin(a.Config.MailURL):
		return "mail"
	}
	return "other"
}

// withoutQuery drops a URL's query and user info before it is logged.
func withoutQuery(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.RawQuery, u.User, u.Fragment = "", nil, ""
	return u.String()
}

// ledgerExec runs a function's ledger batch, counting its time and failure.
func (a *App) ledgerExec(ctx context.Context, b *abi.Batch) abi.BatchResult {
	start := time.Now()
	res := a.Ledger.Exec(ctx, b)
	a.Metrics.Batch(time.Since(start), res.Err != "")
	return res
}
