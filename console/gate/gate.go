// Package gate is the console's web gate, the guest-side half of the
// console: what every session route (keys, usage, playground, sign-in)
// checks before it works (no Authorization header, an exact Origin on
// writes, a live session cookie), the session cookie itself, and the one
// mapping of account errors to the console's platform errors. It lives
// with the console, not with the account batches (shared/accounts), so
// the ledger client stays a ledger client; and apart from the console's
// static assets (package console), which only the host serves, so a
// function module links none of net/http.
package gate

import (
	"errors"
	"strconv"
	"strings"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/accounts"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/keys"
	"decisiongateway/shared/platform"
	"decisiongateway/shared/policy"
	"decisiongateway/shared/settings"
	"github.com/valyala/fastjson"
)

// Gate is what a console route needs to know before it does its work.
type Gate struct {
	Settings settings.Settings
	Store    *accounts.Store
	Session  accounts.Session
}

// Check authorises a console request (spec §5): it refuses any
// Authorization header (an API key never substitutes for a session, and a
// client that sends one should hear so rather than be treated as signed
// out), requires for writes an Origin header exactly equal to
// SERVICE_ORIGIN (a cross-site form or script cannot forge it, and an exact
// compare leaves no prefix or suffix tricks), then looks up the session
// cookie. ok is false when resp is the answer to send.
func Check(env *platform.Env, req *abi.Request, write bool) (g Gate, resp abi.Response, ok bool) {
	g.Settings = settings.Read(env.Config)
	g.Store = accounts.New(env.Ledger)
	if req.Headers.Has("authorization") {
		return g, policy.Error(contract.BearerNotAccepted, "this endpoint takes a signed-in browser session; an Authorization header (API key) is not accepted here"), false
	}
	if write {
		if r, ok := CheckOrigin(&g.Settings, req); !ok {
			return g, r, false
		}
	}
	secret := SessionCookieValue(req)
	if secret == "" {
		return g, policy.Error(contract.SessionRequired, "sign in first: no session cookie was sent"), false
	}
	sess, found, err := g.Store.LookupSession(secret)
	if err != nil {
		return g, Failure(err), false
	}
	if !found {
		return g, policy.Error(contract.SessionRequired, "the session has ended or expired; sign in again"), false
	}
	g.Session = sess
	return g, abi.Response{}, true
}

// CheckOrigin requires exactly one Origin header equal to SERVICE_ORIGIN.
func CheckOrigin(s *settings.Settings, req *abi.Request) (abi.Response, bool) {
	var origin string
	n := 0
	for _, h := range req.Headers {
		if h.Name == "origin" {
			origin = h.Value
			n++
		}
	}
	want := strings.TrimSuffix(s.Origin, "/")
	switch {
	case n == 0:
		return policy.Error(contract.OriginNotAllowed, "this request changes state and must carry an Origin header equal to "+want), false
	case n > 1 || origin != want:
		return policy.Error(contract.OriginNotAllowed, "the Origin header must be exactly "+want), false
	}
	return abi.Response{}, true
}

// SessionCookieValue returns the dg_session cookie of a request ("" when
// absent). Several Cookie header fields are joined first, as HTTP/2 may
// split them.
func SessionCookieValue(req *abi.Request) string {
	var all string
	for _, h := range req.Headers {
		if h.Name == "cookie" {
			if all != "" {
				all += "; "
			}
			all += h.Value
		}
	}
	return keys.Cookie(all, keys.SessionCookie)
}

// SessionSetCookie is the Set-Cookie value that installs a session:
// HttpOnly (no script can read it), SameSite=Lax (not sent on cross-site
// subrequests or form posts), Secure when the console is served over
// https, scoped to the whole origin because the console and its API share
// it.
func SessionSetCookie(s *settings.Settings, secret string) string {
	return cookie(s, secret, accounts.SessionTTL)
}

// ClearSessionCookie is the Set-Cookie value that removes the cookie.
func ClearSessionCookie(s *settings.Settings) string { return cookie(s, "", 0) }

func cookie(s *settings.Settings, value string, maxAge int64) string {
	c := keys.SessionCookie + "=" + value + "; Path=/; Max-Age=" + strconv.FormatInt(maxAge, 10) + "; HttpOnly; SameSite=Lax"
	if strings.HasPrefix(s.Origin, "https://") {
		c += "; Secure"
	}
	return c
}

// ClientHash is the stored identity of a request's client address for rate
// limits (keys.HashClient, shared with the API authentication counter).
func ClientHash(req *abi.Request) string { return keys.HashClient(req.ClientAddr) }

// StringField reads one string member of a small JSON object body (the
// console's {"name":…} and {"email":…}). ok is false when the body is not
// an object or the member is absent or not a string.
func StringField(body []byte, name string) (string, bool) {
	var p fastjson.Parser
	v, err := p.ParseBytes(body)
	if err != nil || v.Type() != fastjson.TypeObject {
		return "", false
	}
	f := v.Get(name)
	if f == nil || f.Type() != fastjson.TypeString {
		return "", false
	}
	b, _ := f.StringBytes()
	return string(b), true
}

// Failure maps an error of this package to its platform error.
func Failure(err error) abi.Response {
	var rl *accounts.RateLimited
	switch {
	case errors.As(err, &rl):
		code := contract.SigninRateLimited
		msg := "too many sign-in requests; wait before asking for another link"
		if rl.Scope == "keycreate" {
			code, msg = contract.KeyCreationRateLimited, "at most 10 keys can be created per minute"
		}
		r := policy.Error(code, msg)
		r.Headers.Set(policy.HRetryAfter, strconv.FormatInt(max(rl.RetryAfter, 1), 10))
		return r
	case errors.Is(err, accounts.ErrInvalidEmail):
		return policy.Error(contract.InvalidEmail, "send {\"email\": <address>} with a valid e-mail address")
	case errors.Is(err, accounts.ErrInvalidName):
		return policy.Error(contract.InvalidKeyName, "the key name must be 1 to 64 characters with a non-space character and no control character")
	case errors.Is(err, accounts.ErrKeyLimit):
		return policy.Error(contract.KeyLimitReached, "an account can have at most 20 active keys; revoke one first")
	case errors.Is(err, accounts.ErrKeyNotFound):
		return policy.Error(contract.KeyNotFound, "no active key with this id belongs to the signed-in account")
	}
	r := policy.Error(contract.LedgerUnavailable, "the ledger could not be reached; nothing was changed, try again")
	r.Headers.Set(policy.HRetryAfter, "1")
	return r
}
