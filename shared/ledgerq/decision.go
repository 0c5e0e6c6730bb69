package ledgerq

import (
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/batch"
	"decisiongateway/shared/platform"
)

// Reserve describes a decision attempt before its upstream call.
type Reserve struct {
	Principal
	Source      string // "api" or "playground"
	RequestID   string
	IdemKey     string // "" when the request has no Idempotency-Key
	Fingerprint string // of the canonical request, effective model included; only with IdemKey
	Model       string
	Questions   int
	Cost        int64
	RateLimit   int
	TTL         time.Duration // idempotency retention
	Lease       time.Duration // how long the attempt may stay pending
	Now         time.Time
}

// Outcome of a reservation.
type Outcome int

const (
	Reserved     Outcome = iota // credits reserved, request recorded: call the upstream
	Unauthorized                // unknown or revoked key
	AuthLimited                 // too many authentication attempts from this address
	RateLimited                 // the account's decision window is exhausted
	Reconciling                 // an earlier attempt's lease ran out: settle it first
	InProgress                  // the idempotency key's attempt is still pending
	Replay                      // completed, same canonical request: replay it
	Conflict                    // completed with a different canonical request
	FailedBefore                // the key's earlier attempt failed and was refunded
	Insufficient                // balance below the cost
)

// Retained is a completed answer kept for replay.
type Retained struct {
	RequestID string
	Status    int
	Headers   abi.Headers
	Body      []byte
	Mode      string
	// Format is the replay envelope's format the record was written in
	// (EnvelopeFormatOf); only set when read.
	Format int
}

// Reservation is the result of ReserveDecision.
type Reservation struct {
	Outcome Outcome
	Rate    batch.Rate
	Auth    Auth
	Balance int64
	// Replay holds the retained answer when Outcome is Replay.
	Replay Retained
}

// ReserveDecision runs the batch before the upstream call: authenticate,
// count the attempt on the account's rate window (replays count too, spec
// §4.1 rule 3), stop if an expired lease needs reconciling, claim the
// idempotency key (or read its record), reserve the cost and record the
// request as pending with a lease. The key is claimed only when the debit
// after it will succeed, so an unpaid attempt never holds a key.
//
// The checks that decide whether the reservation goes ahead (the rate
// limit, no expired lease, the balance) sit in the WHERE clauses of the
// statements that write, not in steps of their own: the batch's happy path
// is six statements (seven with a key), and the outcome is read from what
// those statements changed and returned.
func ReserveDecision(l platform.Ledger, r *Reserve) (Reservation, error) {
	var x batch.Builder
	now := r.Now.Unix()
	authed, as := auth(&x, &r.Principal, r.Now)
	w := batch.WindowAt(r.Now, time.Minute)
	scope := "decide:" + r.AccountID
	count := x.Count(scope, w, authed)

	// May the attempt be paid for? Within the rate limit, and no attempt of
	// the account pending past its lease (that one is reconciled first).
	inLimit, gateArgs := batch.Within(scope, w, r.RateLimit)
	gate := inLimit + ` AND NOT ` + staleLease
	gateArgs = append(gateArgs, str(r.AccountID), num(now))

	pay := authed
	claim, record := -1, -1
	if r.IdemKey != "" {
		// A record past its retention is taken over by the new operation
		// (spec §3.1, expired): it is billed again. The claim carries the
		// debit's own conditions, balance included, so it succeeds exactly
		// when the debit will.
		claim = x.Add(`INSERT INTO idempotency (account_id, key, fingerprint, state, request_id, created_at, expires_at)
SELECT ?, ?, ?, 'pending', ?, ?, ? WHERE (SELECT balance FROM accounts WHERE id = ?) >= ? AND `+gate+`
ON CONFLICT (account_id, key) DO UPDATE SET fingerprint = excluded.fingerprint, state = 'pending',
  request_id = excluded.request_id, created_at = excluded.created_at, expires_at = excluded.expires_at,
  status = NULL, headers = NULL, body = NULL, mode = NULL
WHERE idempotency.expires_at <= ?`, authed,
			append(append([]abi.Value{str(r.AccountID), str(r.IdemKey), str(r.Fingerprint), str(r.RequestID), num(now),
				num(now + int64(r.TTL/time.Second)), str(r.AccountID), num(r.Cost)}, gateArgs...), num(now))...)
		// Not claimed: the live record says why (or there is none, and the
		// balance was short).
		record = x.Add(`SELECT state, fingerprint, request_id, status, headers, body, mode FROM idempotency
WHERE account_id = ? AND key = ? AND expires_at > ?`,
			and(authed, notAffected(claim)), str(r.AccountID), str(r.IdemKey), num(now))
		pay = and(authed, affected(claim))
	}
	debit := x.Add(`UPDATE accounts SET balance = balance - ? WHERE id = ? AND balance >= ? AND `+gate+` RETURNING balance`,
		pay, append([]abi.Value{num(r.Cost), str(r.AccountID), num(r.Cost)}, gateArgs...)...)
	x.Add(`INSERT INTO credit_entries (account_id, delta, kind, request_id, created_at) VALUES (?, ?, 'reserve', ?, ?)`,
		[]abi.Cond{affected(debit)}, str(r.AccountID), num(-r.Cost), str(r.RequestID), num(now))
	var keyID abi.Value
	if r.KeyHash != "" {
		keyID = str(r.KeyHash)
	}
	x.Add(`INSERT INTO requests (id, account_id, key_id, source, model, questions, cost, state, idem_key, lease_until, created_at)
VALUES (?, ?, (SELECT id FROM api_keys WHERE secret_hash = ?), ?, ?, ?, ?, 'pending', ?, ?, ?)`,
		[]abi.Cond{affected(debit)}, str(r.RequestID), str(r.AccountID), keyID, str(r.Source), str(r.Model),
		num(int64(r.Questions)), num(r.Cost), nullable(r.IdemKey), num(now+int64(r.Lease/time.Second)), num(now))
	// Only when nothing was reserved: the balance for the answer, and
	// whether an expired lease stood in the way.
	state := x.Add(`SELECT balance, `+staleLease+` FROM accounts WHERE id = ?`,
		and(authed, notAffected(debit)), str(r.AccountID), num(now), str(r.AccountID))

	res, err := x.Run(l)
	if err != nil {
		return Reservation{}, err
	}
	out := Reservation{Auth: readAuth(res, as, r.Now), Rate: batch.Read(res, count, r.RateLimit, w)}
	reserved := res[debit].RowsAffected > 0
	var stale bool
	if reserved {
		out.Balance = res[debit].First().AsInt()
	} else if rows := res[state].Rows; len(rows) > 0 {
		out.Balance, stale = rows[0][0].AsInt(), rows[0][1].Truthy()
	}
	switch {
	case out.Auth.RateLimited:
		out.Outcome = AuthLimited
	case !out.Auth.OK:
		out.Outcome = Unauthorized
	case out.Rate.Exceeded():
		out.Outcome = RateLimited
	case reserved:
		out.Outcome = Reserved
	case stale:
		out.Outcome = Reconciling
	case claim >= 0 && len(res[record].Rows) > 0:
		out.Outcome, out.Replay = readRecord(&res[record], r.Fingerprint)
	default:
		out.Outcome = Insufficient
	}
	return out, nil
}

// staleLease is a condition for a WHERE clause or a column: the account has
// an attempt pending past its lease. Args: account, now.
const staleLease = `EXISTS (SELECT 1 FROM requests WHERE account_id = ? AND state = 'pending' AND lease_until < ?)`

// readRecord interprets an idempotency record the attempt could not claim.
func readRecord(s *abi.StepResult, fingerprint string) (Outcome, Retained) {
	if len(s.Rows) == 0 {
		return InProgress, Retained{} // claimed by a concurrent attempt in between
	}
	row := s.Rows[0]
	switch row[0].AsString() {
	case "pending":
		return InProgress, Retained{}
	case "failed":
		return FailedBefore, Retained{}
	}
	if row[1].AsString() != fingerprint {
		return Conflict, Retained{}
	}
	return Replay, Retained{
		RequestID: row[2].AsString(),
		Status:    int(row[3].AsInt()),
		Headers:   DecodeHeaders(row[4].AsString()),
		Body:      row[5].Bytes,
		Mode:      row[6].AsString(),
		Format:    EnvelopeFormatOf(row[4].AsString()),
	}
}

// Settle describes how an attempt ended.
type Settle struct {
	RequestID, AccountID, IdemKey string
	Cost                          int64
	// OK charges the reservation; otherwise it is refunded.
	OK           bool
	Status       int
	ErrorCode    string
	InputTokens  int64 // -1: unknown (stays NULL)
	OutputTokens int64
	// Retain is kept for replays of a successful attempt with a key.
	Retain *Retained
	Now    time.Time
}

// SettleDecision charges or refunds a pending attempt and completes or
// fails its idempotency record, atomically. It reports false when the
// attempt was no longer pending: its lease ran out and it was already
// reconciled (failed and refunded) by someone else.
func SettleDecision(l platform.Ledger, s *Settle) (bool, error) {
	var x batch.Builder
	now := num(s.Now.Unix())
	var mark int
	if s.OK {
		mark = x.Add(`UPDATE requests SET state = 'succeeded', charged = cost, status = ?, input_tokens = ?, output_tokens = ?, finished_at = ?
WHERE id = ? AND state = 'pending'`, nil, num(int64(s.Status)), tokens(s.InputTokens), tokens(s.OutputTokens), now, str(s.RequestID))
		if s.IdemKey != "" && s.Retain != nil {
			x.Add(`UPDATE idempotency SET state = 'completed', status = ?, headers = ?, body = ?, mode = ?
WHERE account_id = ? AND key = ? AND request_id = ?`, []abi.Cond{affected(mark)},
				num(int64(s.Retain.Status)), str(EncodeHeaders(s.Retain.Headers)), abi.Bytes(s.Retain.Body), str(s.Retain.Mode),
				str(s.AccountID), str(s.IdemKey), str(s.RequestID))
		}
	} else {
		mark = x.Add(`UPDATE requests SET state = 'failed', status = ?, error_code = ?, finished_at = ? WHERE id = ? AND state = 'pending'`,
			nil, num(int64(s.Status)), str(s.ErrorCode), now, str(s.RequestID))
		refunded := []abi.Cond{affected(mark)}
		x.Add(`INSERT INTO credit_entries (account_id, delta, kind, request_id, created_at) VALUES (?, ?, 'refund', ?, ?)`,
			refunded, str(s.AccountID), num(s.Cost), str(s.RequestID), now)
		x.Add(`UPDATE accounts SET balance = balance + ? WHERE id = ?`, refunded, num(s.Cost), str(s.AccountID))
		if s.IdemKey != "" {
			x.Add(`UPDATE idempotency SET state = 'failed' WHERE account_id = ? AND key = ? AND request_id = ?`,
				refunded, str(s.AccountID), str(s.IdemKey), str(s.RequestID))
		}
	}
	res, err := x.Run(l)
	if err != nil {
		return false, err
	}
	return res[mark].RowsAffected > 0, nil
}

func tokens(n int64) abi.Value {
	if n < 0 {
		return abi.NullValue()
	}
	return num(n)
}

// ExpireLease ends a pending attempt's lease at once, so it is reconciled
// by the account's next decision or the sweeper. A function calls it when it
// could not settle an attempt whose upstream already answered.
func ExpireLease(l platform.Ledger, requestID string) error {
	var x batch.Builder
	x.Add(`UPDATE requests SET lease_until = 0 WHERE id = ? AND state = 'pending'`, nil, str(requestID))
	_, err := x.Run(l)
	return err
}

// Reconcile settles every pending attempt whose lease ended before now — of
// one account, or of all when account is "" — as failed and refunded, and
// fails their idempotency records. It returns how many it settled. The
// refunds are computed from the same rows the final step marks failed, in
// one transaction, so an attempt is refunded exactly once.
func Reconcile(l platform.Ledger, account string, now time.Time) (int64, error) {
	var x batch.Builder
	cut := num(now.Unix())
	scope, args := "", []abi.Value{cut}
	if account != "" {
		scope, args = " AND account_id = ?", []abi.Value{cut, str(account)}
	}
	stale := `SELECT id FROM requests WHERE state = 'pending' AND lease_until < ?` + scope
	x.Add(`INSERT INTO credit_entries (account_id, delta, kind, request_id, created_at)
SELECT account_id, cost, 'refund', id, ? FROM requests WHERE state = 'pending' AND lease_until < ?`+scope, nil, append([]abi.Value{cut}, args...)...)
	x.Add(`UPDATE accounts SET balance = balance + (SELECT COALESCE(SUM(cost), 0) FROM requests r
  WHERE r.account_id = accounts.id AND r.state = 'pending' AND r.lease_until < ?)
WHERE id IN (SELECT account_id FROM requests WHERE state = 'pending' AND lease_until < ?`+scope+`)`, nil, append([]abi.Value{cut}, args...)...)
	x.Add(`UPDATE idempotency SET state = 'failed' WHERE state = 'pending' AND request_id IN (`+stale+`)`, nil, args...)
	done := x.Add(`UPDATE requests SET state = 'failed', error_code = 'lease_expired', finished_at = ? WHERE state = 'pending' AND lease_until < ?`+scope,
		nil, append([]abi.Value{cut}, args...)...)
	res, err := x.Run(l)
	if err != nil {
		return 0, err
	}
	return res[done].RowsAffected, nil
}
