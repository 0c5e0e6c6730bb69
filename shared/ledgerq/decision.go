package ledgerq

import (
	"errors"
	"math"
	"strings"
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
// The writes are one statement: an INSERT into the view
// decision_reservations, whose trigger makes them, each under the condition
// that decides it (schema/migrations/0005_decision_reservation.sql), and
// whose RETURNING row reads the outcome from what they left: the counters,
// whether the key is live, whether the attempt was recorded, the balance and
// any stale lease. With an Idempotency-Key a second statement reads the live
// record. No conditions between them, so sqld runs no guards; and without a
// key the batch is that one statement, which a host may run merged with
// other decisions' (MergeableStatements).
func ReserveDecision(l platform.Ledger, r *Reserve) (Reservation, error) {
	var x batch.Builder
	now := r.Now.Unix()
	w := batch.WindowAt(r.Now, time.Minute)
	keyHash, authScope := r.credentials()
	var fingerprint abi.Value
	if r.IdemKey != "" {
		fingerprint = str(r.Fingerprint)
	}
	// The record is kept at least as long as its attempt may run: one whose
	// retention ended while it was still pending would be taken over by a
	// second request under the same key, which would call the upstream and
	// charge again (spec §3.1: pending answers 409 request_in_progress).
	// Past the lease the attempt is reconciled before any new claim.
	retention := max(r.TTL, r.Lease+time.Second) // a key is taken over when expires_at <= now; a stale attempt is one with lease_until < now
	reserve := x.Add(reservationSQL, nil,
		str(r.RequestID), str(r.AccountID), keyHash, authScope, num(int64(r.AuthLimit)), num(w.Start), num(int64(r.RateLimit)),
		nullable(r.IdemKey), fingerprint, num(now+retentionSeconds(retention)), num(r.Cost), str(r.Source), str(r.Model),
		num(int64(r.Questions)), num(now+int64(r.Lease/time.Second)), num(now))
	record := -1
	if r.IdemKey != "" {
		record = x.Add(`SELECT state, fingerprint, request_id, status, headers, body, mode FROM idempotency
WHERE account_id = ? AND key = ? AND expires_at > ?`, nil, str(r.AccountID), str(r.IdemKey), num(now))
	}

	res, err := x.Run(l)
	if err != nil {
		return Reservation{}, err
	}
	if len(res[reserve].Rows) != 1 || len(res[reserve].Rows[0]) != 6 {
		return Reservation{}, errors.New("ledgerq: the reservation's outcome has no row")
	}
	out, attempt, stale := readReservation(res[reserve].Rows[0][1:], r, w)
	switch {
	case out.Outcome != Reserved:
	case attempt != "":
	case stale:
		out.Outcome = Reconciling
	case record >= 0 && len(res[record].Rows) > 0:
		out.Outcome, out.Replay = readRecord(&res[record], r.Fingerprint)
	default:
		out.Outcome = Insufficient
	}
	return out, nil
}

// credentials are the reservation's key hash and the scope its address's
// attempts are counted in; NULL both for a signed-in caller.
func (r *Reserve) credentials() (keyHash, authScope abi.Value) {
	if r.KeyHash == "" {
		return abi.NullValue(), abi.NullValue()
	}
	return str(r.KeyHash), str("auth:" + r.IPHash)
}

// readReservation reads the reservation's RETURNING row after its request
// id (outcomeColumns): the outcome decided by authentication and the rate
// windows (Reserved when those allow the attempt), the attempt's state (""
// when it was not recorded), and whether an attempt of the account is
// pending past its lease.
func readReservation(row []abi.Value, r *Reserve, w batch.Window) (out Reservation, attempt string, stale bool) {
	out = Reservation{Auth: Auth{Window: w}, Rate: batch.Rate{Limit: int64(r.RateLimit), Window: w}}
	counts := row[0].AsInt()
	if r.KeyHash == "" {
		out.Auth.OK = row[3].Kind != abi.Null // the signed-in account exists
	} else {
		out.Auth.Count = counts >> 32
		out.Auth.RateLimited = out.Auth.Count > int64(r.AuthLimit)
		out.Auth.OK = row[1].Truthy() && !out.Auth.RateLimited
	}
	attempt = row[2].AsString()
	if out.Auth.OK {
		out.Rate.Count = counts & (1<<32 - 1) // counted only once authenticated
		out.Balance = row[3].AsInt()
		stale = attempt == "" && row[4].Truthy()
	}
	switch {
	case out.Auth.RateLimited:
		out.Outcome = AuthLimited
	case !out.Auth.OK:
		out.Outcome = Unauthorized
	case out.Rate.Exceeded():
		out.Outcome = RateLimited
	default:
		out.Outcome = Reserved
	}
	return out, attempt, stale
}

// reservationSQL is the reservation: its RETURNING row is the request id
// (which a host that merges reservations matches rows by) and the outcome,
// each read through the row's own columns (decision_reservations.…), so
// SQLite evaluates it for each row right after that row's trigger ran, and
// a merged INSERT answers each reservation as if it had run alone. The
// subqueries' tables have aliases so that the view's column names
// (window_start, account_id, …) cannot resolve to theirs.
var reservationSQL = `INSERT INTO decision_reservations (request_id, account_id, key_hash, auth_scope, auth_limit, window_start, rate_limit,
  idem_key, fingerprint, expires_at, cost, source, model, questions, lease_until, now)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
RETURNING ` + outcomeColumns("decision_reservations")

// outcomeColumns is the reservation's RETURNING row after its request id,
// read through the row's columns of view: both windows' counts in one
// integer (the address's attempts above bit 32, the account's decisions
// below; a minute's count is far below 2^32), whether the key is live, the
// attempt's state (NULL when it was not recorded), the balance, and
// whether an attempt of the account is pending past its lease. sqld
// compiles the statement for every request that carries it, each subquery
// a part of that, so the windows share one lookup and the attempt's
// existence and charge are read from its state: five subqueries where
// there were seven, and eight in a record.
func outcomeColumns(view string) string {
	return strings.ReplaceAll(`request_id,
  (SELECT sum(CASE w.scope WHEN V.auth_scope THEN w.count << 32 ELSE w.count END) FROM rate_windows w
    WHERE w.scope IN (V.auth_scope, 'decide:' || V.account_id) AND w.window_start = V.window_start) AS counts,
  EXISTS (SELECT 1 FROM api_keys k WHERE k.secret_hash = V.key_hash AND k.account_id = V.account_id
    AND k.revoked_at IS NULL) AS key_live,
  (SELECT q.state FROM requests q WHERE q.id = V.request_id) AS state,
  (SELECT a.balance FROM accounts a WHERE a.id = V.account_id) AS balance,
  EXISTS (SELECT 1 FROM requests q WHERE q.account_id = V.account_id AND q.state = 'pending'
    AND q.lease_until < V.now) AS stale`, "V.", view+".")
}

// settlementSQL charges a successful attempt without a record to complete
// (schema/migrations/0006_decision_settlement.sql); its RETURNING row is the
// request id and whether the attempt is now charged, false when it was
// reconciled (failed and refunded) first.
const settlementSQL = `INSERT INTO decision_settlements (request_id, status, input_tokens, output_tokens, now, resolved_model) VALUES (?, ?, ?, ?, ?, ?)
RETURNING request_id, (SELECT q.state = 'succeeded' FROM requests q WHERE q.id = decision_settlements.request_id) AS charged`

// RecordDecision records a successful decision whose upstream call was
// made before any reservation (a speculative decision, schema/ledger.md):
// the reservation and the settlement in one statement, an INSERT into the
// view decision_records whose trigger writes what both would write for the
// row (schema/migrations/0009_decision_record_direct.sql). The
// reservation decides exactly as ReserveDecision's would have at this
// moment; the Reservation says what it decided, and charged whether the
// attempt is now settled as a success (false when the reservation refused
// it: nothing was written but the attempt counters, as for any refusal).
// Without an Idempotency-Key only.
func RecordDecision(l platform.Ledger, r *Reserve, s *Settle) (Reservation, bool, error) {
	if r.IdemKey != "" || !s.OK {
		return Reservation{}, false, errors.New("ledgerq: RecordDecision records a success without an Idempotency-Key")
	}
	var x batch.Builder
	now := r.Now.Unix()
	w := batch.WindowAt(r.Now, time.Minute)
	keyHash, authScope := r.credentials()
	x.Add(recordSQL, nil,
		str(r.RequestID), str(r.AccountID), keyHash, authScope, num(int64(r.AuthLimit)), num(w.Start), num(int64(r.RateLimit)),
		num(r.Cost), str(r.Source), str(r.Model), num(int64(r.Questions)), num(now+int64(r.Lease/time.Second)), num(now),
		num(int64(s.Status)), tokens(s.InputTokens), tokens(s.OutputTokens), nullable(s.Model))
	res, err := x.Run(l)
	if err != nil {
		return Reservation{}, false, err
	}
	if len(res[0].Rows) != 1 || len(res[0].Rows[0]) != 6 {
		return Reservation{}, false, errors.New("ledgerq: the decision's record has no row")
	}
	out, attempt, stale := readReservation(res[0].Rows[0][1:], r, w)
	switch {
	case out.Outcome != Reserved:
	case attempt != "":
	case stale:
		out.Outcome = Reconciling
	default:
		out.Outcome = Insufficient
	}
	// Charged when the attempt is settled as a success, as the record
	// writes it when its reservation allowed it.
	return out, out.Outcome == Reserved && attempt == "succeeded", nil
}

// recordSQL is RecordDecision's statement: its RETURNING row is the
// reservation's (reservationSQL), whose attempt state says whether the
// attempt is charged.
var recordSQL = `INSERT INTO decision_records (request_id, account_id, key_hash, auth_scope, auth_limit, window_start, rate_limit,
  cost, source, model, questions, lease_until, now, status, input_tokens, output_tokens, resolved_model)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
RETURNING ` + outcomeColumns("decision_records")

// MergeableStatements returns the statements a host may run merged
// (wasm-host/ledger, Options.Merge): a decision's batches without an
// Idempotency-Key, its reservation and its successful settlement, are each
// one of them alone.
func MergeableStatements() []string { return []string{reservationSQL, settlementSQL, recordSQL} }

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
	// Model is the model the upstream resolved, recorded with a success
	// (spec §9.5); "" when it named none (stays NULL).
	Model string
	// Retain is kept for replays of a successful attempt with a key.
	Retain *Retained
	// TTL is the idempotency retention from the record's creation, which
	// settling a keyed attempt puts back where the reservation lengthened it
	// to the attempt's lease (ReserveDecision); 0 leaves the reservation's.
	TTL time.Duration
	Now time.Time
}

// keep is the record's retention in seconds from its creation, as the
// settlement leaves it: TTL, or with none the reservation's (MIN keeps it).
func (s *Settle) keep() int64 {
	if s.TTL <= 0 {
		return math.MaxInt64 / 2
	}
	return retentionSeconds(s.TTL)
}

// retentionSeconds is what a record whose retention is d adds to its
// created_at to make its expires_at. Both are whole seconds, created_at
// the second the attempt began in, and a record is live while expires_at
// is after the current second; so d is rounded up and one second added,
// and a record is live for at least d after its attempt began, at most 2 s
// longer. Truncated, a retention under a second (SERVICE_IDEMPOTENCY_TTL=
// 500ms) kept no record at all, and any other could end up to a second
// early, when a resend of the key would be billed again.
func retentionSeconds(d time.Duration) int64 {
	return int64((d+time.Second-1)/time.Second) + 1
}

// SettleDecision charges or refunds a pending attempt and completes or
// fails its idempotency record, atomically. It reports false when the
// attempt was no longer pending: its lease ran out and it was already
// reconciled (failed and refunded) by someone else.
func SettleDecision(l platform.Ledger, s *Settle) (bool, error) {
	var x batch.Builder
	now := num(s.Now.Unix())
	if s.ReportsCharge() {
		// No record to complete: the one statement a host may merge.
		x.Add(settlementSQL, nil, str(s.RequestID), num(int64(s.Status)), tokens(s.InputTokens), tokens(s.OutputTokens), now, nullable(s.Model))
		res, err := x.Run(l)
		if err != nil {
			return false, err
		}
		return len(res[0].Rows) == 1 && len(res[0].Rows[0]) == 2 && res[0].Rows[0][1].Truthy(), nil
	}
	var mark int
	if s.OK {
		// With a record to complete (the case above took the others). Two
		// plain UPDATEs, not the settlement view and its record: on the
		// embedded file the view's trigger and RETURNING cost a keyed
		// success a fifth more CPU, and merging, which the view is for,
		// takes single-statement batches only.
		mark = x.Add(`UPDATE requests SET state = 'succeeded', charged = cost, status = ?, input_tokens = ?, output_tokens = ?, finished_at = ?, resolved_model = ?
WHERE id = ? AND state = 'pending'`, nil, num(int64(s.Status)), tokens(s.InputTokens), tokens(s.OutputTokens), now, nullable(s.Model), str(s.RequestID))
		// Only if the attempt was still pending: changes() is the count of
		// the UPDATE just before, in the same transaction, which keeps the
		// test inside the statement (on sqld a condition on the step would
		// cost a guard statement).
		x.Add(`UPDATE idempotency SET state = 'completed', status = ?, headers = ?, body = ?, mode = ?, expires_at = MIN(expires_at, created_at + ?)
WHERE account_id = ? AND key = ? AND request_id = ? AND changes() > 0`, nil,
			num(int64(s.Retain.Status)), str(EncodeHeaders(s.Retain.Headers)), abi.Bytes(s.Retain.Body), str(s.Retain.Mode),
			num(s.keep()), str(s.AccountID), str(s.IdemKey), str(s.RequestID))
	} else {
		mark = x.Add(`UPDATE requests SET state = 'failed', status = ?, error_code = ?, finished_at = ? WHERE id = ? AND state = 'pending'`,
			nil, num(int64(s.Status)), str(s.ErrorCode), now, str(s.RequestID))
		refunded := []abi.Cond{affected(mark)}
		x.Add(`INSERT INTO credit_entries (account_id, delta, kind, request_id, created_at) VALUES (?, ?, 'refund', ?, ?)`,
			refunded, str(s.AccountID), num(s.Cost), str(s.RequestID), now)
		x.Add(`UPDATE accounts SET balance = balance + ? WHERE id = ?`, refunded, num(s.Cost), str(s.AccountID))
		if s.IdemKey != "" {
			x.Add(`UPDATE idempotency SET state = 'failed', expires_at = MIN(expires_at, created_at + ?) WHERE account_id = ? AND key = ? AND request_id = ?`,
				refunded, num(s.keep()), str(s.AccountID), str(s.IdemKey), str(s.RequestID))
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

// ReportsCharge is whether SettleDecision's result says if the attempt is
// charged, a retry's too: the one mergeable statement reads the state back.
// A keyed success says only whether this call changed the attempt.
func (s *Settle) ReportsCharge() bool { return s.OK && (s.IdemKey == "" || s.Retain == nil) }

// Charged reports whether a decision attempt is settled as charged
// (succeeded). A settlement retried after its answer was lost reads it to
// learn whether the first try committed: the keyed settlement reports only
// whether it changed the attempt, which a retry of a committed one did not.
func Charged(l platform.Ledger, requestID string) (bool, error) {
	var x batch.Builder
	x.Add(`SELECT state = 'succeeded' FROM requests WHERE id = ?`, nil, str(requestID))
	res, err := x.Run(l)
	if err != nil {
		return false, err
	}
	return len(res[0].Rows) == 1 && res[0].Rows[0][0].Truthy(), nil
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
