package client

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error is a call that did not succeed: a gateway answer that was not a
// 2xx, or no answer at all (Status 0, Err says why). Every field but Body
// and Err comes from the last answer's headers.
type Error struct {
	Op         string        // "decide" or "models"
	Status     int           // HTTP status of the last answer; 0 if none came
	Code       string        // X-Service-Error-Code, the stable classification
	Source     string        // X-Service-Error-Source: "platform" or "upstream"
	RequestID  string        // X-Request-Id
	Credits    *int64        // X-Service-Credits; nil when absent: unknown, not zero
	RetryAfter time.Duration // the last answer's Retry-After, 0 if none
	Body       []byte        // the answer's body, for people; classify by Code

	// IdempotencyKey is the key the last attempt used. Uncertain is true
	// when an attempt under it may have run and been charged and its
	// outcome is not known (a lost answer, a timeout, request_in_progress):
	// resend with Client.Recover and the same request to learn it.
	IdempotencyKey string
	Uncertain      bool
	Attempts       int   // requests sent
	Err            error // the transport failure, context error or ErrInvalidAnswer, if any
}

// ErrInvalidAnswer is wrapped by an *Error whose 2xx answer lacks what the
// spec promises (answers for every question, each with its type's fields).
// Such a decision may have been charged (see Credits).
var ErrInvalidAnswer = errors.New("client: the answer breaks the contract")

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "client: %s", e.Op)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": %d", e.Status)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " %s (%s)", e.Code, e.Source)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	fmt.Fprintf(&b, " after %d attempt(s)", e.Attempts)
	if e.Uncertain {
		fmt.Fprintf(&b, "; outcome unknown, recover with Idempotency-Key %s", e.IdempotencyKey)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// fail is the error a call returns: the last answer's or transport error,
// with what the operation knows (key, uncertainty, attempts) and, when the
// call ended because of it, the context's error.
func (op *operation) fail(last, ctxErr error) *Error {
	e := &Error{}
	var answered *Error
	if errors.As(last, &answered) {
		*e = *answered
	} else {
		e.Err = last
	}
	if ctxErr != nil {
		e.Err = errors.Join(ctxErr, e.Err)
	}
	e.Op, e.IdempotencyKey, e.Uncertain, e.Attempts = op.name, op.key, op.uncertain, op.sent
	return e
}

// class is what an answer that is not a 2xx means for the next attempt.
type class int

const (
	// unknown: the attempt may have run (or may still be running); only
	// the same key and body may be resent.
	unknown class = iota
	// notRun: nothing was recorded under the key; resending it is safe.
	notRun
	// refunded: the attempt under the key failed and was refunded; a new
	// attempt needs a new key.
	refunded
	// stop: retrying cannot help until the caller changes something.
	stop
)

const codeIdemFailed = "idempotency_failed"

// settles reports whether a final answer under a key tells that key's
// outcome: never charged (insufficient_credits leaves the key unused), or
// run and refunded (an upstream's refusal with X-Service-Credits: 0). Other
// refusals (authentication, limits, a request the gateway cannot read)
// answer before the key is looked at and tell nothing about it, and
// idempotency_conflict says the key completed, charged, with another
// request: Recover was given the wrong one, and the outcome of the right
// one is still to learn.
func settles(e *Error) bool {
	switch {
	case e.Code == "insufficient_credits":
		return true
	case e.Source == "upstream" && e.Credits != nil && *e.Credits == 0:
		return true
	}
	return false
}

// classes classifies the platform's error codes (schema/errors.md) by
// X-Service-Error-Code alone. A code not listed is classed by its status
// (statusClass).
var classes = map[string]class{
	// Nothing ran, or nothing was recorded under the key.
	"rate_limit_exceeded":            notRun,
	"auth_rate_limited":              notRun,
	"ledger_unavailable":             notRun,
	"overloaded":                     notRun,
	"function_unavailable":           notRun,
	"body_timeout":                   notRun,
	"invalid_body":                   notRun,
	"request_reconciliation_pending": unknown, // also: our own outcome is being reconciled
	"request_in_progress":            unknown,
	"function_timeout":               unknown,
	"internal_error":                 unknown,

	// The attempt reached the upstream, failed and was refunded.
	codeIdemFailed:                refunded, // by the spec's definition (§3.1)
	"provider_busy":               refunded,
	"upstream_timeout":            refunded,
	"upstream_unavailable":        refunded,
	"upstream_invalid_response":   refunded,
	"upstream_response_too_large": refunded,
	"upstream_response_unsafe":    refunded,
	"invalid_upstream_answer":     refunded,
	"upstream_error":              refunded,

	// Fix before any new attempt (spec §7 rule 4).
	"missing_api_key":             stop,
	"invalid_api_key":             stop,
	"insufficient_credits":        stop,
	"invalid_idempotency_key":     stop,
	"idempotency_conflict":        stop,
	"idempotency_expired":         stop,
	"unsupported_media_type":      stop,
	"upstream_rejected_request":   stop,
	"upstream_auth_failed":        stop,
	"upstream_not_found":          stop,
	"upstream_not_configured":     stop,
	"model_listing_not_supported": stop,
	"unsupported_extension_field": stop,
	"unsupported_model":           stop,
	"not_found":                   stop,
	"method_not_allowed":          stop,
}

// classify says what an answer means for the next attempt. Codes win;
// without one (a proxy's answer, a code newer than this package) 408, 429
// and 5xx prove nothing and are retried under the same key, any other 4xx
// is the caller's to fix. An upstream_error with a 4xx status is the
// upstream refusing the request, which a retry would not change.
func classify(status int, code string) class {
	if code == "upstream_error" && status < 500 {
		return stop
	}
	if c, known := classes[code]; known {
		return c
	}
	if status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500 {
		return unknown
	}
	return stop // validation codes (invalid_json, too_many_questions, …) and any other 4xx
}

// answer is one response, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// credits reads X-Service-Credits: nil when absent or not an integer.
func (a *answer) credits() *int64 {
	v := a.header.Get("X-Service-Credits")
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

// error describes a (failed or malformed) answer from its headers.
func (a *answer) error(op *operation, err error) *Error {
	retry, _ := retryAfter(a.header.Get("Retry-After"), time.Now())
	e := &Error{Op: op.name, Status: a.status, Code: a.header.Get("X-Service-Error-Code"), Source: a.header.Get("X-Service-Error-Source"),
		RequestID: a.header.Get("X-Request-Id"), Credits: a.credits(), RetryAfter: retry, Body: a.body, Err: err,
		IdempotencyKey: op.key, Uncertain: op.uncertain, Attempts: op.sent}
	return e
}

// neverSent reports whether a transport error proves the request never
// reached the server: the connection could not be made.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
