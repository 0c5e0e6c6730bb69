// Package settings is a function's typed view of the deployment settings.
//
// Both hosts check every setting once, at start, against its row in
// shared/contract (a bad one stops the host, naming it), and pass modules
// each setting they may read with its default filled in. A module trusts
// what it gets: Read parses without checking and without falling back. The
// table's default applies only to a setting the host did not pass at all,
// which only native callers (tests, benchmarks) do.
package settings

import (
	"time"

	"decisiongateway/shared/contract"
	"decisiongateway/shared/platform"
)

// Upstream kinds (UPSTREAM_KIND).
const (
	KindVendor = contract.KindVendor
	KindEdge   = contract.KindEdge
	KindRouter = contract.KindRouter
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
	Origin          string
	UpstreamKind    string // "" when no upstream is configured
	UpstreamURL     string
	Emulator        bool // the upstream is the host's built-in emulator
	DefaultModel    string
	RateLimit       int
	ModelsRateLimit int // GET /v1/models per account per minute
	AuthRateLimit   int // API authentication attempts per hashed client IP per minute
	WelcomeCredits  int
	DocsURL         string
	IdempotencyTTL  time.Duration
	// RequestTimeout is the host's per-request deadline; a function budgets
	// its upstream call inside it so it can still settle the ledger.
	RequestTimeout time.Duration
	Dev            bool
}

// UpstreamTimeout is how long a function waits for its upstream: the
// request deadline less a margin to settle accounts afterwards.
func (s *Settings) UpstreamTimeout() time.Duration { return s.RequestTimeout - s.SettleMargin() }

// SettleMargin is what an upstream call leaves of the request's time for
// settling and answering: a quarter, at most 5 s.
func (s *Settings) SettleMargin() time.Duration { return min(s.RequestTimeout/4, 5*time.Second) }

// Lease is how long a pending decision attempt is presumed alive. Past it,
// the host serving the attempt must have died or been stopped (its deadline
// is shorter), and the attempt is settled as failed and refunded.
func (s *Settings) Lease() time.Duration { return s.RequestTimeout + 5*time.Second }

// Read loads the settings from c, trusting the host's checked values. For
// the source Fix was given it returns what Fix read.
func Read(c platform.Config) Settings {
	if fixedFrom != nil && c == fixedFrom {
		return fixed
	}
	return read(c)
}

// Fix reads the settings from c once and makes Read(c) return them from
// then on: for a source whose values cannot change, such as a module's
// settings, which shared/guest reads while the module initialises (a
// decision reads its settings twice, and parsing them was about 2% of the
// wazero host's CPU on closed16/medium). c's dynamic type must be
// comparable.
func Fix(c platform.Config) {
	fixed, fixedFrom = read(c), c
}

var (
	fixed     Settings
	fixedFrom platform.Config
)

func read(c platform.Config) Settings {
	get := func(name string) string {
		if v := c.Get(name); v != "" {
			return v
		}
		return contract.SettingNamed(name).Default
	}
	s := Settings{
		Origin:          get("SERVICE_ORIGIN"),
		UpstreamKind:    get("UPSTREAM_KIND"),
		UpstreamURL:     get("UPSTREAM_URL"),
		Emulator:        get("GATEWAY_EMULATOR") == "1",
		DefaultModel:    get("SERVICE_DEFAULT_MODEL"),
		RateLimit:       contract.IntValue(get("SERVICE_RATE_LIMIT")),
		ModelsRateLimit: contract.IntValue(get("SERVICE_MODELS_RATE_LIMIT")),
		AuthRateLimit:   contract.IntValue(get("SERVICE_AUTH_RATE_LIMIT")),
		WelcomeCredits:  contract.IntValue(get("SERVICE_WELCOME_CREDITS")),
		DocsURL:         get("SERVICE_DOCS_URL"),
		IdempotencyTTL:  contract.DurationValue(get("SERVICE_IDEMPOTENCY_TTL")),
		RequestTimeout:  contract.DurationValue(get("GATEWAY_REQUEST_TIMEOUT")),
		Dev:             get("GATEWAY_DEV") == "1",
	}
	if s.DefaultModel == "" {
		s.DefaultModel = DefaultModelFor(s.UpstreamKind)
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
