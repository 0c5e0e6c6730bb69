package accounts_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/accounts"
	"decisiongateway/shared/keys"
	"decisiongateway/testkit/sqldtest"
	"decisiongateway/wasm-host/ledger"
)

// The batches run on the host's real executor against both backends: an
// embedded file and a real sqld.

type clock struct{ t int64 }

func (c *clock) now() int64 { return c.t }

func eachBackend(t *testing.T, f func(t *testing.T, s *accounts.Store, c *clock, e *ledger.Executor)) {
	for _, b := range sqldtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			e := openLedger(t, b.URL)
			c := &clock{t: 1_800_000_000}
			s := &accounts.Store{Ledger: e.Bind(context.Background()), Now: c.now}
			f(t, s, c, e)
			checkInvariant(t, e)
		})
	}
}

func openLedger(t *testing.T, url string) *ledger.Executor {
	t.Helper()
	ctx := context.Background()
	e, err := ledger.OpenWith(ctx, url, "", ledger.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if err := e.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

func query(t *testing.T, e *ledger.Executor, sql string, args ...abi.Value) [][]abi.Value {
	t.Helper()
	res := e.Exec(context.Background(), &abi.Batch{Steps: []abi.Statement{{SQL: sql, Args: args}}})
	if res.Err != "" {
		t.Fatal(res.Err)
	}
	return res.Steps[0].Rows
}

// checkInvariant: for every account, balance equals the sum of its credit
// entries and is not negative.
func checkInvariant(t *testing.T, e *ledger.Executor) {
	t.Helper()
	rows := query(t, e, `SELECT a.id, a.balance, COALESCE((SELECT SUM(delta) FROM credit_entries c WHERE c.account_id = a.id), 0) FROM accounts a`)
	for _, r := range rows {
		if r[1].AsInt() != r[2].AsInt() || r[1].AsInt() < 0 {
			t.Errorf("account %s: balance %d, entries sum %d", r[0].AsString(), r[1].AsInt(), r[2].AsInt())
		}
	}
}

func TestEnsureAccountIsIdempotentAndNormalisesEmail(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *accounts.Store, c *clock, e *ledger.Executor) {
		a, err := s.EnsureAccount("  Ada@Example.COM ")
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.EnsureAccount("ada@example.com")
		if err != nil {
			t.Fatal(err)
		}
		if a.ID != b.ID || a.Email != "ada@example.com" || a.VerifiedAt != 0 || a.Balance != 0 || len(a.ID) != 12 {
			t.Fatalf("got %+v and %+v", a, b)
		}
		for _, bad := range []string{"", "ada", "@example.com", "ada@", "ada@example", "a b@example.com", "a@b@example.com", "ada@example..com", "<a>@example.com"} {
			if _, err := s.EnsureAccount(bad); !errors.Is(err, accounts.ErrInvalidEmail) {
				t.Errorf("%q: %v", bad, err)
			}
		}
	})
}

func TestVerifyGrantsWelcomeOnceUnderConcurrency(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *accounts.Store, c *clock, e *ledger.Executor) {
		a, err := s.EnsureAccount("grace@example.com")
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			granted int64
		)
		for i := 0; i < 16; i++ {
			wg.Go(func() {
				v, err := s.Verify(a.ID, 100)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				granted += v.Granted
				mu.Unlock()
			})
		}
		wg.Wait()
		if granted != 100 {
			t.Fatalf("granted %d in total, want 100 once", granted)
		}
		got, err := s.Get(a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Balance != 100 || got.VerifiedAt != c.t {
			t.Fatalf("account %+v", got)
		}
		if n := query(t, e, "SELECT COUNT(*) FROM credit_entries WHERE account_id = ? AND kind = 'welcome'", abi.String(a.ID))[0][0].AsInt(); n != 1 {
			t.Fatalf("%d welcome entries", n)
		}
		// More keys grant nothing more.
		if _, _, err := s.CreateKey(a.ID, "second"); err != nil {
			t.Fatal(err)
		}
		if v, _ := s.Verify(a.ID, 100); v.Granted != 0 || v.Balance != 100 {
			t.Fatalf("second verification %+v", v)
		}
	})
}

func TestVerifyWithWelcomeDisabledGrantsNothingLater(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *accounts.Store, c *clock, e *ledger.Executor) {
		a, _ := s.EnsureAccount("hopper@example.com")
		if v, err := s.Verify(a.ID, 0); err != nil || v.Granted != 0 || v.VerifiedAt == 0 {
			t.Fatalf("%+v %v", v, err)
		}
		if v, _ := s.Verify(a.ID, 100); v.Granted != 0 || v.Balance != 0 {
			t.Fatalf("%+v", v)
		}
		if _, err := s.Verify("nosuchaccount", 100); !errors.Is(err, accounts.ErrNoAccount) {
			t.Fatal(err)
		}
	})
}

func TestGrantAddsEntryAndBalance(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *accounts.Store, c *clock, e *ledger.Executor) {
		a, _ := s.EnsureAccount("lin@example.com")
		if bal, err := s.Grant(a.ID, 40); err != nil || bal != 40 {
			t.Fatal(bal, err)
		}
		if bal, err := s.Grant(a.ID, 2); err != nil || bal != 42 {
			t.Fatal(bal, err)
		}
		if _, err := s.Grant(a.ID, 0); !errors.Is(err, accounts.ErrInvalidGrant) {
			t.Fatal(err)
		}
		if _, err := s.Grant("nosuchaccount", 5); !errors.Is(err, accounts.ErrNoAccount) {
			t.Fatal(err)
		}
		// Bounded: no grant over MaxGrant, no balance past MaxBalance, so the
		// balance stays a 64-bit integer equal to the sum of its entries.
		if _, err := s.Grant(a.ID, accounts.MaxGrant+1); !errors.Is(err, accounts.ErrInvalidGrant) {
			t.Fatal(err)
		}
		query(t, e, "INSERT INTO credit_entries (account_id, delta, kind, created_at) VALUES (?, ?, 'grant', 0)", abi.String(a.ID), abi.Int64(accounts.MaxBalance-42-10))
		query(t, e, "UPDATE accounts SET balance = ? WHERE id = ?", abi.Int64(accounts.MaxBalance-10), abi.String(a.ID))
		if _, err := s.Grant(a.ID, 11); !errors.Is(err, accounts.ErrBalanceLimit) {
			t.Fatalf("a grant past MaxBalance: %v", err)
		}
		if bal, err := s.Grant(a.ID, 10); err != nil || bal != accounts.MaxBalance {
			t.Fatalf("a grant up to MaxBalance: %d %v", bal, err)
		}
		checkInvariant(t, e)
	})
}

func TestCreateKeyLimits(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *accounts.Store, c *clock, e *ledger.Executor) {
		a, _ := s.EnsureAccount("keys@example.com")
		c.t -= c.t % 60 // start of a minute
		created := 0
		for i := 0; i < accounts.KeyCreatesPerMin; i++ {
			k, secret, err := s.CreateKey(a.ID, "k"+strconv.Itoa(i))
			if err != nil {
				t.Fatal(err)
			}
			created++
			if acct, ok := keys.Parse(keys.APIKey, secret); !ok || acct != a.ID || k.Prefix != keys.DisplayPrefix(secret) {
				t.Fatalf("key %+v secret %q", k, secret)
			}
			if n := query(t, e, "SELECT COUNT(*) FROM api_keys WHERE secret_hash = ?", abi.String(keys.Hash(secret)))[0][0].AsInt(); n != 1 {
				t.Fatal("secret hash not stored")
			}
		}
		c.t += 59
		var rl *accounts.RateLimited
		if _, _, err := s.CreateKey(a.ID, "eleventh"); !errors.As(err, &rl) || rl.RetryAfter != 1 {
			t.Fatalf("11th creation in a minute: %v", err)
		}
		c.t++ // the next minute
		for created < accounts.MaxActiveKeys {
			if _, _, err := s.CreateKey(a.ID, "more"); err != nil {
				if errors.As(err, &rl) {
					c.t += 60
					continue
				}
				t.Fatal(err)
			}
			created++
		}
		c.t += 60
		if _, _, err := s.CreateKey(a.ID, "21st"); !errors.Is(err, accounts.ErrKeyLimit) {
			t.Fatalf("21st active key: %v", err)
		}
		list, err := s.ListKeys(a.ID)
		if err != nil || len(list) != accounts.MaxActiveKeys {
			t.Fatal(len(list), err)
		}
		if err := s.RevokeKey(a.ID, list[0].ID); err != nil {
			t.Fatal(err)
		}
		if err := s.RevokeKey(a.ID, list[0].ID); !errors.Is(err, accounts.ErrKeyNotFound) {
			t.Fatalf("second revoke: %v", err)
		}
		if _, _, err := s.CreateKey(a.ID, "after revoke"); err != nil {
			t.Fatalf("creation after a revocation: %v", err)
		}
		// Another account cannot revoke (or learn about) this account's key.
		b, _ := s.EnsureAccount("other@example.com")
		if err := s.RevokeKey(b.ID, list[1].ID); !errors.Is(err, accounts.ErrKeyNotFound) {
			t.Fatalf("revoke by another account: %v", err)
		}
		// Only the current window of the scope is kept.
		if n := query(t, e, "SELECT COUNT(*) FROM rate_windows WHERE scope = ?", abi.String("keycreate:"+a.ID))[0][0].AsInt(); n != 1 {
			t.Fatalf("%d windows kept", n)
		}
	})
}

func TestKeyNames(t *testing.T) {
	for _, bad := range []string{"", "   ", "a\nb", string(make([]byte, 65)), strings.Repeat("n", 65)} {
		if _, err := accounts.CheckKeyName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if n, err := accounts.CheckKeyName("  CI runner · prod "); err != nil || n != "CI runner · prod" {
		t.Fatal(n, err)
	}
}
