package accounts_test

import (
	"errors"
	"strings"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/accounts"
	"decisiongateway/shared/keys"
	"decisiongateway/shared/keys/keystest"
	"decisiongateway/wasm-host/ledger"
)

// Lifetimes need a clock the test controls, which the end-to-end tests of
// the functions cannot have; these run the same batches natively.

func TestSignInLinkLivesFifteenMinutesAndWorksOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *accounts.Store, c *clock, e *ledger.Executor) {
		late, err := s.RequestSignIn("Late@Example.com", "client-a")
		if err != nil {
			t.Fatal(err)
		}
		c.t += accounts.SignInTTL // expired at exactly its lifetime
		if _, ok, err := s.ConsumeSignIn(late); ok || err != nil {
			t.Fatalf("expired link accepted: %v %v", ok, err)
		}
		token, _ := s.RequestSignIn("late@example.com", "client-a")
		c.t += accounts.SignInTTL - 1
		if email, ok, err := s.ConsumeSignIn(token); !ok || err != nil || email != "late@example.com" {
			t.Fatalf("fresh link: %q %v %v", email, ok, err)
		}
		if _, ok, _ := s.ConsumeSignIn(token); ok {
			t.Fatal("link used twice")
		}
		// Expired tokens are dropped by later requests.
		c.t += 2 * accounts.SignInTTL
		s.RequestSignIn("other@example.com", "client-b")
		if n := query(t, e, "SELECT COUNT(*) FROM signin_tokens WHERE email = 'late@example.com'")[0][0].AsInt(); n != 0 {
			t.Fatalf("%d stale tokens kept", n)
		}
	})
}

func TestSignInLimitsResetWithTheWindow(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *accounts.Store, c *clock, e *ledger.Executor) {
		c.t -= c.t % accounts.SignInWindow
		for i := 0; i < accounts.SignInsPerAddress; i++ {
			if _, err := s.RequestSignIn("a@example.com", "client"); err != nil {
				t.Fatal(err)
			}
		}
		c.t += 100
		var rl *accounts.RateLimited
		if _, err := s.RequestSignIn("a@example.com", "client"); !errors.As(err, &rl) || rl.Scope != "signin-address" || rl.RetryAfter != accounts.SignInWindow-100 {
			t.Fatalf("6th for one address: %v", err)
		}
		// Another client is limited by the address all the same.
		if _, err := s.RequestSignIn("a@example.com", "elsewhere"); !errors.As(err, &rl) {
			t.Fatalf("another client: %v", err)
		}
		c.t += accounts.SignInWindow
		if _, err := s.RequestSignIn("a@example.com", "client"); err != nil {
			t.Fatalf("next window: %v", err)
		}
		if n := query(t, e, "SELECT COUNT(*) FROM rate_windows WHERE scope LIKE 'signin-addr:%'")[0][0].AsInt(); n != 1 {
			t.Fatalf("%d address windows kept", n)
		}
		for _, row := range query(t, e, "SELECT scope FROM rate_windows") {
			if strings.Contains(row[0].AsString(), "@") {
				t.Fatalf("scope %q holds the address", row[0].AsString())
			}
		}
	})
}

func TestSessionsExpireAndEnd(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *accounts.Store, c *clock, e *ledger.Executor) {
		v, secret, err := s.SignIn("sess@example.com", 10)
		if err != nil || v.Granted != 10 {
			t.Fatal(v, err)
		}
		if acct, ok := keys.Parse(keys.Session, secret); !ok || acct != v.ID {
			t.Fatalf("session secret %q", secret)
		}
		if n := query(t, e, "SELECT COUNT(*) FROM sessions WHERE token_hash = ?", abi.String(keys.Hash(secret)))[0][0].AsInt(); n != 1 {
			t.Fatal("session not stored by hash")
		}
		if sess, ok, err := s.LookupSession(secret); !ok || err != nil || sess.AccountID != v.ID || sess.Email != "sess@example.com" {
			t.Fatalf("lookup: %+v %v %v", sess, ok, err)
		}
		c.t += accounts.SessionTTL
		if _, ok, _ := s.LookupSession(secret); ok {
			t.Fatal("session outlived its lifetime")
		}
		c.t -= accounts.SessionTTL
		other, _ := s.StartSession(v.ID)
		if err := s.EndSession(other); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := s.LookupSession(other); ok {
			t.Fatal("ended session still valid")
		}
		if _, ok, _ := s.LookupSession(secret); !ok {
			t.Fatal("ending one session ended another")
		}
		for _, bad := range []string{"", "dgs_x", strings.Replace(secret, "dgs_", "dgk_", 1), keystest.BadChecksum(secret)} {
			if _, ok, err := s.LookupSession(bad); ok || err != nil {
				t.Errorf("%q: %v %v", bad, ok, err)
			}
		}
	})
}
