package ledgerq

import (
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/batch"
	"decisiongateway/shared/keys"
	"decisiongateway/shared/platform"
)

// Principal is who a request claims to be.
type Principal struct {
	AccountID string
	// KeyHash is the hash of the API key used; "" when the caller was
	// authenticated otherwise (a session, for the playground).
	KeyHash string
	// IPHash is the hashed client address, the scope of the auth counter.
	IPHash string
	// AuthLimit is the attempts allowed per IPHash per minute
	// (SERVICE_AUTH_RATE_LIMIT, checked ≥ 1 by the host).
	AuthLimit int
}

// Auth is the outcome of the authentication steps.
type Auth struct {
	// RateLimited: too many attempts from this client address.
	RateLimited bool
	// OK: the key is live and belongs to the account (or, without a key,
	// the account exists).
	OK     bool
	Window batch.Window
	// Count is the address's attempts in the window, this one included
	// (a decision's reservation reads it; 0 where unknown).
	Count int64
}

// authSteps are the steps of a batch that authenticate its caller.
type authSteps struct {
	count int   // the address's attempt count; -1 without a key
	limit int64 // the address's limit
	// ok is, with a key, the UPDATE that records the key's use: it changes
	// a row exactly when the key is live, belongs to the account and the
	// address is within its limit. Without a key it is a SELECT that finds
	// the account.
	ok int
}

// auth appends the authentication steps and returns the conditions under
// which the caller is authenticated.
func auth(x *batch.Builder, p *Principal, now time.Time) ([]abi.Cond, authSteps) {
	if p.KeyHash == "" {
		found := x.Add(`SELECT 1 FROM accounts WHERE id = ?`, nil, str(p.AccountID))
		return []abi.Cond{truthy(found)}, authSteps{count: -1, ok: found}
	}
	limit := p.AuthLimit
	scope, w := "auth:"+p.IPHash, batch.WindowAt(now, time.Minute)
	count := x.Count(scope, w, nil)
	inLimit, args := batch.Within(scope, w, limit)
	// Checking the key and recording its use is one statement: the UPDATE
	// changes the key's row only when the SELECT that used to come first
	// would have found it, and only while the address is within its limit.
	ok := x.Add(`UPDATE api_keys SET last_used_at = ?
WHERE secret_hash = ? AND account_id = ? AND revoked_at IS NULL AND `+inLimit, nil,
		append([]abi.Value{num(now.Unix()), str(p.KeyHash), str(p.AccountID)}, args...)...)
	return []abi.Cond{affected(ok)}, authSteps{count: count, limit: int64(limit), ok: ok}
}

func readAuth(res []abi.StepResult, a authSteps, now time.Time) Auth {
	out := Auth{Window: batch.WindowAt(now, time.Minute)}
	if a.count < 0 {
		out.OK = res[a.ok].First().Truthy()
		return out
	}
	out.RateLimited = res[a.count].First().AsInt() > a.limit
	out.OK = res[a.ok].RowsAffected > 0
	return out
}

// AuthorizeKey authenticates an API key and counts one attempt on the
// account's counter named scope (e.g. "models") in one batch. The counter is
// only touched when the key is valid.
func AuthorizeKey(l platform.Ledger, p *Principal, scope string, limit int, now time.Time) (Auth, batch.Rate, error) {
	var x batch.Builder
	authed, as := auth(&x, p, now)
	w := batch.WindowAt(now, time.Minute)
	count := x.Count(scope+":"+p.AccountID, w, authed)
	res, err := x.Run(l)
	if err != nil {
		return Auth{}, batch.Rate{}, err
	}
	return readAuth(res, as, now), batch.Read(res, count, limit, w), nil
}

// CountRefusedKey counts a request whose key was refused without a lookup
// (malformed, wrong scheme) as an authentication attempt of its client
// address all the same (spec §8), so guessing malformed keys cannot go
// around the per-address limit. A request with no Authorization header
// made no attempt. It reports whether the address is over its limit; a
// ledger that cannot count leaves the refusal as it was.
func CountRefusedKey(l platform.Ledger, req *abi.Request, limit int, now time.Time) (Auth, bool) {
	if !req.Headers.Has("authorization") {
		return Auth{}, false
	}
	var x batch.Builder
	w := batch.WindowAt(now, time.Minute)
	count := x.Count("auth:"+keys.HashClient(req.ClientAddr), w, nil)
	res, err := x.Run(l)
	if err != nil {
		return Auth{}, false
	}
	a := Auth{Window: w, RateLimited: batch.Read(res, count, limit, w).Exceeded()}
	return a, a.RateLimited
}
