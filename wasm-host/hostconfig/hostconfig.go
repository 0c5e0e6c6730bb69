// Package hostconfig is the host's view of its environment: the settings of
// the README, the secrets it keeps to itself, and the snapshot of plain
// settings that function modules may read through the config import.
package hostconfig

import (
	"fmt"
	"net/url"
	"os"
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
		FunctionsDir:   or(getenv("GATEWAY_FUNCTIONS_DIR"), "build/functions"),
		PoolSize:       8,
		RequestTimeout: 60 * time.Second,
		plain:          map[string]string{},
	}
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
	if v := getenv("GATEWAY_REQUEST_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("GATEWAY_REQUEST_TIMEOUT=%q: want a Go duration such as 30s", v)
		}
		c.RequestTimeout = d
	}
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
