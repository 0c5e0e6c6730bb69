// Package settings reads the deployment settings a function needs from its
// host's configuration, with the defaults the README documents. Parsing
// lives here once so every function reads a setting the same way.
package settings

import (
	"strconv"
	"time"

	"decisiongateway/shared/platform"
)

// Upstream kinds (UPSTREAM_KIND).
const (
	KindVendor = "vendor"
	KindEdge   = "edge"
	KindRouter = "router"
)

// ResponseMode is the X-Service-Response-Mode of an upstream kind, or ""
// for an unknown kind. (A switch, not a map: TinyGo maps cost ~350 ns a
// lookup.)
func ResponseMode(kind string) string {
	switch kind {
	case KindVendor:
		return "vendor-native"
	case KindEdge:
		return "edge-runtime"
	case KindRouter:
		return "router-adapted"
	}
	return ""
}

// Settings is the typed view of the configuration.
type Settings struct {
	Origin         string
	UpstreamKind   string // "" when no upstream is configured
	UpstreamURL    string
	Emulator       bool // the upstream is the host's built-in emulator
	DefaultModel   string
	RateLimit      int
	AuthRateLimit  int // API authentication attempts per hashed client IP per minute
	WelcomeCredits int
	DocsURL        string
	IdempotencyTTL time.Duration
	// RequestTimeout is the host's per-request deadline; a function budgets
	// its upstream call inside it so it can still settle the ledger.
	RequestTimeout time.Duration
	Dev            bool
}

// UpstreamTimeout is how long a function waits for its upstream: the
// request deadline less a margin to settle accounts afterwards.
func (s *Settings) UpstreamTimeout() time.Duration {
	margin := s.RequestTimeout / 4
	if margin > 5*time.Second {
		margin = 5 * time.Second
	}
	return s.RequestTimeout - margin
}

// Lease is how long a pending decision attempt is presumed alive. Past it,
// the host serving the attempt must have died or been stopped (its deadline
// is shorter), and the attempt is settled as failed and refunded.
func (s *Settings) Lease() time.Duration { return s.RequestTimeout + 5*time.Second }

// Read loads the settings from c.
func Read(c platform.Config) Settings {
	s := Settings{
		Origin:         or(c.Get("SERVICE_ORIGIN"), "http://127.0.0.1:8787"),
		UpstreamKind:   c.Get("UPSTREAM_KIND"),
		UpstreamURL:    c.Get("UPSTREAM_URL"),
		Emulator:       c.Get("GATEWAY_EMULATOR") == "1",
		RateLimit:      atoi(c.Get("SERVICE_RATE_LIMIT"), 120),
		AuthRateLimit:  atoi(c.Get("SERVICE_AUTH_RATE_LIMIT"), 600),
		WelcomeCredits: atoi(c.Get("SERVICE_WELCOME_CREDITS"), 100),
		DocsURL:        c.Get("SERVICE_DOCS_URL"),
		IdempotencyTTL: 24 * time.Hour,
		Dev:            c.Get("GATEWAY_DEV") == "1",
	}
	if d, err := time.ParseDuration(c.Get("SERVICE_IDEMPOTENCY_TTL")); err == nil && d > 0 {
		s.IdempotencyTTL = d
	}
	s.RequestTimeout = 60 * time.Second
	if d, err := time.ParseDuration(c.Get("GATEWAY_REQUEST_TIMEOUT")); err == nil && d > 0 {
		s.RequestTimeout = d
	}
	s.DefaultModel = c.Get("SERVICE_DEFAULT_MODEL")
	if s.DefaultModel == "" {
		s.DefaultModel = DefaultModelFor(s.UpstreamKind)
	}
	if ResponseMode(s.UpstreamKind) == "" {
		s.UpstreamKind = ""
	}
	return s
}

// DefaultModelFor is the model used when neither the request nor the
// deployment names one (spec §2.1, §9.5).
func DefaultModelFor(kind string) string {
	if kind == KindEdge {
		return "vendor/model"
	}
	return "model-latest"
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func atoi(v string, def int) int {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return def
	}
	return n
}
