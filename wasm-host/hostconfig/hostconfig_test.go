package hostconfig

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"decisiongateway/shared/contract"
)

func from(env map[string]string) (*Config, error) {
	return From(func(k string) string { return env[k] })
}

// SERVICE_ORIGIN is compared byte for byte with the browser's Origin
// header, so only the spelling a browser sends is accepted.
func TestServiceOriginMustBeWhatABrowserSends(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:8787", "https://gateway.example.com", "https://gateway.example.com:8443", "http://[::1]:8787", "http://localhost"} {
		if _, err := from(map[string]string{"SERVICE_ORIGIN": ok}); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"notaurl", "gateway.example.com", "ftp://gateway.example.com", "https://gateway.example.com/", "https://gateway.example.com/app",
		"https://Gateway.Example.com", "HTTPS://gateway.example.com", "https://gateway.example.com:443", "http://gateway.example.com:80",
		"https://user@gateway.example.com", "https://gateway.example.com?x=1", "https://gateway.example.com#top", "https://", "http://:8787"} {
		if _, err := from(map[string]string{"SERVICE_ORIGIN": bad}); err == nil || !strings.Contains(err.Error(), "SERVICE_ORIGIN") {
			t.Errorf("%q accepted (%v)", bad, err)
		}
	}
}

// An upstream kind needs its URL on this host (the edge kind too: its
// binding is UPSTREAM_URL), and a URL needs its kind. Neither is fine.
func TestUpstreamKindAndURLGoTogether(t *testing.T) {
	for _, c := range []struct {
		kind, url string
		ok        bool
	}{
		{"", "", true},
		{"vendor", "https://vendor.example/v1", true},
		{"router", "https://router.example/api/v1", true},
		{"edge", "https://ai.example/client/v4/accounts/x/ai", true},
		{"vendor", "", false},
		{"router", "", false},
		{"edge", "", false},
		{"", "https://vendor.example/v1", false},
	} {
		cfg, err := from(map[string]string{"UPSTREAM_KIND": c.kind, "UPSTREAM_URL": c.url})
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if err := cfg.CheckUpstream(); (err == nil) != c.ok {
			t.Errorf("%+v: CheckUpstream = %v", c, err)
		}
	}
	if _, err := from(map[string]string{"UPSTREAM_KIND": "openai"}); err == nil {
		t.Error("unknown UPSTREAM_KIND accepted")
	}
}

func TestTrustedProxiesAndForwardedHeader(t *testing.T) {
	cfg, err := from(map[string]string{"GATEWAY_TRUSTED_PROXIES": " 10.0.0.0/8, 192.0.2.7 ,fd00::/8,2001:db8::1", "GATEWAY_FORWARDED_HEADER": "forwarded"})
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"), netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("2001:db8::1/128")}
	if len(cfg.TrustedProxies) != len(want) || cfg.ForwardedHeader != "Forwarded" {
		t.Fatalf("%v %q", cfg.TrustedProxies, cfg.ForwardedHeader)
	}
	for i := range want {
		if cfg.TrustedProxies[i] != want[i] {
			t.Errorf("%d: %v, want %v", i, cfg.TrustedProxies[i], want[i])
		}
	}
	if cfg, _ := from(nil); cfg.TrustedProxies != nil || cfg.ForwardedHeader != "X-Forwarded-For" {
		t.Errorf("defaults: %v %q", cfg.TrustedProxies, cfg.ForwardedHeader)
	}
	for _, bad := range []map[string]string{
		{"GATEWAY_TRUSTED_PROXIES": "10.0.0.0/33"},
		{"GATEWAY_TRUSTED_PROXIES": "proxy.internal"},
		{"GATEWAY_TRUSTED_PROXIES": ","},
		{"GATEWAY_TRUSTED_PROXIES": "10.0.0.1", "GATEWAY_FORWARDED_HEADER": "X-Real-IP"},
		{"GATEWAY_FORWARDED_HEADER": "Forwarded"}, // without trusted proxies it would do nothing
	} {
		if _, err := from(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestClientLimitsHaveDefaultsAndSettings(t *testing.T) {
	cfg, err := from(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ReadHeaderTimeout != 10*time.Second || cfg.BodyTimeout != 30*time.Second || cfg.IdleTimeout != 120*time.Second || cfg.MaxHeaderBytes != 64<<10 {
		t.Errorf("defaults %v %v %v %d", cfg.ReadHeaderTimeout, cfg.BodyTimeout, cfg.IdleTimeout, cfg.MaxHeaderBytes)
	}
	cfg, err = from(map[string]string{"GATEWAY_READ_HEADER_TIMEOUT": "2s", "GATEWAY_BODY_TIMEOUT": "3s", "GATEWAY_IDLE_TIMEOUT": "4s", "GATEWAY_MAX_HEADER_BYTES": "8192"})
	if err != nil || cfg.ReadHeaderTimeout != 2*time.Second || cfg.BodyTimeout != 3*time.Second || cfg.IdleTimeout != 4*time.Second || cfg.MaxHeaderBytes != 8192 {
		t.Errorf("settings %+v %v", cfg, err)
	}
	for _, bad := range []map[string]string{{"GATEWAY_BODY_TIMEOUT": "0s"}, {"GATEWAY_IDLE_TIMEOUT": "-1s"}, {"GATEWAY_READ_HEADER_TIMEOUT": "10"}, {"GATEWAY_MAX_HEADER_BYTES": "100"}} {
		if _, err := from(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// Every default passes its own rule, or an unset setting would be a value
// the host refuses when set.
func TestDefaultsPassTheirRules(t *testing.T) {
	for i := range contract.Settings {
		s := &contract.Settings[i]
		if s.Default == "" {
			continue
		}
		if _, err := Check(s, s.Default); err != nil {
			t.Errorf("%s: default refused: %v", s.Name, err)
		}
	}
}

// A bad setting stops the host at start, and the error names it. One rule
// per setting: 0 is refused for a limit (it would refuse everyone) and
// accepted for the welcome grant (it grants nothing).
func TestBadSettingIsRefusedByName(t *testing.T) {
	for _, c := range []struct{ name, value string }{
		{"SERVICE_RATE_LIMIT", "0"},
		{"SERVICE_MODELS_RATE_LIMIT", "0"},
		{"SERVICE_AUTH_RATE_LIMIT", "0"},
		{"SERVICE_AUTH_RATE_LIMIT", "many"},
		{"SERVICE_WELCOME_CREDITS", "-1"},
		{"SERVICE_IDEMPOTENCY_TTL", "24"},
		{"GATEWAY_REQUEST_TIMEOUT", "0s"},
		{"GATEWAY_POOL_SIZE", "0"},
		// Past what a module's 32-bit int holds: read there as 2147483647,
		// or, for the welcome grant, past the ledger's 64-bit balance.
		{"SERVICE_RATE_LIMIT", "2147483648"},
		{"SERVICE_WELCOME_CREDITS", "9223372036854775807"},
		{"GATEWAY_POOL_SIZE", "2305843009213693952"},
		{"UPSTREAM_KIND", "openai"},
		{"UPSTREAM_URL", "ftp://vendor.example"},
		{"MAIL_URL", "not a url"},
		// Served as the public configuration's docsUrl, which clients
		// follow: a link, not any text.
		{"SERVICE_DOCS_URL", "javascript:alert(1)"},
		{"SERVICE_DOCS_URL", "see the wiki"},
		{"GATEWAY_DEV", "yes"},
		// A default model the gateway would refuse in a request (spec
		// §2.1, §8): blank, too long, a control character.
		{"SERVICE_DEFAULT_MODEL", "   "},
		{"SERVICE_DEFAULT_MODEL", strings.Repeat("m", 129)},
		{"SERVICE_DEFAULT_MODEL", "model\nlatest"},
		{"SERVICE_DEFAULT_MODEL", "model\u0085"},
	} {
		_, err := from(map[string]string{c.name: c.value})
		if err == nil || !strings.HasPrefix(err.Error(), c.name+"=") {
			t.Errorf("%s=%q: %v", c.name, c.value, err)
		}
	}
	if _, err := from(map[string]string{"SERVICE_WELCOME_CREDITS": "0"}); err != nil {
		t.Errorf("SERVICE_WELCOME_CREDITS=0: %v", err)
	}
	for _, m := range []string{"model-2026-01-15", "vendor/model", " model ", strings.Repeat("é", 128)} {
		if _, err := from(map[string]string{"SERVICE_DEFAULT_MODEL": m}); err != nil {
			t.Errorf("SERVICE_DEFAULT_MODEL=%q: %v", m, err)
		}
	}
	if _, err := from(map[string]string{"SERVICE_RATE_LIMIT": "2147483647"}); err != nil {
		t.Errorf("SERVICE_RATE_LIMIT=2147483647: %v", err)
	}
}

// A URL with user:password@ in it would be denied on every call (egress
// sends no credential from a URL) and is refused at start, by name, without
// repeating its password; so is a URL with a port and no host.
func TestURLWithCredentialsIsRefusedWithoutEchoingThem(t *testing.T) {
	for _, c := range []struct{ name, value string }{
		{"UPSTREAM_URL", "https://ops:s3cret-pw@vendor.example/v1"},
		{"MAIL_URL", "https://apikey-s3cret-pw@mail.example/send"},
		{"UPSTREAM_URL", "http://:8080/v1"},
	} {
		env := map[string]string{"UPSTREAM_KIND": "vendor", "UPSTREAM_URL": "https://vendor.example/v1"}
		env[c.name] = c.value
		_, err := from(env)
		if err == nil || !strings.HasPrefix(err.Error(), c.name+"=") {
			t.Errorf("%s=%q: %v", c.name, c.value, err)
			continue
		}
		if strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("%s: the refusal repeats the credential: %v", c.name, err)
		}
	}
}

// Modules get every setting they may read, checked and with its default
// filled in, so no guest keeps a default of its own; never a secret.
func TestModulesGetCheckedValuesWithDefaults(t *testing.T) {
	cfg, err := from(map[string]string{"SERVICE_RATE_LIMIT": "7", "UPSTREAM_KIND": "Router", "UPSTREAM_URL": "https://r.example/api/v1", "UPSTREAM_API_KEY": "sk", "MAIL_API_KEY": "m"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"SERVICE_RATE_LIMIT": "7", "SERVICE_AUTH_RATE_LIMIT": "600", "SERVICE_MODELS_RATE_LIMIT": "60",
		"SERVICE_WELCOME_CREDITS": "100", "SERVICE_IDEMPOTENCY_TTL": "24h", "GATEWAY_REQUEST_TIMEOUT": "60s",
		"UPSTREAM_KIND": "router", "UPSTREAM_API_KEY": "", "MAIL_API_KEY": "", "LIBSQL_URL": "", "GATEWAY_POOL_SIZE": "",
	} {
		if got := cfg.Get(name); got != want {
			t.Errorf("Get(%s) = %q, want %q", name, got, want)
		}
	}
}
