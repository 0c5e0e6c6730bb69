// Package accounts is the typed ledger client for accounts, credits, API
// keys, browser sessions and sign-in links. Every operation is one atomic
// ledger batch built from conditional steps (schema/abi.md), sent through
// platform.Ledger, so the route functions (TinyGo guests) and the host's
// operator CLI (native Go over the same executor) run exactly the same
// statements.
//
// Invariants every batch here keeps, and the tests check:
//   - accounts.balance equals the sum of credit_entries.delta of the account
//     and is never negative: a credit change and its entry are two steps of
//     one batch, the second conditioned on the first.
//   - the welcome grant happens at most once per account: it is guarded by
//     accounts.welcome_granted inside the batch's write transaction, so two
//     concurrent verifications grant once.
//   - secrets (API keys, sessions, sign-in links) are stored only as
//     keys.Hash; the clear secret exists in the answer of its creation only.
//
// Times are INTEGER unix seconds.
package accounts

import (
	"errors"
	"strings"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/batch"
	"decisiongateway/shared/keys"
	"decisiongateway/shared/platform"
)

// Errors a caller maps to platform errors. Anything else (errors.Is
// batch.ErrLedger) means the ledger failed and nothing was committed.
var (
	ErrNoAccount    = errors.New("accounts: no such account")
	ErrInvalidEmail = errors.New("accounts: not a valid e-mail address")
	ErrInvalidName  = errors.New("accounts: key name must be 1 to 64 characters with a non-space character and no control character")
	ErrKeyLimit     = errors.New("accounts: the account already has the maximum number of active keys")
	ErrKeyNotFound  = errors.New("accounts: no such key")
	ErrInvalidGrant = errors.New("accounts: a grant must be a whole number of credits from 1 to 1,000,000,000,000")
	ErrBalanceLimit = errors.New("accounts: the grant would take the balance past 1,000,000,000,000,000 credits")
)

// MaxGrant and MaxBalance bound what an operator's grant may add and the
// balance it may reach: far above any real account, far below SQLite's
// 64-bit integers, whose overflow would turn the balance into a float and
// break balance = Σ entries.
const (
	MaxGrant   = 1_000_000_000_000
	MaxBalance = 1_000_000_000_000_000
)

// RateLimited is returned when a fixed-window limit refused an attempt.
// RetryAfter is the number of seconds until the window resets.
type RateLimited struct {
	Scope      string // what was limited: "keycreate", "signin-address", "signin-ip"
	RetryAfter int64
}

func (e *RateLimited) Error() string { return "accounts: rate limit reached (" + e.Scope + ")" }

// Store runs account batches against a ledger.
type Store struct {
	Ledger platform.Ledger
	// Now returns the current unix time in seconds; nil means the clock.
	// Tests set it to move through windows and lifetimes.
	Now func() int64
}

// New returns a Store on l using the wall clock.
func New(l platform.Ledger) *Store { return &Store{Ledger: l} }

func (s *Store) now() int64 {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now().Unix()
}

// run executes unconditional statements as one batch (shared/batch's
// runner: any failure is a *batch.Error). Batches with conditions or rate
// steps build a batch.Builder and run it themselves.
func (s *Store) run(steps ...abi.Statement) ([]abi.StepResult, error) {
	var x batch.Builder
	for _, st := range steps {
		x.Add(st.SQL, st.When, st.Args...)
	}
	return x.Run(s.Ledger)
}

func st(sql string, args ...abi.Value) abi.Statement { return abi.Statement{SQL: sql, Args: args} }

func when(s abi.Statement, conds ...abi.Cond) abi.Statement { s.When = conds; return s }

var (
	str = batch.Str
	num = batch.Num
)

// Account is the ledger's view of one account.
type Account struct {
	ID         string
	Email      string
	VerifiedAt int64 // 0 until the first verification
	Balance    int64
	CreatedAt  int64
}

// NormalizeEmail trims and lower-cases an address and checks its shape:
// local@domain, at most 254 bytes, a dot inside the domain, no spaces,
// control characters or characters that need quoting. It does not prove the
// address receives mail; the sign-in link does.
func NormalizeEmail(raw string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(raw))
	at := strings.IndexByte(e, '@')
	if len(e) > 254 || at < 1 || at > 64 || strings.Count(e, "@") != 1 {
		return "", ErrInvalidEmail
	}
	domain := e[at+1:]
	dot := strings.IndexByte(domain, '.')
	if dot < 1 || strings.HasSuffix(domain, ".") || strings.Contains(domain, "..") {
		return "", ErrInvalidEmail
	}
	for i := 0; i < len(e); i++ {
		c := e[i]
		if c <= ' ' || c == 0x7f || strings.IndexByte("\"(),:;<>[\\]", c) >= 0 {
			return "", ErrInvalidEmail
		}
	}
	return e, nil
}

const accountColumns = "id, email, COALESCE(verified_at, 0), balance, created_at"

func accountFrom(row []abi.Value) Account {
	return Account{
		ID: row[0].AsString(), Email: row[1].AsString(), VerifiedAt: row[2].AsInt(),
		Balance: row[3].AsInt(), CreatedAt: row[4].AsInt(),
	}
}

// EnsureAccount returns the account of email, creating an unverified one
// with a zero balance when there is none. Concurrent calls for one address
// agree on one account (the e-mail column is unique; the loser's insert does
// nothing and both read the winner's row).
func (s *Store) EnsureAccount(email string) (Account, error) {
	e, err := NormalizeEmail(email)
	if err != nil {
		return Account{}, err
	}
	steps, err := s.run(
		st("INSERT INTO accounts (id, email, created_at) VALUES (?, ?, ?) ON CONFLICT (email) DO NOTHING",
			str(keys.NewAccountID()), str(e), num(s.now())),
		st("SELECT "+accountColumns+" FROM accounts WHERE email = ?", str(e)),
	)
	if err != nil {
		return Account{}, err
	}
	if len(steps[1].Rows) == 0 {
		return Account{}, &batch.Error{Msg: "account vanished after insert"}
	}
	return accountFrom(steps[1].Rows[0]), nil
}

// Lookup returns the account of email, or ErrNoAccount when there is none.
// Unlike EnsureAccount it never creates one.
func (s *Store) Lookup(email string) (Account, error) {
	e, err := NormalizeEmail(email)
	if err != nil {
		return Account{}, err
	}
	steps, err := s.run(st("SELECT "+accountColumns+" FROM accounts WHERE email = ?", str(e)))
	if err != nil {
		return Account{}, err
	}
	if len(steps[0].Rows) == 0 {
		return Account{}, ErrNoAccount
	}
	return accountFrom(steps[0].Rows[0]), nil
}

// Get returns one account by id.
func (s *Store) Get(id string) (Account, error) {
	steps, err := s.run(st("SELECT "+accountColumns+" FROM accounts WHERE id = ?", str(id)))
	if err != nil {
		return Account{}, err
	}
	if len(steps[0].Rows) == 0 {
		return Account{}, ErrNoAccount
	}
	return accountFrom(steps[0].Rows[0]), nil
}

// Verification is the outcome of Verify.
type Verification struct {
	Account
	// Granted is the welcome credits this call granted: the configured
	// amount on an account's first verification, 0 on every later one.
	Granted int64
}

// Verify marks an account verified. The first verification ever grants
// welcome credits (SERVICE_WELCOME_CREDITS; 0 grants nothing) as a 'welcome'
// credit entry plus the same balance change, in one batch. The guard is
// welcome_granted, flipped by the same UPDATE that adds the balance, so
// concurrent verifications serialise on the ledger's write lock and exactly
// one sees the flag still clear. The first verification consumes the grant
// even when the amount is 0, so raising the setting later does not pay
// accounts verified earlier.
func (s *Store) Verify(id string, welcome int64) (Verification, error) {
	if welcome < 0 {
		welcome = 0
	}
	now := s.now()
	steps := []abi.Statement{
		st("UPDATE accounts SET verified_at = COALESCE(verified_at, ?), welcome_granted = 1, balance = balance + ? WHERE id = ? AND welcome_granted = 0",
			num(now), num(welcome), str(id)),
		when(st("INSERT INTO credit_entries (account_id, delta, kind, created_at) SELECT ?, ?, 'welcome', ? WHERE ? > 0",
			str(id), num(welcome), num(now), num(welcome)), abi.Cond{Step: 0, Test: abi.Affected}),
		st("UPDATE accounts SET verified_at = ? WHERE id = ? AND verified_at IS NULL", num(now), str(id)),
		st("SELECT "+accountColumns+" FROM accounts WHERE id = ?", str(id)),
	}
	res, err := s.run(steps...)
	if err != nil {
		return Verification{}, err
	}
	if len(res[3].Rows) == 0 {
		return Verification{}, ErrNoAccount
	}
	v := Verification{Account: accountFrom(res[3].Rows[0])}
	if res[0].RowsAffected > 0 {
		v.Granted = welcome
	}
	return v, nil
}

// Grant adds n credits (n > 0) to an account as a 'grant' entry and returns
// the new balance.
func (s *Store) Grant(id string, n int64) (int64, error) {
	if n <= 0 || n > MaxGrant {
		return 0, ErrInvalidGrant
	}
	res, err := s.run(
		st("UPDATE accounts SET balance = balance + ? WHERE id = ? AND balance <= ?", num(n), str(id), num(MaxBalance-n)),
		when(st("INSERT INTO credit_entries (account_id, delta, kind, created_at) VALUES (?, ?, 'grant', ?)",
			str(id), num(n), num(s.now())), abi.Cond{Step: 0, Test: abi.Affected}),
		st("SELECT balance FROM accounts WHERE id = ?", str(id)),
	)
	if err != nil {
		return 0, err
	}
	switch {
	case res[0].RowsAffected == 0 && len(res[2].Rows) == 0:
		return 0, ErrNoAccount
	case res[0].RowsAffected == 0:
		return 0, ErrBalanceLimit
	}
	return res[2].First().AsInt(), nil
}
