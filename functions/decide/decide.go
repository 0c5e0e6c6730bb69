// Package decide is POST /v1/service (spec §2, §3.1, §4.1, §4.8, §5, §7,
// §8): validate, authorise, reserve, call the upstream, settle, answer. The
// playground function runs the same path for a signed-in session through
// Run, so both share one rate counter, one balance and one set of rules.
package decide

import (
	"math/rand/v2"
	"strconv"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/batch"
	"decisiongateway/shared/canon"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/keys"
	"decisiongateway/shared/ledgerq"
	"decisiongateway/shared/platform"
	"decisiongateway/shared/policy"
	"decisiongateway/shared/pricing"
	"decisiongateway/shared/settings"
	"decisiongateway/shared/upstream"
	"decisiongateway/shared/validate"

	"github.com/valyala/fastjson"
)

// Caller is who makes a decision once authenticated by its entry point.
type Caller struct {
	AccountID string
	KeyID     string // informational; the API path authenticates by key hash
	Source    string // "api" or "playground"
}

// A module serves one request at a time, so these are reused across
// requests without locking; their buffers grow once and stay.
var (
	validator validate.Validator
	encoder   canon.Encoder
	canonical []byte
	current   decision
)

// Handle serves POST /v1/service. A missing or malformed key is refused
// before any ledger read; a well-formed one is checked inside the
// reservation batch.
func Handle(env *platform.Env, req *abi.Request) abi.Response {
	if req.Resume != nil {
		return Resume(env, req)
	}
	tok, account, refusal := policy.APIKey(req)
	if refusal != nil {
		if limited, ok := attemptLimited(env, req); ok {
			return limited
		}
		refusal.Headers.Set(policy.HServiceCredits, "0")
		return *refusal
	}
	return run(env, req, Caller{AccountID: account, Source: "api"}, keys.Hash(tok))
}

// Run serves a decision for a caller its entry point has already
// authenticated (the playground's session).
func Run(env *platform.Env, req *abi.Request, c Caller) abi.Response {
	return run(env, req, c, "")
}

func run(env *platform.Env, req *abi.Request, c Caller, keyHash string) abi.Response {
	// Parse: everything here is local, costs nothing and reaches no upstream.
	d, refusal := parse(env, req)
	if refusal != nil {
		return *refusal
	}
	// A key sent twice (even twice the same) is read joined, "a, b", as
	// the Workers runtime hands it over and as no valid key looks: which
	// operation the client meant is unknown, and taking the first would
	// charge a new operation for a resend whose fields came reordered.
	idemKey := req.Headers.Joined("idempotency-key")
	if req.Headers.Has("idempotency-key") && !validIdempotencyKey(idemKey) {
		return fail(contract.InvalidIdempotencyKey, "Idempotency-Key must be sent once, as 1 to 255 visible ASCII characters")
	}
	var err error
	canonical, err = encoder.AppendTree(canonical[:0], d.call.Tree, d.call.Model)
	if err != nil {
		return fail(contract.InvalidRequest, err.Error())
	}
	cost := pricing.Cost(len(d.parsed.Questions), encoder.PricedLen())
	// The fingerprint identifies the request of an idempotency record; a
	// request without a key has no record to compare it with.
	fingerprint := ""
	if idemKey != "" {
		fingerprint = canon.Fingerprint(canonical)
	}

	now := time.Now()
	if speculate(env, d, keyHash, idemKey, cost, now) {
		// Call the upstream first; reserve and settle in one statement
		// when it answers (speculate.go).
		p := pending{AccountID: c.AccountID, Cost: cost, Rate: batch.Rate{Limit: int64(d.settings.RateLimit)}, Reserved: now.UnixMilli(), Speculative: true}
		if aw, failed := d.adapter.Prepare(&d.call); failed == nil {
			p.Called = time.Now().UnixMicro()
			aw.State = d.parsed.AppendState(p.append(aw.State[:0]))
			return abi.Response{Await: &aw}
		}
		unspeculate(env, d, keyHash)
	}

	// Authorise and reserve: one ledger round trip.
	r, err := ledgerq.ReserveDecision(env.Ledger, d.reserve(req, c, keyHash, idemKey, fingerprint, cost, now))
	measure(env, time.Since(now), 0)
	if err != nil {
		return reservationFailed(env, err, idemKey != "")
	}
	remember(env, keyHash, &r)
	if resp, done := refuse(env, &r, c.AccountID, now); done {
		return resp
	}

	// Call the upstream: the host makes the call while no instance waits
	// on it, then hands the answer to Resume.
	p := pending{AccountID: c.AccountID, Cost: cost, Rate: r.Rate, Reserved: now.UnixMilli()}
	aw, failed := d.adapter.Prepare(&d.call)
	if failed != nil {
		return settleAndAnswer(env, req, d, &p, failed)
	}
	p.Called = time.Now().UnixMicro()
	aw.State = d.parsed.AppendState(p.append(aw.State[:0]))
	return abi.Response{Await: &aw}
}

// Resume continues a decision once the host has the upstream's answer:
// settle, answer. It may run on another instance: what the reservation
// decided and what validating the request found come back in the state Run
// saved, with the same request, which is not validated again.
func Resume(env *platform.Env, req *abi.Request) abi.Response {
	var p pending
	rest, ok := p.decode(req.Resume.State)
	if !ok {
		return policy.Error(contract.InternalError, "the decision's saved state could not be read")
	}
	d := &current
	d.settings = settings.Read(env.Config)
	d.adapter = upstream.For(&d.settings)
	var spec *speculation
	if p.Speculative {
		spec = landed(env, req, d, p.AccountID)
	}
	parsed, ok := validator.RequestFromState(rest)
	if !ok || d.adapter == nil {
		// Run saved a request it had validated, on a deployment with an
		// upstream: the host changed one or the other. Refund and say so.
		r := policy.Error(contract.InternalError, "the decision's saved request could not be read")
		out := upstream.Outcome{Status: r.Status, Headers: r.Headers, Body: r.Body, Code: contract.InternalError, Source: policy.SourcePlatform}
		return settleAndAnswer(env, req, d, &p, &out)
	}
	d.use(parsed, nil, req.Body)
	var called time.Duration // the upstream call, as long as it took
	if p.Called != 0 {
		called = time.Since(time.UnixMicro(p.Called))
	}
	out := d.adapter.Answer(&d.call, req.Resume)
	if p.Speculative {
		if spec == nil {
			return policy.Error(contract.InternalError, "the decision's saved state does not match its request")
		}
		return record(env, req, d, &p, &out, spec, called)
	}
	measure(env, 0, called)
	return settleAndAnswer(env, req, d, &p, &out)
}

// reserve is the reservation of the decision d for caller c.
func (d *decision) reserve(req *abi.Request, c Caller, keyHash, idemKey, fingerprint string, cost int64, now time.Time) *ledgerq.Reserve {
	return &ledgerq.Reserve{
		Principal:   ledgerq.Principal{AccountID: c.AccountID, KeyHash: keyHash, IPHash: keys.HashClient(req.ClientAddr), AuthLimit: d.settings.AuthRateLimit},
		Source:      c.Source,
		RequestID:   req.RequestID,
		IdemKey:     idemKey,
		Fingerprint: fingerprint,
		Model:       d.call.Model,
		Questions:   len(d.parsed.Questions),
		Cost:        cost,
		RateLimit:   d.settings.RateLimit,
		TTL:         d.settings.IdempotencyTTL,
		Lease:       d.settings.Lease(),
		Now:         now,
	}
}

// decision is a parsed request: its settings, adapter and upstream call.
type decision struct {
	settings settings.Settings
	parsed   *validate.Request
	adapter  upstream.Adapter
	call     upstream.Call
}

// parse reads the settings and checks the request: content type, JSON,
// the spec's rules and the upstream kind's own. A refusal charged nothing.
func parse(env *platform.Env, req *abi.Request) (*decision, *abi.Response) {
	d := &current
	d.settings = settings.Read(env.Config)
	if !validate.IsJSONContentType(req.Headers.Get("content-type")) {
		r := fail(contract.UnsupportedMediaType, "send the body as Content-Type: application/json")
		return d, &r
	}
	parsed, tree, verr := validator.ValidateTree(req.Body)
	if verr != nil {
		r := fail(verr.Code, verr.Message)
		return d, &r
	}
	d.adapter = upstream.For(&d.settings)
	if d.adapter == nil {
		r := fail(contract.UpstreamNotConfigured, "no upstream provider is configured on this deployment")
		return d, &r
	}
	d.use(parsed, tree, req.Body)
	if verr := d.adapter.Check(&d.call); verr != nil {
		r := fail(verr.Code, verr.Message)
		return d, &r
	}
	return d, nil
}

// use makes parsed, the summary of body (and tree, its parse, when there
// is one), the decision's request, and its upstream call the one for the
// effective model.
func (d *decision) use(parsed *validate.Request, tree *fastjson.Value, body []byte) {
	d.parsed = parsed
	model := d.settings.DefaultModel
	if parsed.HasModel {
		model = parsed.Model
	}
	d.call = upstream.Call{Body: body, Request: parsed, Model: model, Validator: &validator, Tree: tree}
}

// settleAndAnswer charges a validated success and refunds everything else,
// retains a success for replay, and answers.
func settleAndAnswer(env *platform.Env, req *abi.Request, d *decision, p *pending, out *upstream.Outcome) abi.Response {
	idemKey := req.Headers.Get("idempotency-key")
	st := settlement(req, d, p, out, idemKey)
	resp := answer(d, out)
	p.Rate.SetHeaders(&resp.Headers)
	credits, ok := settle(env, &st, p.settleBy(d.settings.RequestTimeout))
	if !ok {
		return unsettled(p, idemKey != "")
	}
	resp.Headers.Set(policy.HServiceCredits, credits)
	return resp
}

// settlement is how the attempt of d ended with out.
func settlement(req *abi.Request, d *decision, p *pending, out *upstream.Outcome, idemKey string) ledgerq.Settle {
	st := ledgerq.Settle{
		RequestID: req.RequestID, AccountID: p.AccountID, IdemKey: idemKey, Cost: p.Cost,
		OK: out.OK, Status: out.Status, ErrorCode: string(out.Code),
		InputTokens: out.InputTokens, OutputTokens: out.OutputTokens, Model: recordedModel(out.Model), TTL: d.settings.IdempotencyTTL, Now: time.Now(),
	}
	if out.OK && idemKey != "" {
		st.Retain = &ledgerq.Retained{RequestID: req.RequestID, Status: out.Status, Headers: out.Headers, Body: out.Body, Mode: mode(d)}
	}
	return st
}

// mode is the response mode of d's upstream kind, "" without one.
func mode(d *decision) string {
	if d.adapter == nil {
		return ""
	}
	return d.adapter.Mode()
}

// answer is the response out makes, before the ledger's headers.
func answer(d *decision, out *upstream.Outcome) abi.Response {
	resp := abi.Response{Status: out.Status, Headers: out.Headers, Body: out.Body}
	if m := mode(d); m != "" && (out.OK || out.Source == policy.SourceUpstream) {
		resp.Headers.Set(policy.HResponseMode, m)
	}
	return resp
}

// recordedModel is the resolved model the ledger keeps: the answer's, when
// it is a model name by the request's rule (spec §2.1), else none. The
// answer may hold up to 4 MiB; its model is delivered as it is but not
// copied into every request row.
func recordedModel(m string) string {
	if !validate.ValidModel(m) {
		return ""
	}
	return m
}

// attemptLimited answers 429 when a refused key's client address is over
// its authentication limit (ledgerq.CountRefusedKey).
func attemptLimited(env *platform.Env, req *abi.Request) (abi.Response, bool) {
	now := time.Now()
	a, limited := ledgerq.CountRefusedKey(env.Ledger, req, settings.Read(env.Config).AuthRateLimit, now)
	if !limited {
		return abi.Response{}, false
	}
	resp := fail(contract.AuthRateLimited, "too many authentication attempts from this address")
	resp.Headers.Set(policy.HRetryAfter, a.Window.RetryAfter(now))
	return resp, true
}

// refuse answers every reservation outcome other than Reserved.
func refuse(env *platform.Env, r *ledgerq.Reservation, account string, now time.Time) (abi.Response, bool) {
	var resp abi.Response
	switch r.Outcome {
	case ledgerq.Reserved:
		return resp, false
	case ledgerq.AuthLimited:
		resp = fail(contract.AuthRateLimited, "too many authentication attempts from this address")
		resp.Headers.Set(policy.HRetryAfter, r.Auth.Window.RetryAfter(now))
		return resp, true
	case ledgerq.Unauthorized:
		resp = policy.Unauthorized(contract.InvalidAPIKey, "the API key is unknown or revoked")
		resp.Headers.Set(policy.HServiceCredits, "0")
		return resp, true
	case ledgerq.RateLimited:
		resp = fail(contract.RateLimitExceeded, "the account's decision limit for this minute is exhausted")
		resp.Headers.Set(policy.HRetryAfter, r.Rate.Window.RetryAfter(now))
		return resp, true
	case ledgerq.Reconciling:
		// An earlier attempt's host stopped before settling. Settle it now
		// (failed and refunded); this attempt is not run.
		if n, err := ledgerq.Reconcile(env.Ledger, account, now); err != nil {
			env.Error("reconciliation failed", "error", err.Error())
		} else {
			env.Warn("reconciled expired attempts", "count", strconv.FormatInt(n, 10))
		}
		resp = fail(contract.RequestReconciliationPending, "an earlier request of this account is being reconciled; check usage, then retry")
		resp.Headers.Set(policy.HRetryAfter, "1")
	case ledgerq.InProgress:
		resp = fail(contract.RequestInProgress, "a request with this Idempotency-Key is still in progress; retry after the delay with the same key and body")
		resp.Headers.Set(policy.HRetryAfter, "2")
	case ledgerq.Conflict:
		resp = fail(contract.IdempotencyConflict, "this Idempotency-Key was used with a different request")
	case ledgerq.FailedBefore:
		resp = fail(contract.IdempotencyFailed, "the earlier attempt with this Idempotency-Key failed and was refunded; use a new key")
	case ledgerq.Insufficient:
		resp = fail(contract.InsufficientCredits, "the account's credit balance ("+strconv.FormatInt(r.Balance, 10)+") is below the cost of this request")
	case ledgerq.Replay:
		resp = replay(&r.Replay)
	}
	r.Rate.SetHeaders(&resp.Headers)
	return resp, true
}

// replay answers with a retained success (spec §3.1): its status, body and
// allowed headers, the original request id, and nothing charged. A record
// retained by an earlier build, in an earlier envelope format, replays as
// legacy-cache (spec §4.8, §9.8; ledgerq.EnvelopeFormat).
func replay(k *ledgerq.Retained) abi.Response {
	resp := abi.Response{Status: k.Status, Body: k.Body}
	resp.Headers = append(resp.Headers, k.Headers...)
	resp.Headers.Set(policy.HRequestID, k.RequestID)
	resp.Headers.Set("x-idempotency-replayed", "true")
	mode := k.Mode
	if k.Format < ledgerq.EnvelopeFormat {
		mode = ledgerq.ModeLegacyCache
	}
	resp.Headers.Set(policy.HResponseMode, mode)
	resp.Headers.Set(policy.HServiceCredits, "0")
	return resp
}

// settle records the outcome. A ledger that is away for a moment (a
// restart takes seconds) is retried with jittered backoff until until, which
// leaves the request time to answer before its deadline; a retry that finds
// a success already settled reads whether an earlier try, whose answer was
// lost, charged it. It returns the
// X-Service-Credits value, or false when the outcome could not be recorded:
// a success another host already reconciled (its lease had ended by that
// host's clock, or this host was paused past it) is refunded and its key
// failed, so it is not recorded either.
func settle(env *platform.Env, st *ledgerq.Settle, until time.Time) (string, bool) {
	var mine bool
	err := retrying(until, func(retry bool) error {
		var err error
		mine, err = ledgerq.SettleDecision(env.Ledger, st)
		if err == nil && st.OK && !mine && retry && !st.ReportsCharge() {
			// An earlier try may have committed and lost its answer.
			mine, err = ledgerq.Charged(env.Ledger, st.RequestID)
		}
		return err
	})
	if err == nil {
		switch {
		case st.OK && mine:
			return strconv.FormatInt(st.Cost, 10), true
		case st.OK:
			env.Error("success not recorded: the attempt was already reconciled (failed, refunded)")
			return "", false
		}
		return "0", true // refunded, now or by an earlier reconciliation
	}
	env.Error("settlement failed; the attempt will be reconciled", "error", err.Error())
	if err := ledgerq.ExpireLease(env.Ledger, st.RequestID); err != nil {
		env.Error("could not end the attempt's lease", "error", err.Error())
	}
	return "", false
}

// retrying runs try until it succeeds, with jittered backoff from 50 ms
// doubling to 1 s between tries, while the next try would still start
// before until; retry says whether an earlier try failed. It returns the
// last try's error.
func retrying(until time.Time, try func(retry bool) error) error {
	err := try(false)
	for wait := 50 * time.Millisecond; err != nil; wait = min(2*wait, time.Second) {
		pause := wait/2 + time.Duration(rand.Int64N(int64(wait/2)+1))
		if time.Now().Add(pause).After(until) {
			return err
		}
		time.Sleep(pause)
		err = try(true)
	}
	return nil
}

// unsettled answers a decision whose outcome could not be recorded. Its
// answer is not delivered: a success the ledger does not hold would later
// be reconciled as failed and refunded, and a resend of its key would then
// contradict it (409 idempotency_failed after a 200). So the caller learns
// that the charge is being reconciled, with no X-Service-Credits (spec §4.8,
// §7 rule 3), and a resend of the key tells the final state.
func unsettled(p *pending, hasKey bool) abi.Response {
	return reconciling(hasKey, p, "the outcome could not be recorded and is being reconciled")
}

// reconciling is 503 request_reconciliation_pending without
// X-Service-Credits (unknown, spec §4.8): what happened, and how the
// caller learns the outcome, by the key it sent or, without one, from its
// usage.
func reconciling(hasKey bool, p *pending, what string) abi.Response {
	how := "; the account's usage shows whether it was charged"
	if hasKey {
		how = "; resend the same request with the same Idempotency-Key to learn its final state"
	}
	resp := policy.Error(contract.RequestReconciliationPending, what+how)
	resp.Headers.Set(policy.HRetryAfter, "2")
	if p != nil {
		p.Rate.SetHeaders(&resp.Headers)
	}
	return resp
}

// reservationFailed answers a decision whose reservation got no answer
// from the ledger.
func reservationFailed(env *platform.Env, err error, hasKey bool) abi.Response {
	env.Error("reservation failed", "error", err.Error())
	if batch.OutcomeUnknown(err) {
		// The reservation may have committed: not "nothing was charged".
		// Its lease settles it (a refund: its upstream answer is not
		// delivered).
		return reconciling(hasKey, nil, "the ledger did not confirm this request's reservation; if it was recorded, it is refunded when its lease ends")
	}
	return fail(contract.LedgerUnavailable, "the ledger is unavailable; nothing was charged")
}

// fail is a platform error that charged nothing.
func fail(code contract.Code, message string) abi.Response {
	resp := policy.Error(code, message)
	resp.Headers.Set(policy.HServiceCredits, "0")
	return resp
}

// validIdempotencyKey: 1 to 255 visible ASCII characters (schema/errors.md).
func validIdempotencyKey(k string) bool {
	if len(k) == 0 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}
