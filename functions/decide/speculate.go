package decide

import (
	"encoding/binary"
	"strconv"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/batch"
	"decisiongateway/shared/keys"
	"decisiongateway/shared/ledgerq"
	"decisiongateway/shared/platform"
	"decisiongateway/shared/policy"
	"decisiongateway/shared/upstream"
)

// Speculative decisions (schema/ledger.md, "Speculative decisions").
//
// A decision without an Idempotency-Key whose key, account and address the
// ledger allowed a moment ago on this host calls its upstream first and
// records the decision afterwards, reservation and settlement in one
// statement (ledgerq.RecordDecision): one ledger round trip instead of two.
// The statement decides exactly as the reservation would have; when it
// refuses (the key was revoked, the balance ran out, a window filled
// meanwhile), the caller gets that refusal and the upstream's answer is
// dropped: nothing is charged and nothing delivered, and what the
// speculation cost is one upstream call. So a decision speculates only
// when that is unlikely and worth it:
//
//   - the host's memo holds this key's last outcome, allowed, from the
//     current rate window and the last hintTTL; a refusal, an unknown key or
//     another window sends the decision the usual way;
//   - the balance it saw covers twice the cost of every decision this host
//     is running that way for the key, and the account's and the address's
//     windows have room for twice as many;
//   - where the ledger's round trip is at least a tenth of the upstream
//     call's (both measured here, latencyKey), no more than maxInflight of
//     the host's decisions are in flight that way;
//   - against a slower upstream (a model answering in seconds), no more
//     than burstStarts of the host's decisions started that way within the
//     same burstSlot, and no more than maxInflightSlow are in flight: a
//     burst that skipped the ledger would come back from its calls
//     together and reach the ledger all at once, where the rest of it,
//     reserving first, is spread out by the ledger's queue; decisions that
//     arrive spread out keep their spread and pay one round trip instead
//     of two.
//
// With an Idempotency-Key the claim must precede the call (a concurrent
// resend must not call the upstream again), and a signed-in caller
// (playground) has no key to remember: both always reserve first, as do
// hosts that keep no memo (the socket build).

const (
	// hintTTL bounds how old an outcome a decision may speculate on.
	hintTTL = 2 * time.Second
	// latencyTTL keeps the measured latencies while a host is idle.
	latencyTTL = time.Minute
	// latencyKey is the memo entry of the ledger's and the upstream's
	// moving averages, in microseconds.
	latencyKey = "latency"
	// inflightAll counts the host's decisions in flight without a
	// reservation, at most maxInflight against a fast upstream: their
	// records reach the ledger when their calls come back. On Workers,
	// where a burst of 200 all speculating held every instance of the
	// isolate in its records past the deadline, the rest of a burst
	// reserves first and is spread by the ledger.
	inflightAll = "inflight"
	maxInflight = 32
	// Against a slow upstream the calls are long, so many more are in
	// flight at once (500 clients of a model answering in a second), and
	// what must not happen is that many start, and so come back, at once:
	// at most burstStarts in a burstSlot (3,200 a second). Measured on
	// the sqld herd, alternated in one hour (wasm-host/loadbench/
	// MEASUREMENTS.md): 16, 32 and 64 gave p50 +5.7 to +7.3, +3.8 to +5.8
	// and +7.6 to +12.9 ms, against +12.1 to +13.1 ms with none
	// speculating; all of them speculating, +51 to +53 ms. However they
	// arrive, no more than maxInflightSlow are in flight that way: eight
	// of a writer's groups on sqld (wasm-host/ledger, defaultMaxGroup).
	burstStarts     = 32
	burstSlot       = 10 * time.Millisecond
	maxInflightSlow = 1024
)

// burstKey is the memo counter of the decisions that tried to speculate in
// now's burstSlot (one refused afterwards, by its balance or the in-flight
// bound, still counts: the bound errs towards reserving first).
func burstKey(now time.Time) string {
	return "burst:" + strconv.FormatInt(now.UnixNano()/int64(burstSlot), 10)
}

// hint is the last outcome of a key's decision on this host.
type hint struct {
	allowed              bool
	window               int64 // the rate window's start
	balance, count, auth int64 // after that decision
}

func hintKey(keyHash string) string     { return "hint:" + keyHash }
func inflightKey(keyHash string) string { return "inflight:" + keyHash }

func (h *hint) encode() []byte {
	b := make([]byte, 1, 33)
	if h.allowed {
		b[0] = 1
	}
	for _, v := range []int64{h.window, h.balance, h.count, h.auth} {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

func readHint(b []byte) (hint, bool) {
	if len(b) != 33 {
		return hint{}, false
	}
	v := func(i int) int64 { return int64(binary.LittleEndian.Uint64(b[1+8*i:])) }
	return hint{allowed: b[0] == 1, window: v(0), balance: v(1), count: v(2), auth: v(3)}, true
}

// remember keeps what the ledger just decided for keyHash.
func remember(env *platform.Env, keyHash string, r *ledgerq.Reservation) {
	if env.Memo == nil || keyHash == "" {
		return
	}
	h := hint{allowed: r.Outcome == ledgerq.Reserved, window: r.Rate.Window.Start, balance: r.Balance, count: r.Rate.Count, auth: r.Auth.Count}
	env.Memo.Put(hintKey(keyHash), h.encode(), hintTTL)
}

// measure folds the durations measured here (0: not measured) into the
// moving averages of the ledger's round trip and of the upstream call.
func measure(env *platform.Env, ledger, called time.Duration) {
	if env.Memo == nil || (ledger <= 0 && called <= 0) {
		return
	}
	var avg [2]int64
	if b := env.Memo.Get(latencyKey); len(b) == 16 {
		avg[0], avg[1] = int64(binary.LittleEndian.Uint64(b)), int64(binary.LittleEndian.Uint64(b[8:]))
	}
	for i, d := range [2]time.Duration{ledger, called} {
		if d <= 0 {
			continue
		}
		us := max(d.Microseconds(), 1)
		if avg[i] == 0 {
			avg[i] = us
			continue
		}
		// One sample moves the average by at most a third or so: a pause
		// (a collection, a busy core) does not turn speculation off or
		// on, and a new regime (a slower model) is reached within a few
		// dozen decisions.
		avg[i] += (min(max(us, avg[i]/4), 4*avg[i]) - avg[i]) / 8
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(avg[0]))
	env.Memo.Put(latencyKey, binary.LittleEndian.AppendUint64(b, uint64(avg[1])), latencyTTL)
}

// speculate reports whether this decision calls its upstream before
// reserving; when it does, it counts the decision in flight for keyHash
// (settled by Resume's record).
func speculate(env *platform.Env, d *decision, keyHash, idemKey string, cost int64, now time.Time) bool {
	if env.Memo == nil || keyHash == "" || idemKey != "" {
		return false
	}
	lat := env.Memo.Get(latencyKey)
	if len(lat) != 16 {
		return false
	}
	ledgerUs, upstreamUs := int64(binary.LittleEndian.Uint64(lat)), int64(binary.LittleEndian.Uint64(lat[8:]))
	if ledgerUs == 0 || upstreamUs == 0 {
		return false
	}
	h, ok := readHint(env.Memo.Get(hintKey(keyHash)))
	if !ok || !h.allowed || h.window != batch.WindowAt(now, time.Minute).Start {
		return false
	}
	limit := int64(maxInflight)
	if ledgerUs*10 < upstreamUs {
		if env.Memo.Add(burstKey(now), 1, time.Second) > burstStarts {
			return false
		}
		limit = maxInflightSlow
	}
	n := env.Memo.Add(inflightKey(keyHash), 1, d.settings.Lease())
	all := env.Memo.Add(inflightAll, 1, d.settings.Lease())
	if all <= limit && h.balance >= 2*n*cost && h.count+2*n <= int64(d.settings.RateLimit) && h.auth+2*n <= int64(d.settings.AuthRateLimit) {
		return true
	}
	unspeculate(env, d, keyHash)
	return false
}

// unspeculate counts a decision of keyHash out of those in flight without
// a reservation.
func unspeculate(env *platform.Env, d *decision, keyHash string) {
	env.Memo.Add(inflightKey(keyHash), -1, d.settings.Lease())
	env.Memo.Add(inflightAll, -1, d.settings.Lease())
}

// speculation is who a speculative decision is for, read once from its
// request when it resumes.
type speculation struct{ account, keyHash string }

// landed counts a speculative decision of req's key out of flight
// (speculate counted it in) and returns whose it is; nil when req's key is
// not the one its saved state was made for (account).
func landed(env *platform.Env, req *abi.Request, d *decision, account string) *speculation {
	tok, owner, refusal := policy.APIKey(req)
	if refusal != nil {
		return nil
	}
	keyHash := keys.Hash(tok)
	if env.Memo != nil {
		unspeculate(env, d, keyHash)
	}
	if owner != account {
		return nil
	}
	return &speculation{account: account, keyHash: keyHash}
}

// record finishes a speculative decision once its upstream answered (the
// call took called): a success is reserved and settled in one statement
// and delivered only if the reservation allowed it (otherwise the caller
// gets the refusal it would have had before the call, and the answer is
// dropped); a failure is reserved and refunded as any decision's.
func record(env *platform.Env, req *abi.Request, d *decision, p *pending, out *upstream.Outcome, s *speculation, called time.Duration) abi.Response {
	now := time.Now()
	var recorded time.Duration // the record's round trip, when it succeeded
	defer func() { measure(env, recorded, called) }()
	r := d.reserve(req, Caller{AccountID: s.account, Source: "api"}, s.keyHash, "", "", p.Cost, now)
	if !out.OK {
		res, err := ledgerq.ReserveDecision(env.Ledger, r)
		if err != nil {
			return reservationFailed(env, err, false)
		}
		remember(env, s.keyHash, &res)
		if resp, done := refuse(env, &res, s.account, now); done {
			return resp
		}
		p.Rate, p.Speculative = res.Rate, false
		return settleAndAnswer(env, req, d, p, out)
	}
	st := settlement(req, d, p, out, "")
	res, charged, err := recordRetrying(env, r, &st, p.settleBy(d.settings.RequestTimeout))
	if err != nil {
		env.Error("recording the decision failed", "error", err.Error())
		return reconciling(false, p, "the outcome could not be recorded")
	}
	recorded = time.Since(now)
	remember(env, s.keyHash, &res)
	if resp, done := refuse(env, &res, s.account, now); done {
		return resp
	}
	if !charged {
		return unsettled(p, false)
	}
	resp := answer(d, out)
	res.Rate.SetHeaders(&resp.Headers)
	resp.Headers.Set(policy.HServiceCredits, strconv.FormatInt(p.Cost, 10))
	return resp
}

// recordRetrying runs RecordDecision, and while the ledger fails retries
// it (retrying) until until. Before each retry it reads whether an earlier
// try committed and lost its answer: the attempt then exists, charged, and
// running the statement again would fail on its id.
func recordRetrying(env *platform.Env, r *ledgerq.Reserve, st *ledgerq.Settle, until time.Time) (ledgerq.Reservation, bool, error) {
	var (
		res     ledgerq.Reservation
		charged bool
	)
	err := retrying(until, func(retry bool) error {
		if retry {
			done, err := ledgerq.Charged(env.Ledger, r.RequestID)
			if err != nil {
				return err
			}
			if done {
				// The reservation allowed it, then: its counts are unknown.
				res, charged = ledgerq.Reservation{Outcome: ledgerq.Reserved, Rate: batch.Rate{Limit: int64(r.RateLimit), Window: batch.WindowAt(r.Now, time.Minute)}}, true
				return nil
			}
		}
		var err error
		res, charged, err = ledgerq.RecordDecision(env.Ledger, r, st)
		return err
	})
	return res, charged, err
}
