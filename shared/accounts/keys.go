package accounts

import (
	"strings"
	"time"
	"unicode/utf8"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/batch"
	"decisiongateway/shared/keys"
)

// Key limits of spec §3.2 and §5 rule 3.
const (
	MaxActiveKeys      = 20
	KeyCreatesPerMin   = 10
	keyCreateWindow    = time.Minute
	maxKeyNameChars    = 64
	keyCreateScopeHead = "keycreate:"
)

// Key is an API key's metadata; the secret itself is never stored.
type Key struct {
	ID         string
	Name       string
	Prefix     string // keys.DisplayPrefix of the secret: what listings show
	CreatedAt  int64
	LastUsedAt int64 // 0 when never used
}

// CheckKeyName trims a key name and checks it: 1 to 64 characters (code
// points), at least one non-space, no control characters.
func CheckKeyName(raw string) (string, error) {
	name := strings.TrimSpace(raw)
	if name == "" || !utf8.ValidString(name) || utf8.RuneCountInString(name) > maxKeyNameChars {
		return "", ErrInvalidName
	}
	for _, r := range name {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			return "", ErrInvalidName
		}
	}
	return name, nil
}

// CreateKey issues a new API key for the account and returns its metadata
// and its secret, which exists nowhere else afterwards. It refuses with
// ErrKeyLimit when the account has MaxActiveKeys active keys, and with a
// *RateLimited when KeyCreatesPerMin keys were already created in the
// current minute (scope "keycreate:<account>" in rate_windows, shared by
// every host on the ledger, counted by shared/batch's rate rule). A
// creation refused for the key limit does not reach the counter; one
// refused for the rate does, as every attempt that reaches it.
func (s *Store) CreateKey(account, name string) (Key, string, error) {
	name, err := CheckKeyName(name)
	if err != nil {
		return Key{}, "", err
	}
	now := s.now()
	w := batch.WindowAt(time.Unix(now, 0), keyCreateWindow)
	scope := keyCreateScopeHead + account
	secret := keys.New(keys.APIKey, account)
	k := Key{ID: keys.NewID("key_"), Name: name, Prefix: keys.DisplayPrefix(secret), CreatedAt: now}
	var x batch.Builder
	x.Prune(scope, w)
	room := x.Add("SELECT COUNT(*) < ? FROM api_keys WHERE account_id = ? AND revoked_at IS NULL", nil, num(MaxActiveKeys), str(account))
	// Only a creation the account has room for reaches the counter.
	hasRoom := []abi.Cond{batch.Truthy(room)}
	count := x.Count(scope, w, hasRoom)
	inLimit, limitArgs := batch.Within(scope, w, KeyCreatesPerMin)
	x.Add("INSERT INTO api_keys (id, account_id, name, prefix, secret_hash, created_at) SELECT ?, ?, ?, ?, ?, ? WHERE "+inLimit, hasRoom,
		append([]abi.Value{str(k.ID), str(account), str(k.Name), str(k.Prefix), str(keys.Hash(secret)), num(now)}, limitArgs...)...)
	res, err := x.Run(s.Ledger)
	if err != nil {
		return Key{}, "", err
	}
	switch {
	case !res[room].First().Truthy():
		return Key{}, "", ErrKeyLimit
	case batch.Read(res, count, KeyCreatesPerMin, w).Exceeded():
		return Key{}, "", &RateLimited{Scope: "keycreate", RetryAfter: w.End - now}
	}
	return k, secret, nil
}

// ListKeys returns the account's active keys, newest first. Revoked keys
// are not listed: they can never authenticate again.
func (s *Store) ListKeys(account string) ([]Key, error) {
	res, err := s.run(st("SELECT id, name, prefix, created_at, COALESCE(last_used_at, 0) FROM api_keys WHERE account_id = ? AND revoked_at IS NULL ORDER BY created_at DESC, id",
		str(account)))
	if err != nil {
		return nil, err
	}
	out := make([]Key, 0, len(res[0].Rows))
	for _, r := range res[0].Rows {
		out = append(out, Key{ID: r[0].AsString(), Name: r[1].AsString(), Prefix: r[2].AsString(), CreatedAt: r[3].AsInt(), LastUsedAt: r[4].AsInt()})
	}
	return out, nil
}

// RevokeKey revokes one of the account's active keys. A key of another
// account, an unknown id and an already revoked key are all ErrKeyNotFound,
// so the answer tells a caller nothing about keys that are not theirs. From
// the commit on, the key's hash no longer matches an active row, so the
// next request made with it fails authentication.
func (s *Store) RevokeKey(account, id string) error {
	res, err := s.run(st("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND account_id = ? AND revoked_at IS NULL",
		num(s.now()), str(id), str(account)))
	if err != nil {
		return err
	}
	if res[0].RowsAffected == 0 {
		return ErrKeyNotFound
	}
	return nil
}
