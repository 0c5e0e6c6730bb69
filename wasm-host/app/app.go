// Package app assembles the wazero host from its parts: configuration, the
// ledger, egress, the engine and one pooled Function per routed module. The
// gateway command and the end-to-end tests both build the host through it, so
// the tests exercise exactly what `gateway serve` runs.
package app

import (
	"context"
	"decisiongateway/shared/ledgerq"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"decisiongateway/console"
	"decisiongateway/shared/abi"
	"decisiongateway/wasm-host/buildinfo"
	"decisiongateway/wasm-host/canary"
	"decisiongateway/wasm-host/egress"
	"decisiongateway/wasm-host/hostconfig"
	"decisiongateway/wasm-host/ledger"
	"decisiongateway/wasm-host/metrics"
	"decisiongateway/wasm-host/routes"
	"decisiongateway/wasm-host/runtime"
	"decisiongateway/wasm-host/server"
)

// App is a running host minus its listener.
type App struct {
	Config    *hostconfig.Config
	Ledger    *ledger.Executor
	Engine    *runtime.Engine
	Functions map[string]*Function
	Server    *server.Server
	Log       *slog.Logger
	Egress    *egress.Client
	// Releases serve each function as a stable and an optional canary
	// version, following the ledger (`gateway release`, README).
	Releases *canary.Table
	// Metrics are the host's Prometheus families (MetricsPath).
	Metrics *metrics.Host
	handler http.Handler
	ready   readyCache
	traffic *traffic // what background warming yields to (startup.go)
	// stopWarm abandons the upstream connection warmUpstream is opening.
	stopWarm context.CancelFunc
	// conns counts the client connections HTTPServer's server holds open
	// (gateway_connections_open).
	conns atomic.Int64
}

// releasePoll is how often a host reads the release table from the ledger:
// a release change reaches every host within about this long.
const releasePoll = 2 * time.Second

// New checks the upstream settings, opens the ledger, which must exist and
// be migrated (`gateway admin migrate` alone creates and migrates one), and
// starts compiling every routed module found in cfg.FunctionsDir, warming
// one instance of each. A routed module that is missing or does not load is
// logged, its routes answer 503 and ReadyPath reports it.
func New(ctx context.Context, cfg *hostconfig.Config, log *slog.Logger) (*App, error) {
	if err := cfg.CheckUpstream(); err != nil {
		return nil, err
	}
	log = redactLog(log, cfg.UpstreamAPIKey, cfg.MailAPIKey, cfg.LedgerToken)
	// The ledger opens while the decision module compiles: on a cold start
	// each costs a few milliseconds, and neither needs the other until the
	// first request.
	type opened struct {
		led *ledger.Executor
		err error
	}
	ledc := make(chan opened, 1)
	a := &App{Config: cfg, Log: log, Functions: map[string]*Function{}}
	a.observe(buildinfo.Version())
	a.Egress = egress.ForOperator(cfg.UpstreamURL, cfg.UpstreamAPIKey, cfg.MailURL, cfg.MailAPIKey)
	// The first module (the decision's) is hashed and compiled on a
	// goroutine of its own, started before anything else: its load is the
	// cold start's critical path. Handed to the warming goroutine instead,
	// it waited up to 2 ms for a processor while this one hashed the other
	// modules and the engine instantiated its imports.
	names := routes.Functions(routes.Table)
	a.traffic = newTraffic()
	engc := make(chan *runtime.Engine, 1)
	first := make(chan firstModule, 1)
	go func() {
		m := hashModule(cfg.CacheDir, cfg.FunctionsDir, names[0])
		var f *Function
		if eng := <-engc; eng != nil && m.err == nil {
			f = a.loader(names[0], m.path, m.sum)
		}
		first <- firstModule{m, f}
		if f != nil {
			f.Ready()
		}
	}()
	eng, err := runtime.NewEngine(ctx, engineOptions(cfg), a.services())
	if err != nil {
		engc <- nil
		return nil, err
	}
	a.Engine = eng
	engc <- eng
	// Modules compile in the background while the host already listens, in
	// route table order, the decision first; a request for a function not
	// yet loaded waits for that one alone (startup.go).
	// Each module is hashed once: the hash is its version (canary) and the
	// key of its instrumented form in the cache (runtime).
	versions := map[string]canary.Version{}
	loads := make(chan *Function, len(routes.Table))
	a.warm(loads, a.traffic)
	for i, name := range names {
		var m moduleFile
		var f *Function
		if i == 0 {
			fm := <-first
			m, f = fm.moduleFile, fm.fn
		} else {
			m = hashModule(cfg.CacheDir, cfg.FunctionsDir, name)
		}
		if m.err != nil {
			log.Warn("function module missing; its routes answer 503", "function", name, "path", m.path)
			continue
		}
		if f == nil {
			f = a.loader(name, m.path, m.sum)
		}
		versions[name] = canary.VersionOfSum(name, m.sum)
		a.Functions[name] = f
		loads <- f
	}
	close(loads)
	// The ledger opens, and compiles the decision path's statements, once
	// the decision module's compile has started: on two cores, starting it
	// first kept the compile (the cold start's critical path) waiting
	// about 2 ms for a processor.
	go func() {
		// A sqld started beside the host (a compose file) may not answer
		// yet: the host waits for it as an operator command would.
		led, err := ledger.OpenWith(ctx, cfg.LedgerURL, cfg.LedgerToken, ledger.Options{Prepare: ledgerq.DecisionStatements(), Merge: ledgerq.MergeableStatements(), Wait: ledger.OperatorPatience})
		if err == nil {
			if err = led.RequireMigrated(ctx); err != nil {
				led.Close()
				led = nil
			}
		}
		ledc <- opened{led, err}
	}()
	// The upstream's first connection opens meanwhile (warmUpstream);
	// started before the decision module's compile, it delayed it.
	a.warmUpstream(ctx)

	o := <-ledc
	if o.err != nil {
		a.Close(ctx)
		return nil, o.err
	}
	a.Ledger = o.led
	a.Releases = canary.NewTable(canary.Options{
		Engine: eng, Ledger: a.Ledger, DataDir: cfg.DataDir, PoolSize: cfg.PoolSize,
		Grace: cfg.RequestTimeout + 5*time.Second, Log: log,
		ClientAddr: a.client().Of,
		Abandon:    a.abandon,
	})
	handlers := map[string]server.Handler{}
	for _, name := range routes.Functions(routes.Table) {
		if f, ok := a.Functions[name]; ok {
			handlers[name] = a.Releases.Add(name, versions[name], f)
		}
	}
	// A release that cannot be applied (its module fails to load) leaves
	// that function on its built module rather than stopping the host.
	if err := a.Releases.Sync(ctx); err != nil {
		log.Error("some releases were not applied; those functions serve their built module", "error", err.Error())
	}
	a.Releases.Start(releasePoll)
	a.attachReleases()
	a.Server = &server.Server{
		Routes: routes.Table, Functions: handlers, Timeout: cfg.RequestTimeout, Log: log,
		Client:      a.client(),
		BodyTimeout: cfg.BodyTimeout,
		MaxRequests: cfg.MaxRequests,
		Observer:    a.Metrics,
	}
	// GET requests no route takes are the browser console's page and assets.
	a.Server.Static = console.Handler()
	a.handler = a.probes(a.serveMetrics(a.Releases.Wrap(a.Server)))
	if strings.HasPrefix(cfg.Origin, "https://") {
		a.handler = strictTransport(a.handler)
	}
	return a, nil
}

// strictTransport adds Strict-Transport-Security to every answer of a host
// whose console is served over https (SERVICE_ORIGIN): a browser that has
// seen it never sends the session cookie over plain http to this host
// again, even where a link or a typed address says http. Browsers honour it
// only on an https answer, so a host behind a TLS terminator may send it
// over its plain hop; a terminator that sets its own replaces it.
func strictTransport(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Strict-Transport-Security", "max-age=31536000")
		next.ServeHTTP(w, r)
	})
}

// client is how the host tells a request's client address (trusted proxies).
func (a *App) client() server.ClientAddr {
	return server.ClientAddr{Trusted: a.Config.TrustedProxies, Header: a.Config.ForwardedHeader}
}

// Handler is the host's HTTP handler.
func (a *App) Handler() http.Handler { return a.handler }

// HTTPServer returns the http.Server the host listens with: its handler,
// and the limits on what one client may hold (README, "Configuration"):
// the time to send its headers, their size, and how long an idle
// keep-alive connection is kept. The body's own deadline is the server's
// (server.Server.BodyTimeout), set per request once the headers are in.
// There is no write timeout: a decision may take the whole request
// timeout, and the function's deadline already bounds it.
func (a *App) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           a.handler,
		ReadHeaderTimeout: a.Config.ReadHeaderTimeout,
		IdleTimeout:       a.Config.IdleTimeout,
		MaxHeaderBytes:    a.Config.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(a.Log.Handler(), slog.LevelWarn),
		ConnState: func(_ net.Conn, state http.ConnState) {
			switch state {
			case http.StateNew:
				a.conns.Add(1)
			case http.StateClosed, http.StateHijacked:
				a.conns.Add(-1)
			}
		},
	}
}

// Close releases the pools, the engine and the ledger.
func (a *App) Close(ctx context.Context) {
	if a.Releases != nil {
		a.Releases.Close()
	}
	for _, f := range a.Functions {
		f.Close()
	}
	if a.Engine != nil {
		a.Engine.Close(ctx)
	}
	if a.Ledger != nil {
		a.Ledger.Close()
	}
	if a.stopWarm != nil {
		a.stopWarm()
	}
	if a.Egress != nil {
		a.Egress.Close()
	}
}

// warmUpstream opens the first connection to the upstream while the host
// starts (egress.Client.Warm), so that the first decision does not wait for
// its handshakes. An upstream not reached now is only noted: the first
// decision dials it again, and answers as it always has if that fails too.
func (a *App) warmUpstream(ctx context.Context) {
	if a.Config.UpstreamURL == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, upstreamWarmTimeout)
	a.stopWarm = cancel
	go func() {
		defer cancel()
		// Not noted when the host is closing (Close cancels it).
		if err := a.Egress.Warm(ctx, a.Config.UpstreamURL); err != nil && !errors.Is(ctx.Err(), context.Canceled) {
			a.Log.Info("upstream not reached while starting; the first decision dials it again", "error", err.Error())
		}
	}()
}

// upstreamWarmTimeout bounds the connection warmUpstream opens: dialing and
// a TLS handshake take a round trip or two.
const upstreamWarmTimeout = 10 * time.Second

func (a *App) services() runtime.Services {
	return runtime.Services{
		// The ledger and egress are set before New returns, and no guest
		// runs before then.
		// Each is counted in the host's metrics (observe.go).
		Ledger: a.ledgerExec,
		Fetch:  a.fetch,
		AI:     a.runAI,
		Config: a.Config.Get,
		Log: func(ctx context.Context, fn, rid string, rec *abi.LogRecord) {
			attrs := []any{"function", fn, "request_id", rid}
			for _, kv := range rec.Attrs {
				attrs = append(attrs, kv.Name, kv.Value)
			}
			a.Log.Log(ctx, slog.Level((int(rec.Level)-1)*4), rec.Message, attrs...)
		},
		Output: func(fn string, p []byte) {
			a.Log.Warn("function output", "function", fn, "text", string(p))
		},
	}
}

// moduleFile is a function's module in the functions directory, hashed.
type moduleFile struct {
	path string
	sum  [32]byte // its SHA-256: its version and its key in the cache
	err  error
}

// firstModule is the first module and its Function, already loading.
type firstModule struct {
	moduleFile
	fn *Function
}

// hashModule hashes a function's module without keeping its bytes:
// loading it reads the file again only when the cache has no instrumented
// form for this hash (runtime.Engine.CompileFile). On a start, reading
// every module into fresh memory (page faults, about 1.4 MB for seven)
// cost as much as hashing it, on the processors the decision module's
// compile needed (wasm-host/loadbench/MEASUREMENTS.md); a module unchanged
// since the last start is not read at all (runtime.SumFile).
func hashModule(cacheDir, dir, name string) moduleFile {
	m := moduleFile{path: filepath.Join(dir, name+".wasm")}
	m.sum, m.err = runtime.SumFile(cacheDir, m.path)
	return m
}
