// Command gateway is the Decision Gateway host and its operator interface.
//
//	gateway serve [--dev]        serve HTTP on SERVICE_ADDR
//	gateway admin migrate        apply ledger migrations
//	gateway admin session|credits|key …   accounts (admin_accounts.go)
//	gateway routes               print the route table as JSON
//
// Settings come from the environment (README, "Configuration").
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"decisiongateway/wasm-host/hostconfig"
	"decisiongateway/wasm-host/ledger"
	"decisiongateway/wasm-host/routes"
)

const usage = `usage:
  gateway serve [--dev]     serve HTTP on SERVICE_ADDR (--dev: built-in upstream emulator)
  gateway admin migrate     apply ledger migrations to LIBSQL_URL
  gateway admin session EMAIL      verified account (created if needed); session cookie NAME=VALUE last
  gateway admin credits EMAIL N    grant N credits
  gateway admin key EMAIL [NAME]   like session, then an API key; its secret last
  gateway routes            print the route table as JSON
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(log, os.Args[2:])
	case "admin":
		err = admin(log, os.Args[2:])
	case "release":
		err = release(os.Args[2:], os.Stdout)
	case "routes":
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(routes.Table)
	default:
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func admin(log *slog.Logger, args []string) error {
	if len(args) < 1 {
		return fmt.Errorf("admin needs a command\n%s", usage)
	}
	ctx := context.Background()
	cfg, led, err := openLedger(ctx)
	if err != nil {
		return err
	}
	defer led.Close()
	switch args[0] {
	case "migrate":
		fmt.Println("migrations applied")
		return nil
	case "session", "credits", "key":
		return adminAccounts(ctx, cfg, led, os.Stdout, args)
	}
	return fmt.Errorf("unknown admin command %q\n%s", args[0], usage)
}

// openLedger reads the environment, opens the ledger and brings it up to
// date, as every operator command needs.
func openLedger(ctx context.Context) (*hostconfig.Config, *ledger.Executor, error) {
	cfg, err := hostconfig.FromEnv()
	if err != nil {
		return nil, nil, err
	}
	led, err := ledger.Open(ctx, cfg.LedgerURL, cfg.LedgerToken)
	if err != nil {
		return nil, nil, err
	}
	if err := led.Migrate(ctx); err != nil {
		led.Close()
		return nil, nil, err
	}
	return cfg, led, nil
}
