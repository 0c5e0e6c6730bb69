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
	"strings"
	"time"

	"decisiongateway/shared/contract"
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
	// QueueTimeout bounds a new request's wait for its function to start
	// (runtime.Options.QueueTimeout).
	QueueTimeout time.Duration
	// MaxRequests bounds the function requests served at once
	// (server.Server.MaxRequests).
	MaxRequests int
	// MaxConnections bounds the client connections the host keeps open;
	// 0 means ConnectionsFor the process's open-file limit.
	MaxConnections int
	FunctionsDir   string
	Dev            bool

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
	// CacheDir is wazero's compilation cache (GATEWAY_CACHE_DIR, by default
	// DataDir/wazero-cache).
	CacheDir string
	// Modules is which build of the functions the host runs: "abi" (the
	// host ABI, TinyGo) or "socket" (self-sufficient modules with sockets,
	// schema/socket.md).
	Modules string

	// plain holds the settings modules may read (see Get).
	plain map[string]string
}

// FromEnv reads the configuration from the process environment.
func FromEnv() (*Config, error) { return From(os.Getenv) }

// From reads the configuration through getenv (tests pass a map's lookup).
// Every setting is checked here, once, by its row in contract.Settings
// (Load); what is left are the rules that tie two settings together.
func From(getenv func(string) string) (*Config, error) {
	v, err := Load(getenv)
	if err != nil {
		return nil, err
	}
	c := &Config{
		Addr:              v["SERVICE_ADDR"],
		LedgerURL:         v["LIBSQL_URL"],
		LedgerToken:       v["LIBSQL_AUTH_TOKEN"],
		UpstreamKind:      v["UPSTREAM_KIND"],
		UpstreamURL:       strings.TrimRight(v["UPSTREAM_URL"], "/"),
		UpstreamAPIKey:    v["UPSTREAM_API_KEY"],
		MailURL:           v["MAIL_URL"],
		MailAPIKey:        v["MAIL_API_KEY"],
		DataDir:           v["GATEWAY_DATA_DIR"],
		FunctionsDir:      v["GATEWAY_FUNCTIONS_DIR"],
		PoolSize:          contract.IntValue(v["GATEWAY_POOL_SIZE"]),
		RequestTimeout:    contract.DurationValue(v["GATEWAY_REQUEST_TIMEOUT"]),
		QueueTimeout:      contract.DurationValue(v["GATEWAY_QUEUE_TIMEOUT"]),
		MaxRequests:       contract.IntValue(v["GATEWAY_MAX_REQUESTS"]),
		MaxConnections:    contract.IntValue(v["GATEWAY_MAX_CONNECTIONS"]),
		Origin:            v["SERVICE_ORIGIN"],
		ForwardedHeader:   v["GATEWAY_FORWARDED_HEADER"],
		ReadHeaderTimeout: contract.DurationValue(v["GATEWAY_READ_HEADER_TIMEOUT"]),
		BodyTimeout:       contract.DurationValue(v["GATEWAY_BODY_TIMEOUT"]),
		IdleTimeout:       contract.DurationValue(v["GATEWAY_IDLE_TIMEOUT"]),
		MaxHeaderBytes:    contract.IntValue(v["GATEWAY_MAX_HEADER_BYTES"]),
		MetricsAddr:       v["GATEWAY_METRICS_ADDR"],
		Modules:           v["GATEWAY_MODULES"],
		plain:             map[string]string{},
	}
	if err := c.checkModules(getenv("GATEWAY_FUNCTIONS_DIR")); err != nil {
		return nil, err
	}
	c.CacheDir = or(v["GATEWAY_CACHE_DIR"], filepath.Join(c.DataDir, "wazero-cache"))
	if p := v["GATEWAY_TRUSTED_PROXIES"]; p != "" {
		c.TrustedProxies, _ = ParseTrustedProxies(p) // checked by Load
	}
	if getenv("GATEWAY_FORWARDED_HEADER") != "" && len(c.TrustedProxies) == 0 {
		return nil, errors.New("GATEWAY_FORWARDED_HEADER is set but GATEWAY_TRUSTED_PROXIES is not: no forwarded header is read without trusted proxies")
	}
	// Modules get every setting they may read, checked and with its
	// default filled in, and trust it (schema/settings.md).
	for _, name := range contract.ModuleSettings() {
		c.plain[name] = v[name]
	}
	return c, nil
}

// Exposed returns the names of the settings a module may read through the
// config import (contract.ModuleSettings). The Workers configuration
// generator writes this list into each function Worker.
func Exposed() []string { return contract.ModuleSettings() }

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
func checkOrigin(name, v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Opaque != "" {
		return fmt.Errorf("%s=%q: want the console's origin, such as https://gateway.example.com (scheme://host[:port])", name, v)
	}
	want := u.Scheme + "://" + strings.ToLower(u.Host)
	if port := u.Port(); (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		want = u.Scheme + "://" + strings.ToLower(u.Hostname())
		if strings.Contains(u.Hostname(), ":") {
			want = u.Scheme + "://[" + strings.ToLower(u.Hostname()) + "]"
		}
	}
	if v != want || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return fmt.Errorf("%s=%q: want the origin exactly as a browser sends it, %q (lower case, no path, not even /, no default port)", name, v, want)
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
	if _, ok := c.plain[name]; ok {
		c.plain[name] = value
		return
	}
	panic("hostconfig: " + name + " is not a module-visible setting")
}

// Get returns a module-visible setting, or "" for unknown names and secrets.
// Secrets are never in the module-visible set; the secret rule is applied
// as well, as on Workers (wrangler-compat/src/config.js), so a secret stays
// unreadable even if one is ever marked Module by mistake.
func (c *Config) Get(name string) string {
	if contract.IsSecret(name) {
		return ""
	}
	return c.plain[name]
}

// LogLevel reads GATEWAY_LOG_LEVEL by its rule in contract.Settings: debug,
// info (the default, also for an empty value), warn or error, in any case.
// At info the host logs a line per request; at warn only answers it failed
// to give (5xx) and what went wrong; at debug also what functions log at
// debug. The commands read it before anything else, to log the rest.
func LogLevel(v string) (slog.Level, error) {
	if v == "" {
		return slog.LevelInfo, nil
	}
	v, err := Check(contract.SettingNamed("GATEWAY_LOG_LEVEL"), v)
	if err != nil {
		return 0, err
	}
	var l slog.Level
	l.UnmarshalText([]byte(v))
	return l, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
