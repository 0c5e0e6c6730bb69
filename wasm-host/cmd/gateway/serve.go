package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"golang.org/x/net/netutil"

	"decisiongateway/wasm-host/app"
	"decisiongateway/wasm-host/devmail"
	"decisiongateway/wasm-host/emulator"
	"decisiongateway/wasm-host/hostconfig"
	"decisiongateway/wasm-host/ledger"
)

func serve(log *slog.Logger, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	dev := fs.Bool("dev", false, "run the built-in upstream emulator and keep a mail outbox")
	fs.SetOutput(io.Discard) // main prints the usage of a wrong command line
	if err := fs.Parse(args); err != nil {
		return wrong("%v", err)
	}
	if fs.NArg() > 0 {
		return wrong("serve takes no arguments, got %q", fs.Args())
	}
	cfg, err := hostconfig.FromEnv()
	if err != nil {
		return err
	}
	if os.Getenv("GOGC") == "" {
		// The host's live heap is small (a few MiB besides the guests'
		// memories, which are not Go heap), so Go's default of collecting
		// at twice the live heap runs the collector every few hundred
		// requests. Collecting at four times costs some MiB and was worth
		// about 10% more decisions per second (make bench-load,
		// closed16/small). GOGC set in the environment wins.
		debug.SetGCPercent(300)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *dev {
		if err := startDev(ctx, cfg, log); err != nil {
			return err
		}
	}
	// The socket listens before the host is built: the kernel completes
	// connections into its backlog meanwhile, so a client that connects
	// during the start waits for its answer instead of being refused and
	// retrying (make bench-load, coldstart).
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("SERVICE_ADDR %q: %w", cfg.Addr, err)
	}
	// Connections past the bound wait in the backlog: the descriptors
	// left are the running requests' (hostconfig, connections.go).
	maxConns := cfg.Connections()
	ln = netutil.LimitListener(ln, maxConns)
	defer ln.Close()
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close(context.Background())
	a.StartSweeper(ctx, 15*time.Second)

	srv := a.HTTPServer()
	if cfg.MetricsAddr != "" {
		msrv, err := serveMetrics(a, cfg.MetricsAddr, log)
		if err != nil {
			return err
		}
		defer msrv.Close()
	}
	if at := "http://" + ln.Addr().String(); os.Getenv("SERVICE_ORIGIN") == "" && at != cfg.Origin {
		// Browser writes must send exactly SERVICE_ORIGIN: with its
		// default, the console opened at this host's own address could
		// read but every sign-in and key would be refused 403.
		log.Warn("SERVICE_ORIGIN is unset, so the console accepts writes only from its default origin, not from the address served here; set SERVICE_ORIGIN to the origin browsers open", "origin", cfg.Origin, "addr", at)
	}
	log.Info("serving", "addr", "http://"+ln.Addr().String(), "ledger", ledger.Redact(cfg.LedgerURL), "upstream_kind", cfg.UpstreamKind, "functions", len(a.Functions), "max_connections", maxConns, "dev", *dev)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Graceful: stop accepting, let in-flight requests (and their ledger
	// settlements) finish within the request timeout.
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.RequestTimeout+5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// serveMetrics answers the host's metrics on a listener of their own
// (GATEWAY_METRICS_ADDR), to every client that reaches it: the operator
// binds it where only scrapers do (a private interface, a pod's port).
func serveMetrics(a *app.App, addr string, log *slog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("GATEWAY_METRICS_ADDR=%q: %w", addr, err)
	}
	srv := &http.Server{Handler: a.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go srv.Serve(ln)
	log.Info("serving metrics", "addr", "http://"+ln.Addr().String()+app.MetricsPath)
	return srv, nil
}

// startDev marks the configuration as a development host and starts what a
// fresh machine lacks: the upstream emulator and the mail outbox.
func startDev(ctx context.Context, cfg *hostconfig.Config, log *slog.Logger) error {
	cfg.Dev = true
	cfg.Set("GATEWAY_DEV", "1")
	// The upstream is the built-in emulator (vendor unless UPSTREAM_KIND
	// names edge or router) unless the operator named a real one. Set
	// before app.New, which derives the egress allow-list and the upstream
	// credential's origin from UPSTREAM_URL.
	if cfg.UpstreamKind == "" || cfg.UpstreamURL == "" {
		emu, err := emulator.Start(ctx, log)
		if err != nil {
			return err
		}
		kind := cfg.UpstreamKind
		if kind == "" {
			kind = "vendor"
		}
		cfg.UpstreamKind, cfg.UpstreamURL = kind, emu.BaseURL(kind)
		cfg.UpstreamAPIKey = "" // a real key has no business with the emulator
		cfg.Set("UPSTREAM_KIND", kind)
		cfg.Set("UPSTREAM_URL", cfg.UpstreamURL)
		cfg.Set("GATEWAY_EMULATOR", "1")
		log.Info("upstream: the built-in EMULATOR (deterministic lexical scorer, not a model); set UPSTREAM_KIND=vendor|edge|router to pick its protocol",
			"kind", kind, "url", cfg.UpstreamURL)
	}
	// Sign-in mail goes to a local outbox unless an operator named a mail
	// endpoint. Set before app.New, which allows egress to MAIL_URL.
	if cfg.MailURL == "" {
		box, err := devmail.Start(ctx, filepath.Join(cfg.DataDir, "outbox"), log)
		if err != nil {
			return err
		}
		cfg.MailURL = box.URL
		cfg.Set("MAIL_URL", box.URL)
		log.Info("dev outbox: sign-in mail is written here, and each link is logged", "dir", box.Dir)
	}
	return nil
}
