package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/keys"
	"decisiongateway/wasm-host/hostconfig"
	"decisiongateway/wasm-host/ledger"
)

// adminCommands are the account commands by name, as the command table
// runs them, for tests that hand them a ledger of their own.
var adminCommands = map[string]func(*operator, []string) error{
	"session": adminSession, "key": adminKey, "credits": grantCredits,
	"accounts": listAccounts, "account": showAccount, "revoke": revokeKey, "usage": exportUsage,
}

// adminTry runs `admin ARGS…` against led and returns what it printed.
func adminTry(cfg *hostconfig.Config, led *ledger.Executor, args ...string) (string, error) {
	var out bytes.Buffer
	err := adminCommands[args[0]](&operator{ctx: context.Background(), cfg: cfg, led: led, out: &out}, args[1:])
	return out.String(), err
}

func adminRun(t *testing.T, cfg *hostconfig.Config, led *ledger.Executor, args ...string) []string {
	t.Helper()
	out, err := adminTry(cfg, led, args...)
	if err != nil {
		t.Fatalf("admin %v: %v", args, err)
	}
	return strings.Split(strings.TrimSpace(out), "\n")
}

// The operator interface other tools depend on: the last line of `admin
// session` is the cookie NAME=VALUE, the last line of `admin key` the secret.
func TestAdminCommandsPrintTheValueLast(t *testing.T) {
	env := map[string]string{"SERVICE_WELCOME_CREDITS": "7"}
	cfg, err := hostconfig.From(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.OpenWith(context.Background(), "file:"+filepath.Join(t.TempDir(), "l.db"), "", ledger.Options{Create: true})
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
	for _, bad := range [][]string{{"credits", "ops@example.com", "0"}, {"credits", "ops@example.com"}, {"session", "not-an-address"}, {"credits", "ops@example.com", "5", "--force"}} {
		if _, err := adminTry(cfg, led, bad...); err == nil {
			t.Errorf("admin %v succeeded", bad)
		}
	}
}

// `admin credits` grants to an existing account only: a mistyped address
// is refused, naming the address and the flag, and creates nothing; with
// --create it opens an unverified account holding the credits.
func TestAdminCreditsRefusesAnUnknownAccountUnlessAskedToCreate(t *testing.T) {
	cfg, err := hostconfig.From(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.OpenWith(context.Background(), "file:"+filepath.Join(t.TempDir(), "l.db"), "", ledger.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	if err := led.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	accounts := func() int64 {
		res := led.Exec(context.Background(), &abi.Batch{Steps: []abi.Statement{{SQL: "SELECT count(*) FROM accounts"}}})
		if res.Err != "" {
			t.Fatal(res.Err)
		}
		return res.Steps[0].Rows[0][0].AsInt()
	}
	_, err = adminTry(cfg, led, "credits", "nobody@example.com", "5")
	if err == nil || !strings.Contains(err.Error(), "nobody@example.com") || !strings.Contains(err.Error(), "--create") {
		t.Fatalf("unknown account: %v", err)
	}
	if n := accounts(); n != 0 {
		t.Fatalf("a refused grant created %d accounts", n)
	}
	for _, args := range [][]string{{"credits", "nobody@example.com", "5", "--create"}, {"credits", "--create", "other@example.com", "5"}} {
		if lines := adminRun(t, cfg, led, args...); !strings.Contains(lines[0], "balance: 5") {
			t.Errorf("%v: %q", args, lines)
		}
	}
	if lines := adminRun(t, cfg, led, "credits", "nobody@example.com", "2"); !strings.Contains(lines[0], "balance: 7") {
		t.Errorf("existing account: %q", lines)
	}
	if n := accounts(); n != 2 {
		t.Errorf("%d accounts, want 2", n)
	}
}
