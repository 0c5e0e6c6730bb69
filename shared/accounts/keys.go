package accounts

import (
	"strings"
	"unicode/utf8"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/keys"
)

// Key limits of spec §3.2 and §5 rule 3.
const (
	MaxActiveKeys      = 20
	KeyCreatesPerMin   = 10
	keyCreateWindow    = 60
	MaxKeyNameChars    = 64
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
	if name == "" || !utf8.ValidString(name) || utf8.RuneCountInString(name) > MaxKeyNameChars {
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
// every host on the ledger). A refused creation is not counted.
func (s *Store) CreateKey(account, name string) (Key, string, error) {
	name, err := CheckKeyName(name)
	if err != nil {
		return Key{}, "", err
	}
	now := s.now()
	start := now - now%keyCreateWindow
	scope := keyCreateScopeHead + account
	secret := keys.New(keys.APIKey, account)
	k := Key{ID: keys.NewID("key_"), Name: name, Prefix: keys.DisplayPrefix(secret), CreatedAt: now}
	res, err := s.run(
		dropOldWindows(scope, start),
		st("SELECT COUNT(*) < ? FROM api_keys WHERE account_id = ? AND revoked_at IS NULL", num(MaxActiveKeys), str(account)),
		when(countAttempt(scope, start, KeyCreatesPerMin), abi.Cond{Step: 1, Test: abi.Truthy}),
		when(st("INSERT INTO api_keys (id, account_id, name, prefix, secret_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)",
			str(k.ID), str(account), str(k.Name), str(k.Prefix), str(keys.Hash(secret)), num(now)),
			abi.Cond{Step: 1, Test: abi.Truthy}, abi.Cond{Step: 2, Test: abi.Affected}),
	)
	if err != nil {
		return Key{}, "", err
	}
	switch {
	case !res[1].First().Truthy():
		return Key{}, "", ErrKeyLimit
	case res[2].RowsAffected == 0:
		return Key{}, "", &RateLimited{Scope: "keycreate", RetryAfter: start + keyCreateWindow - now}
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
