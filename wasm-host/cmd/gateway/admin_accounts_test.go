package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"decisiongateway/shared/keys"
	"decisiongateway/wasm-host/hostconfig"
	"decisiongateway/wasm-host/ledger"
)

func adminRun(t *testing.T, cfg *hostconfig.Config, led *ledger.Executor, args ...string) []string {
	t.Helper()
	var out bytes.Buffer
	if err := adminAccounts(context.Background(), cfg, led, &out, args); err != nil {
		t.Fatalf("admin %v: %v", args, err)
	}
	return strings.Split(strings.TrimSpace(out.String()), "\n")
}

// The operator interface other tools depend on: the last line of `admin
// session` is the cookie NAME=VALUE, the last line of `admin key` the secret.
func TestAdminCommandsPrintTheValueLast(t *testing.T) {
	env := map[string]string{"SERVICE_WELCOME_CREDITS": "7"}
	cfg, err := hostconfig.From(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.Open(context.Background(), "file:"+filepath.Join(t.TempDir(), "l.db"), "")
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	if err := led.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}

	lines := adminRun(t, cfg, led, "session", "Ops@Example.com")
	name, value, _ := strings.Cut(lines[len(lines)-1], "=")
	acct, ok := keys.Parse(keys.Session, value)
	if name != keys.SessionCookie || !ok {
		t.Fatalf("last line %q", lines[len(lines)-1])
	}
	if !strings.Contains(lines[0], "granted now: 7") {
		t.Fatalf("first session: %q", lines)
	}
	if lines = adminRun(t, cfg, led, "session", "ops@example.com"); !strings.Contains(lines[0], "granted now: 0; balance: 7") {
		t.Fatalf("second session grants again: %q", lines)
	}
	if lines = adminRun(t, cfg, led, "credits", "ops@example.com", "5"); !strings.Contains(lines[0], "balance: 12") {
		t.Fatalf("credits: %q", lines)
	}
	lines = adminRun(t, cfg, led, "key", "ops@example.com", "deploy bot")
	if a, ok := keys.Parse(keys.APIKey, lines[len(lines)-1]); !ok || a != acct {
		t.Fatalf("key: %q", lines)
	}
	var out bytes.Buffer
	for _, bad := range [][]string{{"credits", "ops@example.com", "0"}, {"credits", "ops@example.com"}, {"session", "not-an-address"}} {
		if err := adminAccounts(context.Background(), cfg, led, &out, bad); err == nil {
			t.Errorf("admin %v succeeded", bad)
		}
	}
}
