package ledgerq

import (
	"time"

	"decisiongateway/shared/abi"
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
	// AuthLimit is the attempts allowed per IPHash per minute; 0 means the
	// spec's 600 (§8).
	AuthLimit int
}

// DefaultAuthLimit is spec §8's authentication attempts per hashed client
// IP per minute.
const DefaultAuthLimit = 600

// Auth is the outcome of the authentication steps.
type Auth struct {
	// RateLimited: too many attempts from this client address.
	RateLimited bool
	// OK: the key is live and belongs to the account (or, without a key,
	// the account exists).
	OK     bool
	Window Window
}

// authSteps appends the authentication steps and returns the conditions
// under which the caller is authenticated.
func (x *builder) auth(p *Principal, now time.Time) (when []abi.Cond, rateOK, found int) {
	if p.KeyHash == "" {
		found = x.add(`SELECT 1 FROM accounts WHERE id = ?`, nil, str(p.AccountID))
		return []abi.Cond{truthy(found)}, -1, found
	}
	limit := p.AuthLimit
	if limit == 0 {
		limit = DefaultAuthLimit
	}
	_, rateOK = x.rate("auth:"+p.IPHash, WindowAt(now, time.Minute), limit, nil)
	found = x.add(`SELECT 1 FROM api_keys WHERE secret_hash = ? AND account_id = ? AND revoked_at IS NULL`,
		[]abi.Cond{truthy(rateOK)}, str(p.KeyHash), str(p.AccountID))
	x.add(`UPDATE api_keys SET last_used_at = ? WHERE secret_hash = ?`, []abi.Cond{truthy(found)}, num(now.Unix()), str(p.KeyHash))
	return []abi.Cond{truthy(rateOK), truthy(found)}, rateOK, found
}

func readAuth(res *abi.BatchResult, rateOK, found int, now time.Time) Auth {
	a := Auth{Window: WindowAt(now, time.Minute), OK: res.Steps[found].First().Truthy()}
	if rateOK >= 0 {
		a.RateLimited = !res.Steps[rateOK].First().Truthy()
	}
	return a
}

// AuthorizeKey authenticates an API key and counts one attempt on the
// account's counter named scope (e.g. "models") in one batch. The counter is
// only touched when the key is valid.
func AuthorizeKey(l platform.Ledger, p *Principal, scope string, limit int, now time.Time) (Auth, Rate, error) {
	var x builder
	when, rateOK, found := x.auth(p, now)
	w := WindowAt(now, time.Minute)
	count, _ := x.rate(scope+":"+p.AccountID, w, limit, when)
	res, err := exec(l, &x)
	if err != nil {
		return Auth{}, Rate{}, err
	}
	a := readAuth(&res, rateOK, found, now)
	return a, Rate{Limit: int64(limit), Count: res.Steps[count].First().AsInt(), Window: w}, nil
}

// CountAttempt counts one authentication attempt from a client address that
// presented a key the platform could refuse without a lookup (malformed,
// wrong scheme): it is an attempt all the same (spec §8), so guessing
// malformed keys cannot go around the per-address limit. It reports whether
// the address is over its limit.
func CountAttempt(l platform.Ledger, ipHash string, limit int, now time.Time) (Auth, error) {
	if limit == 0 {
		limit = DefaultAuthLimit
	}
	var x builder
	w := WindowAt(now, time.Minute)
	_, ok := x.rate("auth:"+ipHash, w, limit, nil)
	res, err := exec(l, &x)
	if err != nil {
		return Auth{}, err
	}
	return Auth{Window: w, RateLimited: !res.Steps[ok].First().Truthy()}, nil
}
