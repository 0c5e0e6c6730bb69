package hostconfig

import (
	"slices"
	"strings"
	"testing"
)

func TestModulesChoosesBuildAndFolder(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, c := range []struct {
		env      []string
		dir, err string
	}{
		{nil, "build/functions", ""},
		{[]string{"GATEWAY_MODULES", "socket", "LIBSQL_URL", "http://127.0.0.1:8080"}, "build/functions-socket", ""},
		{[]string{"GATEWAY_MODULES", "socket", "LIBSQL_URL", "http://x", "GATEWAY_FUNCTIONS_DIR", "/m"}, "/m", ""},
		{[]string{"GATEWAY_MODULES", "socket"}, "", "over HTTP"},
		{[]string{"GATEWAY_MODULES", "socket", "LIBSQL_URL", "file:l.db?x=secret"}, "", "over HTTP"},
		{[]string{"GATEWAY_MODULES", "wasmedge"}, "", "want abi or socket"},
	} {
		cfg, err := From(env(c.env...))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "secret") {
				t.Errorf("%v: err = %v, want one saying %q", c.env, err, c.err)
			}
			continue
		}
		if err != nil || cfg.FunctionsDir != c.dir {
			t.Errorf("%v: dir %q err %v, want %q", c.env, cfg.FunctionsDir, err, c.dir)
		}
	}
}

func TestModuleEnvironHasSettingsAndTheModulesSecrets(t *testing.T) {
	m := map[string]string{
		"GATEWAY_MODULES": "socket", "LIBSQL_URL": "http://db:8080", "LIBSQL_AUTH_TOKEN": "tok",
		"UPSTREAM_KIND": "vendor", "UPSTREAM_URL": "http://up/v1", "UPSTREAM_API_KEY": "sk-1",
		"SERVICE_RATE_LIMIT": "7", "GATEWAY_TRUSTED_PROXIES": "10.0.0.0/8",
	}
	cfg, err := From(func(k string) string { return m[k] })
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.ModuleEnviron()
	for _, want := range []string{"LIBSQL_URL=http://db:8080", "LIBSQL_AUTH_TOKEN=tok", "UPSTREAM_API_KEY=sk-1", "UPSTREAM_URL=http://up/v1", "SERVICE_RATE_LIMIT=7", "GATEWAY_REQUEST_TIMEOUT=60s"} {
		if !slices.Contains(got, want) {
			t.Errorf("missing %s in %q", want, got)
		}
	}
	for _, kv := range got {
		if strings.HasPrefix(kv, "GATEWAY_TRUSTED_PROXIES=") {
			t.Errorf("a host-only setting reached the module: %s", kv)
		}
	}
}
