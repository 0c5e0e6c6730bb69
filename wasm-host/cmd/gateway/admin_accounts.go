package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"decisiongateway/shared/accounts"
	"decisiongateway/shared/keys"
	"decisiongateway/shared/settings"
	"decisiongateway/wasm-host/hostconfig"
	"decisiongateway/wasm-host/ledger"
)

// adminAccounts runs the account commands of the operator interface
// (ARCHITECTURE.md). Each prints what it did, and the one value automation
// needs (a session cookie, a key secret) alone on the last line.
//
//	admin session EMAIL        account (created if needed) verified, a session cookie NAME=VALUE
//	admin credits EMAIL N [--create]  grant N credits to an existing account;
//	                           with --create, an unknown address gets a new unverified account
//	admin key EMAIL [NAME]     like session, then an API key; its secret last
func adminAccounts(ctx context.Context, cfg *hostconfig.Config, led *ledger.Executor, out io.Writer, args []string) error {
	store := accounts.New(led.Bind(ctx))
	welcome := int64(settings.Read(cfg).WelcomeCredits)
	switch args[0] {
	case "session":
		if len(args) != 2 {
			return fmt.Errorf("usage: gateway admin session EMAIL")
		}
		v, secret, err := store.SignIn(args[1], welcome)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "account %s <%s> verified; welcome credits granted now: %d; balance: %d\n", v.ID, v.Email, v.Granted, v.Balance)
		fmt.Fprintf(out, "%s=%s\n", keys.SessionCookie, secret)
		return nil
	case "credits":
		create := slices.Contains(args, "--create")
		args = slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--create" })
		if len(args) != 3 {
			return fmt.Errorf("usage: gateway admin credits EMAIL N [--create]")
		}
		n, err := strconv.ParseInt(args[2], 10, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("credits: N must be a whole number ≥ 1, got %q", args[2])
		}
		// A mistyped address must not mint credits into a new account
		// nobody can use: creating one is asked for by name.
		var a accounts.Account
		if create {
			a, err = store.EnsureAccount(args[1])
		} else if a, err = store.Lookup(args[1]); errors.Is(err, accounts.ErrNoAccount) {
			return fmt.Errorf("credits: no account for %q; check the address, or add --create to open an unverified account with these credits", args[1])
		}
		if err != nil {
			return err
		}
		bal, err := store.Grant(a.ID, n)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "account %s <%s>: granted %d credits; balance: %d\n", a.ID, a.Email, n, bal)
		return nil
	case "key":
		if len(args) != 2 && len(args) != 3 {
			return fmt.Errorf("usage: gateway admin key EMAIL [NAME]")
		}
		name := "admin"
		if len(args) == 3 {
			name = args[2]
		}
		a, err := store.EnsureAccount(args[1])
		if err != nil {
			return err
		}
		v, err := store.Verify(a.ID, welcome)
		if err != nil {
			return err
		}
		k, secret, err := store.CreateKey(a.ID, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "account %s <%s> verified; welcome credits granted now: %d; balance: %d\n", v.ID, v.Email, v.Granted, v.Balance)
		fmt.Fprintf(out, "key %s %q prefix %s\n", k.ID, k.Name, k.Prefix)
		fmt.Fprintln(out, secret)
		return nil
	}
	return fmt.Errorf("unknown admin command %q", args[0])
}
