// Command gateway is the Decision Gateway host and its operator interface.
// `gateway --help` lists every command; `gateway COMMAND --help` explains
// one. Settings come from the environment (README, "Configuration").
//
// Exit status: 0 done (and for --help and --version), 1 the command
// failed, 2 the command line was wrong (an unknown command or flag, a
// missing argument): a script can tell a typo from a failure.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"decisiongateway/wasm-host/buildinfo"
	_ "decisiongateway/wasm-host/cmd/gateway/prestart" // serve's decision module compiles during package initialisation
	"decisiongateway/wasm-host/hostconfig"
	"decisiongateway/wasm-host/ledger"
	"decisiongateway/wasm-host/routes"
)

// command is one line of the command table: the words that name it, its
// arguments, a one-line summary for the top-level usage, more for its own
// --help, and what runs it.
type command struct {
	name, args, brief, more string
	run                     func(c *cli, args []string) error
}

// cli is what a command runs with: where it writes, and the logger.
type cli struct {
	out io.Writer
	log *slog.Logger
}

// usageError is a wrong command line: it exits 2, and is printed with the
// usage line of the command it names.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// commands is every command, in the order the top-level usage lists them.
// `release` is one entry: its subcommands have their own usage (release.go).
var commands = []command{
	{name: "serve", args: "[--dev]", brief: "serve HTTP on SERVICE_ADDR (--dev: the built-in upstream emulator and a mail outbox)",
		run: func(c *cli, args []string) error { return serve(c.log, args) }},
	{name: "admin migrate", brief: "create (a file ledger) and migrate the ledger at LIBSQL_URL",
		run: func(c *cli, args []string) error {
			return noArgs(args, "admin migrate", func() error { return migrate(context.Background(), c.out) })
		}},
	{name: "admin accounts", args: "[--json]", brief: "list every account: id, e-mail, verified, balance, active keys",
		more: accountsHelp, run: withLedger(listAccounts)},
	{name: "admin account", args: "EMAIL|ACCOUNT_ID [--json]", brief: "one account: balance (checked against its credit entries) and keys (never secrets)",
		more: accountHelp, run: withLedger(showAccount)},
	{name: "admin credits", args: "EMAIL|ACCOUNT_ID N [--create]", brief: "grant N credits as one grant entry (--create: open an unverified account for an unknown address)",
		run: withLedger(grantCredits)},
	{name: "admin revoke", args: "KEY_ID", brief: "revoke an API key by its id (key_…); requests with it fail from the commit on",
		run: withLedger(revokeKey)},
	{name: "admin usage", args: "[--format csv|jsonl] [--account EMAIL|ACCOUNT_ID] [--since DATE] [--until DATE]", brief: "export decision requests as CSV (default) or JSON lines",
		more: usageHelp, run: withLedger(exportUsage)},
	{name: "admin session", args: "EMAIL", brief: "verified account (created if needed); session cookie NAME=VALUE on the last line",
		run: withLedger(adminSession)},
	{name: "admin key", args: "EMAIL [NAME]", brief: "like session, then a new API key; its secret on the last line",
		run: withLedger(adminKey)},
	{name: "release", args: "status|canary|advance|promote|rollback|analyze …", brief: "roll a function's module out to a share of callers, promote or roll back (`gateway release --help`)",
		run: runRelease},
	{name: "routes", brief: "print the route table as JSON (for the Workers generator)",
		run: func(c *cli, args []string) error {
			return noArgs(args, "routes", func() error {
				enc := json.NewEncoder(c.out)
				enc.SetIndent("", "  ")
				return enc.Encode(routes.Table)
			})
		}},
	{name: "version", brief: "print the gateway's version (also --version)",
		run: func(c *cli, args []string) error {
			return noArgs(args, "version", func() error { return printVersion(c.out) })
		}},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command line, testable without a process: it returns
// the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	level, err := hostconfig.LogLevel(os.Getenv("GATEWAY_LOG_LEVEL"))
	if err != nil {
		fmt.Fprintln(stderr, "gateway:", err)
		return 2
	}
	c := &cli{out: stdout, log: slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	switch args[0] {
	case "--version", "-version":
		printVersion(stdout)
		return 0
	case "help":
		args = append(args[1:], "--help")
	}
	cmd, rest := find(args)
	if cmd == nil {
		if wantsHelp(args) && (len(args) == 1 || args[0] == "admin" && len(args) == 2) {
			fmt.Fprint(stdout, usage())
			return 0
		}
		fmt.Fprintf(stderr, "gateway: unknown command %q\n\n%s", named(args), usage())
		return 2
	}
	if wantsHelp(rest) {
		fmt.Fprint(stdout, cmd.help())
		return 0
	}
	err = cmd.run(c, rest)
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "gateway: %s\n\nusage: gateway %s\n(gateway %s --help for more)\n", err, strings.TrimSpace(cmd.name+" "+cmd.args), cmd.name)
		return 2
	}
	fmt.Fprintln(stderr, "gateway:", err)
	return 1
}

// find returns the command named by the leading words of args and the
// arguments after them, or nil.
func find(args []string) (*command, []string) {
	for i := range commands {
		words := strings.Fields(commands[i].name)
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			return &commands[i], args[len(words):]
		}
	}
	return nil, nil
}

// runRelease checks the release subcommand against the release usage,
// whose lines name every one, so a typo exits 2 like any other, then runs
// it (release.go).
func runRelease(c *cli, args []string) error {
	if len(args) == 0 {
		return wrong("release needs a subcommand")
	}
	for _, line := range strings.Split(releaseUsage, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "gateway" && f[1] == "release" && f[2] == args[0] {
			return release(args, c.out)
		}
	}
	return &usageError{msg: fmt.Sprintf("unknown command %q", "release "+args[0])}
}

// named is what the caller meant as a command name: the first word, and
// the second after admin.
func named(args []string) string {
	if args[0] == "admin" && len(args) > 1 {
		return "admin " + args[1]
	}
	return args[0]
}

// wantsHelp reports whether args ask for help: -h or --help anywhere, or
// release's subcommand help (`release canary --help`), which the release
// usage answers as a whole.
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "-h" || a == "--help" || a == "-help" {
			return true
		}
	}
	return false
}

// usage is the top-level usage: every command with its summary.
func usage() string {
	var b strings.Builder
	b.WriteString("usage: gateway COMMAND [ARGS]   (gateway COMMAND --help for one command)\n\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %s\n      %s\n", strings.TrimSpace(c.name+" "+c.args), c.brief)
	}
	b.WriteString(`
  --version, -h/--help

Settings come from the environment: LIBSQL_URL names the ledger, the rest
is in README.md, "Configuration". Exit status: 0 done, 1 failed, 2 wrong
command line.
`)
	return b.String()
}

// help is one command's --help.
func (c *command) help() string {
	if c.name == "release" {
		return releaseUsage
	}
	s := "usage: gateway " + strings.TrimSpace(c.name+" "+c.args) + "\n\n" + c.brief + "\n"
	if c.more != "" {
		s += "\n" + c.more
	}
	return s
}

// wrong is a usageError: the command line did not fit the command.
func wrong(format string, a ...any) error {
	return &usageError{msg: fmt.Sprintf(format, a...)}
}

func noArgs(args []string, name string, run func() error) error {
	if len(args) > 0 {
		return wrong("%s takes no arguments, got %q", name, args)
	}
	return run()
}

func printVersion(out io.Writer) error {
	_, err := fmt.Fprintf(out, "gateway %s (%s)\n", buildinfo.Version(), buildinfo.GoVersion())
	return err
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

// operator is what an account command runs against: the settings and the
// ledger, opened from the environment once the command's arguments are
// checked (open), so a typo is refused before any ledger is touched.
type operator struct {
	ctx context.Context
	cfg *hostconfig.Config
	led *ledger.Executor
	out io.Writer
}

// open opens the ledger; the command runner closes it.
func (op *operator) open() error {
	if op.led != nil {
		return nil // a test's ledger
	}
	cfg, led, err := openLedger(op.ctx)
	if err != nil {
		return err
	}
	op.cfg, op.led = cfg, led
	return nil
}

// withLedger runs an account command, closing the ledger it opened.
func withLedger(run func(op *operator, args []string) error) func(c *cli, args []string) error {
	return func(c *cli, args []string) error {
		op := &operator{ctx: context.Background(), out: c.out}
		defer func() {
			if op.led != nil {
				op.led.Close()
			}
		}()
		return run(op, args)
	}
}
