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
	"io"
	"log/slog"
	"os"
	"strings"

	"decisiongateway/wasm-host/hostconfig"
	"decisiongateway/wasm-host/ledger"
	"decisiongateway/wasm-host/routes"
)

const usage = `usage:
  gateway serve [--dev]     serve HTTP on SERVICE_ADDR (--dev: built-in upstream emulator)
  gateway admin migrate     apply ledger migrations to LIBSQL_URL
  gateway admin session EMAIL      verified account (created if needed); session cookie NAME=VALUE last
  gateway admin credits EMAIL N [--create]   grant N credits (--create: open an unverified account for an unknown address)
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
	switch args[0] {
	case "migrate":
		return migrate(ctx, os.Stdout)
	case "session", "credits", "key":
		cfg, led, err := openLedger(ctx)
		if err != nil {
			return err
		}
		defer led.Close()
		return adminAccounts(ctx, cfg, led, os.Stdout, args)
	}
	return fmt.Errorf("unknown admin command %q\n%s", args[0], usage)
}

// migrate is `admin migrate`, the one command that may create a ledger: it
// creates a file: ledger that does not exist yet and applies every
// migration the ledger lacks.
func migrate(ctx context.Context, out io.Writer) error {
	cfg, err := hostconfig.FromEnv()
	if err != nil {
		return err
	}
	led, err := ledger.OpenWith(ctx, cfg.LedgerURL, cfg.LedgerToken, ledger.Options{Create: true, Patience: ledger.OperatorPatience})
	if err != nil {
		return err
	}
	defer led.Close()
	pending, err := led.Pending(ctx)
	if err != nil {
		return fmt.Errorf("ledger %s: %w", led.Name(), err)
	}
	if err := led.Migrate(ctx); err != nil {
		return fmt.Errorf("ledger %s: %w", led.Name(), err)
	}
	if len(pending) == 0 {
		fmt.Fprintf(out, "ledger %s: up to date; migrations applied\n", led.Name())
		return nil
	}
	fmt.Fprintf(out, "ledger %s: applied %s; migrations applied\n", led.Name(), strings.Join(pending, ", "))
	return nil
}

// openLedger reads the environment and opens the ledger as every operator
// command but migrate needs it: it must exist and be migrated, and failures
// known not to have committed are retried for OperatorPatience.
func openLedger(ctx context.Context) (*hostconfig.Config, *ledger.Executor, error) {
	cfg, err := hostconfig.FromEnv()
	if err != nil {
		return nil, nil, err
	}
	led, err := ledger.OpenWith(ctx, cfg.LedgerURL, cfg.LedgerToken, ledger.Options{Patience: ledger.OperatorPatience})
	if err != nil {
		return nil, nil, err
	}
	if err := led.RequireMigrated(ctx); err != nil {
		led.Close()
		return nil, nil, err
	}
	return cfg, led, nil
}
