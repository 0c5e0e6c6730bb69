package contract

import (
	"strconv"
	"strings"
	"time"
)

// Kind is how a setting's value is read and checked. Each kind has one
// checker per host (wasm-host/hostconfig in Go, wrangler-compat/src/settings.js
// in JavaScript); the table below says which kind each setting is.
type Kind string

const (
	// Text is any string.
	Text Kind = "text"
	// Int is a whole number from Min to MaxInt.
	Int Kind = "int"
	// Duration is a Go duration (30s, 24h) greater than zero.
	Duration Kind = "duration"
	// Enum is one of Values, in any letter case, kept as Values spells it.
	Enum Kind = "enum"
	// Flag is 0 or 1.
	Flag Kind = "flag"
	// URL is an absolute http or https URL with a host and no
	// user:password@ (egress never sends one: a credential has its own
	// setting).
	URL Kind = "url"
	// Origin is a browser origin exactly as a browser sends it.
	Origin Kind = "origin"
	// CIDRs is a comma-separated list of CIDRs or single addresses.
	CIDRs Kind = "cidrs"
	// Model is a model name a request could send (spec §2.1, §8): 1 to 128
	// characters, not blank, no control characters.
	Model Kind = "model"
)

// MaxInt bounds every Int setting: what a function module's int holds
// (TinyGo's wasm32 int is 32 bits, so a larger value would be read as this
// one), and far below the sums the ledger makes with them (a welcome grant
// added to a balance must stay a 64-bit integer, schema/ledger.md).
const MaxInt = 1<<31 - 1

// Setting is one row of the settings table.
//
// The rule, the same for every setting on both hosts: an unset (empty)
// setting takes Default; a set one must pass its kind's check or the host
// refuses to start, naming it. No value quietly means the default, so 0 is
// only accepted where 0 means what it says (SERVICE_WELCOME_CREDITS=0
// grants nothing); a limit of 0 would refuse everyone and is refused.
type Setting struct {
	Name    string   `json:"name"`
	Default string   `json:"default"`
	Kind    Kind     `json:"kind"`
	Min     int      `json:"min,omitempty"`    // Int only
	Values  []string `json:"values,omitempty"` // Enum only
	// Secret: held by the host only, never readable by a module nor written
	// into a generated file (IsSecret must agree).
	Secret bool `json:"secret,omitempty"`
	// Module: readable by function modules through the config import. The
	// host passes the checked value, with Default filled in.
	Module bool   `json:"module,omitempty"`
	Doc    string `json:"doc"`
}

// Upstream kinds (UPSTREAM_KIND).
const (
	KindVendor = "vendor"
	KindEdge   = "edge"
	KindRouter = "router"
)

// Settings is every setting either host reads, in the README's order.
var Settings = []Setting{
	{Name: "SERVICE_ADDR", Default: "127.0.0.1:8787", Kind: Text, Doc: "listen address (wazero host)"},
	{Name: "SERVICE_ORIGIN", Default: "http://127.0.0.1:8787", Kind: Origin, Module: true, Doc: "the console's origin, exactly as a browser sends it"},
	{Name: "LIBSQL_URL", Default: "file:.data/ledger.db", Kind: Text, Secret: true, Doc: "the ledger: a SQLite file, http(s):// or libsql:// (sqld, Turso)"},
	{Name: "LIBSQL_AUTH_TOKEN", Kind: Text, Secret: true, Doc: "token for sqld or Turso"},
	{Name: "UPSTREAM_KIND", Kind: Enum, Values: []string{KindVendor, KindEdge, KindRouter}, Module: true, Doc: "the upstream's protocol; unset, no upstream"},
	{Name: "UPSTREAM_URL", Kind: URL, Module: true, Doc: "the upstream's base URL"},
	{Name: "UPSTREAM_API_KEY", Kind: Text, Secret: true, Doc: "the operator's upstream key"},
	{Name: "SERVICE_DEFAULT_MODEL", Kind: Model, Module: true, Doc: "model used when a request names none (unset: model-latest, edge: vendor/model)"},
	{Name: "SERVICE_RATE_LIMIT", Default: "120", Kind: Int, Min: 1, Module: true, Doc: "decision requests per account per minute"},
	{Name: "SERVICE_MODELS_RATE_LIMIT", Default: "60", Kind: Int, Min: 1, Module: true, Doc: "GET /v1/models per account per minute"},
	{Name: "SERVICE_AUTH_RATE_LIMIT", Default: "600", Kind: Int, Min: 1, Module: true, Doc: "API authentication attempts per hashed client address per minute"},
	{Name: "SERVICE_WELCOME_CREDITS", Default: "100", Kind: Int, Min: 0, Module: true, Doc: "one-time grant on first verification; 0 grants nothing"},
	{Name: "SERVICE_DOCS_URL", Kind: URL, Module: true, Doc: "documentation link in the public configuration"},
	{Name: "SERVICE_IDEMPOTENCY_TTL", Default: "24h", Kind: Duration, Module: true, Doc: "idempotency retention"},
	{Name: "MAIL_URL", Kind: URL, Module: true, Doc: "HTTP mail endpoint for sign-in links"},
	{Name: "MAIL_API_KEY", Kind: Text, Secret: true, Doc: "the mail endpoint's Bearer token"},
	{Name: "SERVICE_MAIL_FROM", Default: "Decision Gateway <no-reply@localhost>", Kind: Text, Module: true, Doc: "sender address of sign-in mail"},
	{Name: "GATEWAY_POOL_SIZE", Default: "8", Kind: Int, Min: 1, Doc: "calls running at once per function; up to 4× as many instances (16× on sqld or Turso), the others waiting on the ledger"},
	{Name: "GATEWAY_REQUEST_TIMEOUT", Default: "60s", Kind: Duration, Module: true, Doc: "per-request deadline"},
	{Name: "GATEWAY_QUEUE_TIMEOUT", Default: "1s", Kind: Duration, Doc: "how long a new request may wait for its function to start; past it, 503 overloaded"},
	{Name: "GATEWAY_MAX_REQUESTS", Default: "4096", Kind: Int, Min: 1, Doc: "function requests a wazero host serves at once, those awaiting their upstream included; past it, 503 overloaded at once"},
	{Name: "GATEWAY_MAX_CONNECTIONS", Kind: Int, Min: 1, Doc: "client connections a wazero host keeps open at once; past it, new ones wait in the listen backlog until one closes (unset: the process's open-file limit less 256, halved)"},
	{Name: "GATEWAY_FUNCTIONS_DIR", Default: "build/functions", Kind: Text, Doc: "where the function modules are"},
	{Name: "GATEWAY_DATA_DIR", Default: ".data", Kind: Text, Doc: "compilation cache and dev files"},
	{Name: "GATEWAY_TRUSTED_PROXIES", Kind: CIDRs, Doc: "reverse proxies whose forwarded header is believed"},
	{Name: "GATEWAY_FORWARDED_HEADER", Default: "X-Forwarded-For", Kind: Enum, Values: []string{"X-Forwarded-For", "Forwarded"}, Doc: "the header the trusted proxies maintain"},
	{Name: "GATEWAY_READ_HEADER_TIMEOUT", Default: "10s", Kind: Duration, Doc: "time a client has to send its request line and headers"},
	{Name: "GATEWAY_BODY_TIMEOUT", Default: "30s", Kind: Duration, Doc: "time a client has to send its body"},
	{Name: "GATEWAY_IDLE_TIMEOUT", Default: "120s", Kind: Duration, Doc: "how long an idle keep-alive connection is kept"},
	{Name: "GATEWAY_MAX_HEADER_BYTES", Default: "65536", Kind: Int, Min: 4096, Doc: "largest request header block"},
	{Name: "GATEWAY_MODULES", Default: "abi", Kind: Enum, Values: []string{"abi", "socket"}, Doc: "which build of the functions the host runs (schema/socket.md)"},
	{Name: "GATEWAY_CACHE_DIR", Kind: Text, Doc: "wazero's compilation cache (unset: GATEWAY_DATA_DIR/wazero-cache)"},
	{Name: "GATEWAY_LOG_LEVEL", Default: "info", Kind: Enum, Values: []string{"debug", "info", "warn", "error"}, Doc: "what the host logs (JSON lines on stderr)"},
	{Name: "GATEWAY_METRICS_ADDR", Kind: Text, Doc: "a listener of its own serving the metrics to any client; unset, loopback clients of SERVICE_ADDR"},
	{Name: "GATEWAY_DEV", Kind: Flag, Module: true, Doc: "set by serve --dev"},
	{Name: "GATEWAY_EMULATOR", Kind: Flag, Module: true, Doc: "set when the upstream is the built-in emulator"},
}

// SettingNamed returns the row of a setting, or nil.
func SettingNamed(name string) *Setting {
	for i := range Settings {
		if Settings[i].Name == name {
			return &Settings[i]
		}
	}
	return nil
}

// ModuleSettings are the names modules may read, in table order: an
// allow-list, so a new variable never leaks into a module by accident.
func ModuleSettings() []string {
	var out []string
	for _, s := range Settings {
		if s.Module {
			out = append(out, s.Name)
		}
	}
	return out
}

// SecretNames are secrets whatever their suffix; SecretSuffixes mark any
// other name as one (schema/abi.md). A name in neither is plain.
var (
	SecretNames    = []string{"UPSTREAM_API_KEY", "LIBSQL_AUTH_TOKEN", "LIBSQL_URL", "MAIL_API_KEY"}
	SecretSuffixes = []string{"_SECRET", "_TOKEN", "_KEY"}
)

// IsSecret reports whether a setting name is a secret under schema/abi.md:
// held by the host, never readable by a module, never in a generated file.
func IsSecret(name string) bool {
	for _, n := range SecretNames {
		if n == name {
			return true
		}
	}
	for _, s := range SecretSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// RuleOf is a setting's rule in words, as schema/settings.md and the
// hosts' refusals state it.
func RuleOf(s *Setting) string {
	switch s.Kind {
	case Int:
		return "a whole number from " + strconv.Itoa(s.Min) + " to " + strconv.Itoa(MaxInt)
	case Duration:
		return "a Go duration > 0 (30s, 24h)"
	case Enum:
		return strings.Join(s.Values, " or ")
	case Flag:
		return "0 or 1"
	case URL:
		return "an http(s) URL without user:password@"
	case Origin:
		return "a browser origin"
	case CIDRs:
		return "CIDRs or addresses"
	case Model:
		return "a model name: 1 to 128 characters, not blank, no control characters"
	}
	return "any text"
}

// IntValue reads an Int setting's value that its rule has checked (0 if
// it does not parse, which a checked value always does).
func IntValue(v string) int {
	n, _ := strconv.Atoi(v)
	return n
}

// DurationValue reads a Duration setting's value that its rule has checked.
func DurationValue(v string) time.Duration {
	d, _ := time.ParseDuration(v)
	return d
}
