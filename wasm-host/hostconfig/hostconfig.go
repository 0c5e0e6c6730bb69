// Package hostconfig is the host's view of its environment: the settings of
// the README, the secrets it keeps to itself, and the snapshot of plain
// settings that function modules may read through the config import.
package hostconfig

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is read once at start and never changes while serving.
type Config struct {
	Addr           string
	LedgerURL      string
	LedgerToken    string // secret
	UpstreamKind   string
	UpstreamURL    string
	UpstreamAPIKey string // secret
	MailURL        string
	MailAPIKey     string // secret
	DataDir        string
	PoolSize       int
	RequestTimeout time.Duration
	FunctionsDir   string
	Dev            bool
	// CacheDir is wazero's compilation cache (GATEWAY_CACHE_DIR, by default
	// DataDir/wazero-cache).
	CacheDir string
	// Modules is which build of the functions the host runs: "abi" (the
	// host ABI, TinyGo) or "socket" (self-sufficient modules with sockets,
	// schema/socket.md).
	Modules string

	// Origin is SERVICE_ORIGIN, checked to be an origin a browser sends.
	Origin string
	// TrustedProxies are the addresses (GATEWAY_TRUSTED_PROXIES) whose
	// ForwardedHeader is believed; with none, every forwarded header is
	// ignored and the client is the connection's peer.
	TrustedProxies  []netip.Prefix
	ForwardedHeader string // "X-Forwarded-For" or "Forwarded"
	// What a slow or hostile client may hold (README, "Configuration").
	ReadHeaderTimeout time.Duration
	BodyTimeout       time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	// MetricsAddr (GATEWAY_METRICS_ADDR), when set, is a listener of its
	// own that serves the metrics to any client (README, "Observability").
	MetricsAddr string

	// plain holds the settings modules may read (see Get).
	plain map[string]string
}

// exposed lists the settings a module can read. Anything else, secrets
// above all, reads as empty: an allow-list, so a new environment variable
// never leaks into a module by accident.
var exposed = []string{
	"SERVICE_ORIGIN", "SERVICE_DEFAULT_MODEL", "SERVICE_RATE_LIMIT",
	"SERVICE_WELCOME_CREDITS", "SERVICE_DOCS_URL", "SERVICE_IDEMPOTENCY_TTL",
	"SERVICE_AUTH_RATE_LIMIT", "SERVICE_MODELS_RATE_LIMIT", "SERVICE_MAIL_FROM",
	"UPSTREAM_KIND", "UPSTREAM_URL", "MAIL_URL", "GATEWAY_DEV", "GATEWAY_EMULATOR",
	"GATEWAY_REQUEST_TIMEOUT",
}

// FromEnv reads the configuration from the process environment.
func FromEnv() (*Config, error) { return From(os.Getenv) }

// From reads the configuration through getenv (tests pass a map's lookup).
func From(getenv func(string) string) (*Config, error) {
	c := &Config{
		Addr:           or(getenv("SERVICE_ADDR"), "127.0.0.1:8787"),
		LedgerURL:      or(getenv("LIBSQL_URL"), "file:.data/ledger.db"),
		LedgerToken:    getenv("LIBSQL_AUTH_TOKEN"),
		UpstreamKind:   getenv("UPSTREAM_KIND"),
		UpstreamURL:    strings.TrimRight(getenv("UPSTREAM_URL"), "/"),
		UpstreamAPIKey: getenv("UPSTREAM_API_KEY"),
		MailURL:        getenv("MAIL_URL"),
		MailAPIKey:     getenv("MAIL_API_KEY"),
		DataDir:        or(getenv("GATEWAY_DATA_DIR"), ".data"),
		Modules:        or(getenv("GATEWAY_MODULES"), ModulesABI),
		PoolSize:       8,
		RequestTimeout: 60 * time.Second,
		Origin:         or(getenv("SERVICE_ORIGIN"), "http://127.0.0.1:8787"),

		ForwardedHeader:   "X-Forwarded-For",
		ReadHeaderTimeout: 10 * time.Second,
		BodyTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,

		plain: map[string]string{},
	}
	if err := checkOrigin(c.Origin); err != nil {
		return nil, err
	}
	if err := c.checkModules(getenv("GATEWAY_FUNCTIONS_DIR")); err != nil {
		return nil, err
	}
	c.CacheDir = or(getenv("GATEWAY_CACHE_DIR"), filepath.Join(c.DataDir, "wazero-cache"))
	switch c.UpstreamKind {
	case "", "vendor", "edge", "router":
	default:
		return nil, fmt.Errorf("UPSTREAM_KIND=%q: want vendor, edge or router", c.UpstreamKind)
	}
	if c.UpstreamKind != "" && c.UpstreamURL != "" {
		if u, err := url.Parse(c.UpstreamURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("UPSTREAM_URL=%q: want an http(s) URL", c.UpstreamURL)
		}
	}
	if v := getenv("GATEWAY_POOL_SIZE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("GATEWAY_POOL_SIZE=%q: want a whole number ≥ 1", v)
		}
		c.PoolSize = n
	}
	for name, d := range map[string]*time.Duration{
		"GATEWAY_REQUEST_TIMEOUT":     &c.RequestTimeout,
		"GATEWAY_READ_HEADER_TIMEOUT": &c.ReadHeaderTimeout,
		"GATEWAY_BODY_TIMEOUT":        &c.BodyTimeout,
		"GATEWAY_IDLE_TIMEOUT":        &c.IdleTimeout,
	} {
		if v := getenv(name); v != "" {
			parsed, err := time.ParseDuration(v)
			if err != nil || parsed <= 0 {
				return nil, fmt.Errorf("%s=%q: want a Go duration such as 30s", name, v)
			}
			*d = parsed
		}
	}
	if v := getenv("GATEWAY_MAX_HEADER_BYTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 4096 {
			return nil, fmt.Errorf("GATEWAY_MAX_HEADER_BYTES=%q: want a whole number ≥ 4096", v)
		}
		c.MaxHeaderBytes = n
	}
	if v := getenv("GATEWAY_TRUSTED_PROXIES"); v != "" {
		p, err := ParseTrustedProxies(v)
		if err != nil {
			return nil, fmt.Errorf("GATEWAY_TRUSTED_PROXIES=%q: %w", v, err)
		}
		c.TrustedProxies = p
	}
	if v := getenv("GATEWAY_FORWARDED_HEADER"); v != "" {
		switch {
		case strings.EqualFold(v, "X-Forwarded-For"):
			c.ForwardedHeader = "X-Forwarded-For"
		case strings.EqualFold(v, "Forwarded"):
			c.ForwardedHeader = "Forwarded"
		default:
			return nil, fmt.Errorf("GATEWAY_FORWARDED_HEADER=%q: want X-Forwarded-For or Forwarded", v)
		}
		if len(c.TrustedProxies) == 0 {
			return nil, errors.New("GATEWAY_FORWARDED_HEADER is set but GATEWAY_TRUSTED_PROXIES is not: no forwarded header is read without trusted proxies")
		}
	}
	if _, err := LogLevel(getenv("GATEWAY_LOG_LEVEL")); err != nil {
		return nil, err
	}
	c.MetricsAddr = getenv("GATEWAY_METRICS_ADDR")
	if v := getenv("SERVICE_IDEMPOTENCY_TTL"); v != "" {
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			return nil, fmt.Errorf("SERVICE_IDEMPOTENCY_TTL=%q: want a Go duration such as 24h", v)
		}
	}
	for _, name := range []string{"SERVICE_RATE_LIMIT", "SERVICE_WELCOME_CREDITS"} {
		if v := getenv(name); v != "" {
			if n, err := strconv.Atoi(v); err != nil || n < 0 {
				return nil, fmt.Errorf("%s=%q: want a whole number ≥ 0", name, v)
			}
		}
	}
	for _, name := range exposed {
		if v := getenv(name); v != "" {
			c.plain[name] = v
		}
	}
	// Functions budget their upstream calls inside the host's deadline.
	c.plain["GATEWAY_REQUEST_TIMEOUT"] = c.RequestTimeout.String()
	return c, nil
}

// CheckUpstream refuses an upstream that names a kind without the URL it
// needs, or a URL without a kind: such a host would start, look ready, and
// fail every decision. Serving calls it after --dev has put its emulator in
// place. No kind and no URL is allowed: the host then serves accounts and
// the console, answers decisions 503 and reports itself not ready.
func (c *Config) CheckUpstream() error {
	switch {
	case c.UpstreamKind != "" && c.UpstreamURL == "":
		what := "its base URL, including /v1"
		switch c.UpstreamKind {
		case "router":
			what = "the router's base URL (the one before /chat/completions)"
		case "edge":
			what = "the Workers AI REST base URL this host calls as the model binding (POST {UPSTREAM_URL}/run/{model})"
		}
		return fmt.Errorf("UPSTREAM_KIND=%s needs UPSTREAM_URL: %s; or unset UPSTREAM_KIND to serve with no upstream", c.UpstreamKind, what)
	case c.UpstreamKind == "" && c.UpstreamURL != "":
		return fmt.Errorf("UPSTREAM_URL is set but UPSTREAM_KIND is not: name the upstream's protocol (vendor, edge or router)")
	}
	return nil
}

// checkOrigin accepts exactly what a browser sends as Origin for the
// console: lower-case scheme and host, a port only when it is not the
// scheme's default, no path, query or credentials. The console's writes
// are refused unless Origin equals SERVICE_ORIGIN byte for byte, so any
// other spelling would refuse every write.
func checkOrigin(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Opaque != "" {
		return fmt.Errorf("SERVICE_ORIGIN=%q: want the console's origin, such as https://gateway.example.com (scheme://host[:port])", v)
	}
	want := u.Scheme + "://" + strings.ToLower(u.Host)
	if port := u.Port(); (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		want = u.Scheme + "://" + strings.ToLower(u.Hostname())
		if strings.Contains(u.Hostname(), ":") {
			want = u.Scheme + "://[" + strings.ToLower(u.Hostname()) + "]"
		}
	}
	if v != want || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return fmt.Errorf("SERVICE_ORIGIN=%q: want the origin exactly as a browser sends it, %q (lower case, no path, not even /, no default port)", v, want)
	}
	return nil
}

// ParseTrustedProxies reads a comma-separated list of CIDRs (10.0.0.0/8,
// fd00::/8) or single addresses (192.0.2.10, meaning /32 or /128).
func ParseTrustedProxies(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if strings.Contains(item, "/") {
			p, err := netip.ParsePrefix(item)
			if err != nil {
				return nil, fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8", item)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR", item)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	if len(out) == 0 {
		return nil, errors.New("no address or CIDR")
	}
	return out, nil
}

// Set overrides a module-visible setting (used by --dev to point the
// upstream at the emulator). Call it before serving.
func (c *Config) Set(name, value string) {
	for _, n := range exposed {
		if n == name {
			c.plain[name] = value
			return
		}
	}
	panic("hostconfig: " + name + " is not a module-visible setting")
}

// Get returns a module-visible setting, or "" for unknown names and secrets.
func (c *Config) Get(name string) string { return c.plain[name] }

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// LogLevel reads GATEWAY_LOG_LEVEL: debug, info (the default, also for an
// empty value), warn or error, in any case. At info the host logs a line
// per request; at warn only answers it failed to give (5xx) and what
// went wrong; at debug also what functions log at debug.
func LogLevel(v string) (slog.Level, error) {
	var l slog.Level
	if v == "" {
		return slog.LevelInfo, nil
	}
	switch strings.ToLower(v) {
	case "debug", "info", "warn", "error":
		l.UnmarshalText([]byte(v))
		return l, nil
	}
	return 0, fmt.Errorf("GATEWAY_LOG_LEVEL=%q: want debug, info, warn or error", v)
}
