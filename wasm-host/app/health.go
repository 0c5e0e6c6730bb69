package app

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"decisiongateway/schema"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/policy"
	"decisiongateway/wasm-host/ledger"
	"decisiongateway/wasm-host/routes"
	"decisiongateway/wasm-host/server"
)

// The probe paths. They are not in the route table: they answer for the
// host, not for a function, and run no module.
const (
	// HealthPath answers 200 while the process serves HTTP (liveness): a
	// failing ledger or upstream is no reason to restart the host.
	HealthPath = "/healthz"
	// ReadyPath answers 200 when the host can serve decisions and 503,
	// with what is not ready, when it cannot (readiness): a load balancer
	// sends it no traffic meanwhile. The Workers front answers both paths
	// with the same bodies (wrangler-compat/src/front.js).
	ReadyPath = "/readyz"
)

// Readiness is the body of ReadyPath. Checks has one entry per part, "ok"
// or a stable word for what is wrong; Reasons says the same for people.
// It names no URL, path or error text: the path is public, and the host's
// log has the details.
type Readiness struct {
	Ready  bool `json:"ready"`
	Checks struct {
		Ledger    string `json:"ledger"`    // ok | unreachable | not_migrated
		Upstream  string `json:"upstream"`  // ok | not_configured
		Functions string `json:"functions"` // ok | loading | missing
	} `json:"checks"`
	MissingFunctions []string `json:"missingFunctions,omitempty"`
	Reasons          []string `json:"reasons,omitempty"`
}

// readyCacheFor is how long a readiness answer is reused: probes from a
// load balancer or an unauthenticated caller cost the ledger at most two
// reads a second.
const readyCacheFor = time.Second

// readyTimeout bounds the ledger check of one probe.
const readyTimeout = 2 * time.Second

type readyCache struct {
	mu   sync.Mutex
	at   time.Time
	last Readiness
}

// Ready checks what the host needs to serve decisions: the ledger answers
// and has every migration, an upstream is configured, and every routed
// function's module is loaded.
func (a *App) Ready(ctx context.Context) Readiness {
	a.ready.mu.Lock()
	defer a.ready.mu.Unlock()
	if time.Since(a.ready.at) < readyCacheFor {
		return a.ready.last
	}
	var r Readiness
	r.Checks.Ledger, r.Checks.Upstream, r.Checks.Functions = "ok", "ok", "ok"
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	err := a.Ledger.RequireMigrated(ctx)
	var nm *ledger.NotMigratedError
	switch {
	case errors.As(err, &nm):
		r.Checks.Ledger = "not_migrated"
		r.Reasons = append(r.Reasons, "ledger not migrated: run `bin/gateway admin migrate`")
	case err != nil:
		r.Checks.Ledger = "unreachable"
		r.Reasons = append(r.Reasons, "ledger unreachable")
		a.Log.Warn("readiness: ledger check failed", "ledger", a.Ledger.Name(), "error", err.Error())
	}
	if a.Config.UpstreamKind == "" {
		r.Checks.Upstream = "not_configured"
		r.Reasons = append(r.Reasons, "upstream not configured: set UPSTREAM_KIND and UPSTREAM_URL")
	}
	var loading []string
	for _, name := range routes.Functions(routes.Table) {
		f, ok := a.Functions[name]
		switch {
		case !ok || f.Failed():
			r.MissingFunctions = append(r.MissingFunctions, name)
			if ok {
				// Loaded again once its retry period is over
				// (loadRetry), without holding up the probe.
				go f.Ready()
			}
		case !f.Loaded():
			loading = append(loading, name)
		}
	}
	switch {
	case len(r.MissingFunctions) > 0:
		r.Checks.Functions = "missing"
		r.Reasons = append(r.Reasons, "functions missing: "+strings.Join(r.MissingFunctions, ", "))
	case len(loading) > 0:
		// Modules compile in the background after start (startup.go),
		// without waiting for traffic once readiness is asked for.
		if a.traffic != nil {
			a.traffic.hurryUp()
		}
		r.Checks.Functions = "loading"
		r.Reasons = append(r.Reasons, "functions still loading: "+strings.Join(loading, ", "))
	}
	r.Ready = len(r.Reasons) == 0
	if len(loading) == 0 {
		// A "loading" answer is not reused: the probe has just hurried the
		// modules, and the next one should see them as soon as they load.
		a.ready.at, a.ready.last = time.Now(), r
	}
	return r
}

// probes answers HealthPath, ReadyPath and OpenAPIPath, and passes
// everything else on.
func (a *App) probes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != HealthPath && r.URL.Path != ReadyPath && r.URL.Path != OpenAPIPath {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Request-Id", server.NewRequestID())
		h.Set("Content-Type", "application/json; charset=utf-8")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			resp := policy.Error(contract.MethodNotAllowed, "this path does not accept "+r.Method)
			for _, f := range resp.Headers {
				h.Set(f.Name, f.Value)
			}
			h.Set("Allow", "GET, HEAD")
			w.WriteHeader(resp.Status)
			w.Write(resp.Body)
			return
		}
		status, body := http.StatusOK, []byte(`{"status":"ok"}`)
		switch r.URL.Path {
		case OpenAPIPath:
			body = schema.OpenAPI
			// Client generators and API browsers fetch it from other origins.
			h.Set("Access-Control-Allow-Origin", "*")
		case ReadyPath:
			ready := a.Ready(r.Context())
			body, _ = json.Marshal(ready)
			if !ready.Ready {
				status = http.StatusServiceUnavailable
			}
		}
		w.WriteHeader(status)
		if r.Method != http.MethodHead {
			w.Write(body)
		}
	})
}
