package canary

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
)

// MetricsPath serves the per-version counters. It is not in the route table
// and answers loopback clients only; everyone else gets the host's 404, as
// for any unknown path. A reverse proxy on the same machine makes every
// client look local, so such a deployment must not forward this path.
const MetricsPath = "/_gateway/metrics"

type servedKey struct{}

// servedFrom returns the slot where a Release notes the version serving the
// request, or nil outside Table.Wrap.
func servedFrom(ctx context.Context) *atomic.Pointer[string] {
	s, _ := ctx.Value(servedKey{}).(*atomic.Pointer[string])
	return s
}

// Wrap puts the release machinery around the host's HTTP handler: it serves
// the metrics endpoint, and it adds X-Function-Version to every response a
// release served, including the platform errors the server writes for a
// trap or a timeout, which never pass back through a Release.
func (t *Table) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == MetricsPath && (r.Method == http.MethodGet || r.Method == http.MethodHead) && t.local(r) {
			t.serveMetrics(w, r)
			return
		}
		slot := new(atomic.Pointer[string])
		r = r.WithContext(context.WithValue(r.Context(), servedKey{}, slot))
		next.ServeHTTP(&versionWriter{ResponseWriter: w, slot: slot}, r)
	})
}

// versionWriter sets the version header just before the status line goes
// out, when the Release has noted which version served.
type versionWriter struct {
	http.ResponseWriter
	slot  *atomic.Pointer[string]
	wrote bool
}

func (w *versionWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		if label := w.slot.Load(); label != nil {
			w.Header().Set("X-Function-Version", *label)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *versionWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *versionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// local reports whether r comes from this machine: its connection, and the
// client behind any trusted proxy.
func (t *Table) local(r *http.Request) bool {
	if !loopback(r.RemoteAddr) {
		return false
	}
	return t.opts.ClientAddr == nil || loopback(t.opts.ClientAddr(r))
}

func loopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// FunctionMetrics is the JSON form of one function's release and counters.
type FunctionMetrics struct {
	Function string           `json:"function"`
	Stable   string           `json:"stable"`
	Canary   string           `json:"canary,omitempty"`
	Share    float64          `json:"canaryPercent"`
	Versions []VersionMetrics `json:"versions"`
}

// VersionMetrics is one version's counters and its role now: stable,
// canary, or retired (rolled back or replaced).
type VersionMetrics struct {
	Version string `json:"version"`
	Role    string `json:"role"`
	StatsSnapshot
}

// Metrics returns every function's release and per-version counters.
func (t *Table) Metrics() []FunctionMetrics {
	var out []FunctionMetrics
	for _, r := range t.functions() {
		stable, canary, share := r.Current()
		fm := FunctionMetrics{Function: r.function, Stable: stable.Label(), Share: float64(share) / 100}
		if canary != nil {
			fm.Canary = canary.Label()
		}
		for _, v := range t.stats.of(r.function) {
			role := "retired"
			switch {
			case v == stable:
				role = "stable"
			case canary != nil && v == *canary:
				role = "canary"
			}
			fm.Versions = append(fm.Versions, VersionMetrics{Version: v.Label(), Role: role, StatsSnapshot: t.stats.stats(v).Snapshot()})
		}
		out = append(out, fm)
	}
	return out
}

// serveMetrics answers in the Prometheus text format, which scrapers read
// as it is, or as JSON with ?format=json, which `gateway release status`
// and people read.
func (t *Table) serveMetrics(w http.ResponseWriter, r *http.Request) {
	m := t.Metrics()
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Query().Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if m == nil {
			m = []FunctionMetrics{}
		}
		json.NewEncoder(w).Encode(map[string]any{"functions": m})
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	writePrometheus(w, m)
}

func writePrometheus(w io.Writer, m []FunctionMetrics) {
	family := func(name, typ, help string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	each := func(f func(fm FunctionMetrics, v VersionMetrics, labels string)) {
		for _, fm := range m {
			for _, v := range fm.Versions {
				f(fm, v, fmt.Sprintf(`function=%q,version=%q`, fm.Function, v.Version))
			}
		}
	}
	family("gateway_function_requests_total", "counter", "Requests served, by function and module version.")
	each(func(_ FunctionMetrics, v VersionMetrics, l string) {
		fmt.Fprintf(w, "gateway_function_requests_total{%s} %d\n", l, v.Requests)
	})
	family("gateway_function_errors_total", "counter", "Requests that failed: 5xx answers, traps, timeouts (upstream 5xx excluded).")
	each(func(_ FunctionMetrics, v VersionMetrics, l string) {
		fmt.Fprintf(w, "gateway_function_errors_total{%s} %d\n", l, v.Errors)
	})
	family("gateway_function_upstream_errors_total", "counter", "5xx answers the function blamed on its upstream.")
	each(func(_ FunctionMetrics, v VersionMetrics, l string) {
		fmt.Fprintf(w, "gateway_function_upstream_errors_total{%s} %d\n", l, v.UpstreamErrors)
	})
	family("gateway_function_client_errors_total", "counter", "4xx answers, by function and module version.")
	each(func(_ FunctionMetrics, v VersionMetrics, l string) {
		fmt.Fprintf(w, "gateway_function_client_errors_total{%s} %d\n", l, v.ClientErrors)
	})
	histogram := func(name, help string, sum func(VersionMetrics) (float64, []BucketCount)) {
		family(name, "histogram", help)
		each(func(_ FunctionMetrics, v VersionMetrics, l string) {
			total, buckets := sum(v)
			for _, b := range buckets {
				le := "+Inf"
				if b.LE != 0 {
					le = strconv.FormatFloat(b.LE, 'g', -1, 64)
				}
				fmt.Fprintf(w, "%s_bucket{%s,le=%q} %d\n", name, l, le, b.Count)
			}
			fmt.Fprintf(w, "%s_sum{%s} %g\n", name, l, total)
			fmt.Fprintf(w, "%s_count{%s} %d\n", name, l, v.Requests)
		})
	}
	histogram("gateway_function_duration_seconds", "Time in the function module, without the wait for a free instance, by function and module version.",
		func(v VersionMetrics) (float64, []BucketCount) { return v.LatencySum, v.Buckets })
	histogram("gateway_function_queue_seconds", "Wait for a free instance of the version's pool before the function ran.",
		func(v VersionMetrics) (float64, []BucketCount) { return v.QueueSum, v.QueueBuckets })
	family("gateway_release_version_info", "gauge", "1 for each version a host has run; role is stable, canary or retired.")
	each(func(_ FunctionMetrics, v VersionMetrics, l string) {
		fmt.Fprintf(w, "gateway_release_version_info{%s,role=%q} 1\n", l, v.Role)
	})
	family("gateway_release_canary_share_ratio", "gauge", "Share of callers assigned to the canary (0 without one).")
	for _, fm := range m {
		fmt.Fprintf(w, "gateway_release_canary_share_ratio{function=%q} %g\n", fm.Function, fm.Share/100)
	}
}
