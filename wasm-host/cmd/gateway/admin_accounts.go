package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"decisiongateway/shared/accounts"
	"decisiongateway/shared/keys"
	"decisiongateway/shared/settings"
)

// The account commands of the operator interface (ARCHITECTURE.md) change
// accounts through shared/accounts, the batches the functions run, so an
// operator's grant or revocation keeps the same invariants (balance = Σ
// entries, secrets stored hashed). Each prints what it did, and the one
// value automation needs (a session cookie, a key secret) alone on the
// last line.

func (op *operator) store() *accounts.Store { return accounts.New(op.led.Bind(op.ctx)) }

func (op *operator) welcome() int64 { return int64(settings.Read(op.cfg).WelcomeCredits) }

// adminSession is `admin session EMAIL`.
func adminSession(op *operator, args []string) error {
	if len(args) != 1 {
		return wrong("admin session takes one EMAIL, got %q", args)
	}
	if err := op.open(); err != nil {
		return err
	}
	v, secret, err := op.store().SignIn(args[0], op.welcome())
	if err != nil {
		return err
	}
	fmt.Fprintf(op.out, "account %s <%s> verified; welcome credits granted now: %d; balance: %d\n", v.ID, v.Email, v.Granted, v.Balance)
	fmt.Fprintf(op.out, "%s=%s\n", keys.SessionCookie, secret)
	return nil
}

// adminKey is `admin key EMAIL [NAME]`.
func adminKey(op *operator, args []string) error {
	if len(args) != 1 && len(args) != 2 {
		return wrong("admin key takes EMAIL and an optional NAME, got %q", args)
	}
	name := "admin"
	if len(args) == 2 {
		name = args[1]
	}
	// Checked before anything is written: a refused name must not leave a
	// new, verified account with its welcome credits behind.
	if _, err := accounts.CheckKeyName(name); err != nil {
		return wrong("admin key: %v", err)
	}
	if err := op.open(); err != nil {
		return err
	}
	store := op.store()
	a, err := store.EnsureAccount(args[0])
	if err != nil {
		return err
	}
	v, err := store.Verify(a.ID, op.welcome())
	if err != nil {
		return err
	}
	k, secret, err := store.CreateKey(a.ID, name)
	if err != nil {
		return err
	}
	fmt.Fprintf(op.out, "account %s <%s> verified; welcome credits granted now: %d; balance: %d\n", v.ID, v.Email, v.Granted, v.Balance)
	fmt.Fprintf(op.out, "key %s %q prefix %s\n", k.ID, k.Name, k.Prefix)
	fmt.Fprintln(op.out, secret)
	return nil
}

// grantCredits is `admin credits EMAIL|ACCOUNT_ID N [--create]`: one grant
// entry and the same balance change, in one batch.
func grantCredits(op *operator, args []string) error {
	pos, flags, err := parseFlags(args, []string{"create"})
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return wrong("admin credits takes an account and N, got %q", pos)
	}
	n, err := strconv.ParseInt(pos[1], 10, 64)
	if err != nil || n <= 0 || n > accounts.MaxGrant {
		return wrong("credits: N must be a whole number from 1 to %d, got %q", int64(accounts.MaxGrant), pos[1])
	}
	if err := notASecret(pos[0]); err != nil {
		return err
	}
	if err := op.open(); err != nil {
		return err
	}
	store := op.store()
	// A mistyped address must not mint credits into a new account nobody
	// can use: creating one is asked for by name.
	var a accounts.Account
	if _, create := flags["create"]; create && strings.Contains(pos[0], "@") {
		a, err = store.EnsureAccount(pos[0])
	} else if a, err = op.account(pos[0]); errors.Is(err, accounts.ErrNoAccount) {
		return fmt.Errorf("credits: no account for %q; check the address, or add --create to open an unverified account with these credits", pos[0])
	}
	if err != nil {
		return err
	}
	bal, err := store.Grant(a.ID, n)
	if err != nil {
		return err
	}
	fmt.Fprintf(op.out, "account %s <%s>: granted %d credits; balance: %d\n", a.ID, a.Email, n, bal)
	return nil
}

// account finds an account by e-mail address or by id.
func (op *operator) account(ref string) (accounts.Account, error) {
	if strings.Contains(ref, "@") {
		return op.store().Lookup(ref)
	}
	return op.store().Get(ref)
}

// parseFlags separates --name flags, which may come anywhere, from
// positional arguments. Flags named in bools take no value; the others
// take one (--name VALUE or --name=VALUE). Any other flag is a usage
// error.
func parseFlags(args []string, bools []string, values ...string) ([]string, map[string]string, error) {
	var pos []string
	flags := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") || a == "--" {
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(a[2:], "=")
		switch {
		case contains(bools, name):
			if hasValue {
				return nil, nil, wrong("flag --%s takes no value", name)
			}
		case contains(values, name):
			if !hasValue {
				if i+1 >= len(args) {
					return nil, nil, wrong("flag --%s needs a value", name)
				}
				i++
				value = args[i]
			}
		default:
			return nil, nil, wrong("unknown flag --%s", name)
		}
		flags[name] = value
	}
	return pos, flags, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
