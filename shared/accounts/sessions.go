package accounts

import (
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/batch"
	"decisiongateway/shared/keys"
)

// Lifetimes and limits of the sign-in flow (schema/console.md).
const (
	// SessionTTL is how long a browser session lasts after sign-in.
	SessionTTL = 7 * 24 * 3600
	// SignInTTL is the lifetime of a sign-in link: long enough to switch to
	// a mail client, short enough that an old mail is worthless.
	SignInTTL = 15 * 60
	// SignInWindow is the fixed window of both sign-in limits.
	SignInWindow = 15 * 60
	// SignInsPerAddress bounds the mails one address receives per window,
	// so the form cannot be used to flood someone's inbox.
	SignInsPerAddress = 5
	// signInsPerIP bounds sign-in requests per hashed client address per
	// window, so one client cannot walk through many addresses.
	signInsPerIP = 30
)

// Session is a live browser session and the account it belongs to.
type Session struct {
	AccountID string
	Email     string
	ExpiresAt int64
}

// StartSession opens a session for the account and returns the cookie
// value: a keys.Session secret carrying the account id, of which only the
// hash is stored.
func (s *Store) StartSession(account string) (string, error) {
	secret := keys.New(keys.Session, account)
	now := s.now()
	if _, err := s.run(st("INSERT INTO sessions (token_hash, account_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
		str(keys.Hash(secret)), str(account), num(now), num(now+SessionTTL))); err != nil {
		return "", err
	}
	return secret, nil
}

// LookupSession returns the live session of a cookie value. A value that
// is not a well-formed session secret is refused without a ledger read;
// ok is false for an unknown, ended or expired session.
func (s *Store) LookupSession(secret string) (sess Session, ok bool, err error) {
	if _, valid := keys.Parse(keys.Session, secret); !valid {
		return Session{}, false, nil
	}
	res, err := s.run(st("SELECT s.account_id, a.email, s.expires_at FROM sessions s JOIN accounts a ON a.id = s.account_id WHERE s.token_hash = ? AND s.ended_at IS NULL AND s.expires_at > ?",
		str(keys.Hash(secret)), num(s.now())))
	if err != nil || len(res[0].Rows) == 0 {
		return Session{}, false, err
	}
	r := res[0].Rows[0]
	return Session{AccountID: r[0].AsString(), Email: r[1].AsString(), ExpiresAt: r[2].AsInt()}, true, nil
}

// EndSession ends a session server-side: its cookie stops working at once,
// even if a copy of it survives in some browser.
func (s *Store) EndSession(secret string) error {
	if _, valid := keys.Parse(keys.Session, secret); !valid {
		return nil
	}
	_, err := s.run(st("UPDATE sessions SET ended_at = ? WHERE token_hash = ? AND ended_at IS NULL",
		num(s.now()), str(keys.Hash(secret))))
	return err
}

// RequestSignIn issues a single-use sign-in link token for an address,
// counting the attempt against the per-address and per-client limits first.
// ipHash identifies the client (the caller hashes its address; the ledger
// never sees it in clear). No account is created here: an address becomes
// an account only when its link is opened, so requests for addresses that
// never sign in leave nothing behind but a token that expires.
//
// The account part of the token is random, because the address may have no
// account yet; the token row holds the address.
func (s *Store) RequestSignIn(email, ipHash string) (string, error) {
	e, err := NormalizeEmail(email)
	if err != nil {
		return "", err
	}
	now := s.now()
	w := batch.WindowAt(time.Unix(now, 0), SignInWindow*time.Second)
	ipScope := "signin-ip:" + ipHash
	addrScope := "signin-addr:" + keys.Hash(e)
	token := keys.New(keys.SignIn, keys.NewAccountID())
	var x batch.Builder
	x.Prune(ipScope, w)
	x.Prune(addrScope, w)
	// Every request reaches both counters; the link is issued only when
	// both are within their limits.
	ip := x.Count(ipScope, w, nil)
	addr := x.Count(addrScope, w, nil)
	ipIn, ipArgs := batch.Within(ipScope, w, signInsPerIP)
	addrIn, addrArgs := batch.Within(addrScope, w, SignInsPerAddress)
	x.Add("INSERT INTO signin_tokens (token_hash, email, created_at, expires_at) SELECT ?, ?, ?, ? WHERE "+ipIn+" AND "+addrIn, nil,
		append(append([]abi.Value{str(keys.Hash(token)), str(e), num(now), num(now + SignInTTL)}, ipArgs...), addrArgs...)...)
	// Expired links are useless; dropping them here keeps the table
	// small without a sweeper.
	x.Add("DELETE FROM signin_tokens WHERE expires_at < ?", nil, num(now-SignInTTL))
	res, err := x.Run(s.Ledger)
	if err != nil {
		return "", err
	}
	switch {
	case batch.Read(res, ip, signInsPerIP, w).Exceeded():
		return "", &RateLimited{Scope: "signin-ip", RetryAfter: w.End - now}
	case batch.Read(res, addr, SignInsPerAddress, w).Exceeded():
		return "", &RateLimited{Scope: "signin-address", RetryAfter: w.End - now}
	}
	return token, nil
}

// ConsumeSignIn uses a sign-in token: it succeeds once, within SignInTTL,
// and returns the address the link was sent to. One UPDATE … RETURNING
// both checks and spends the token, so two concurrent openings of one link
// cannot both succeed.
func (s *Store) ConsumeSignIn(token string) (email string, ok bool, err error) {
	if _, valid := keys.Parse(keys.SignIn, token); !valid {
		return "", false, nil
	}
	now := s.now()
	res, err := s.run(st("UPDATE signin_tokens SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ? RETURNING email",
		num(now), str(keys.Hash(token)), num(now)))
	if err != nil || len(res[0].Rows) == 0 {
		return "", false, err
	}
	return res[0].First().AsString(), true, nil
}

// SignIn completes a sign-in for an address whose ownership was just
// proven (an opened link, or an operator's `admin session`): it ensures the
// account, verifies it (granting welcome credits on the first
// verification) and opens a session.
func (s *Store) SignIn(email string, welcome int64) (Verification, string, error) {
	a, err := s.EnsureAccount(email)
	if err != nil {
		return Verification{}, "", err
	}
	v, err := s.Verify(a.ID, welcome)
	if err != nil {
		return Verification{}, "", err
	}
	secret, err := s.StartSession(a.ID)
	if err != nil {
		return Verification{}, "", err
	}
	return v, secret, nil
}
