// Package canary runs each function of the wazero host as a release: a
// stable module version and, optionally, a canary version that serves a
// share of callers, so a new build meets real traffic before everyone gets
// it.
//
// The parts, one file each:
//
//   - assign.go: which version a request gets. Callers are hashed by the
//     account they claim (shared/keys.AccountHint; the client address when
//     anonymous) into 10,000 buckets, so a caller stays on one version for as
//     long as the share does not shrink, and raising the share only moves
//     callers onto the canary. A request header pins a version for smoke
//     tests.
//   - canary.go: Release, the server.Handler of one function. It counts
//     every request per version (function time and queue wait apart) and,
//     while a rollout step has not been judged, gives a caller the canary
//     only with one of the step's fleet-wide admissions.
//   - rollout.go: the plan (steps, gates, pause) and the Policy a step is
//     judged by.
//   - samples.go: each host's outcome counts, written to the ledger
//     (release_samples) on every tick, so the analysis sees the fleet.
//   - analysis.go: what counts as an error, the verdict of a step against
//     stable over the same window, and Analyze, which any host runs on
//     every tick and which steps, promotes or rolls back, once.
//   - store.go, store_rollout.go: the desired state, kept in the ledger
//     (table releases), so every host of a fleet serves the same release
//     and an operator changes it with `gateway release …` while hosts run;
//     the admissions, the failed versions and the history.
//   - external.go: the same analysis for rollouts the hosts do not route
//     (Workers: `workers release watch`).
//   - table.go: the host side: loads module versions (from
//     GATEWAY_DATA_DIR/releases or the ledger), keeps a warm pool per
//     version, and ticks every few seconds: flush, analyse, apply.
//   - http.go, metrics.go: the X-Function-Version header on every response
//     and the loopback-only metrics endpoint GET /_gateway/metrics.
package canary

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/policy"
	"decisiongateway/wasm-host/runtime"
)

// Handler serves requests for one module version; a *runtime.Function is
// one. It has the shape of server.Handler, which Release implements too.
type Handler interface {
	Handle(ctx context.Context, req *abi.Request) (abi.Response, error)
}

// Version is one build of a function's module, named by its content, so the
// same bytes have the same name on every host and on Workers.
type Version struct {
	Function string
	SHA256   string // lower-case hex of the module bytes
}

// VersionOf names the module bytes wasm as a version of function.
func VersionOf(function string, wasm []byte) Version {
	return VersionOfSum(function, sha256.Sum256(wasm))
}

// VersionOfSum is VersionOf for a module whose SHA-256 the caller already
// has: a host hashes each module once on its way to the first answer.
func VersionOfSum(function string, sum [32]byte) Version {
	return Version{Function: function, SHA256: hex.EncodeToString(sum[:])}
}

// Short is the first 12 hex digits of the hash (48 bits): enough to tell a
// function's builds apart, short enough to read in a header.
func (v Version) Short() string {
	if len(v.SHA256) < 12 {
		return v.SHA256
	}
	return v.SHA256[:12]
}

// Label is how headers, metrics and logs name the version: function@short.
func (v Version) Label() string { return v.Function + "@" + v.Short() }

// matches reports whether a pin header value names this version.
func (v Version) matches(pin string) bool {
	return pin == v.Label() || pin == v.Short() || pin == v.SHA256
}

// variant is one version with its warm pool and its counters.
type variant struct {
	version Version
	fn      Handler
	stats   *Stats
}

// plan is what a Release serves. It is immutable once stored: a change is
// a new plan, swapped in atomically, so a request sees one consistent plan.
type plan struct {
	stable *variant
	canary *variant // nil: every request goes to stable
	share  int      // basis points of callers on the canary
	since  int64    // the rollout step's start (unix ms), 0 without a canary
	// limited: the step admits canary requests one by one from the ledger
	// until its sample is judged; full: this host was told it is full, so
	// it stops asking until the next plan.
	limited bool
	full    atomic.Bool
}

// choose picks the variant for req; onCanary says it is the canary, pinned
// that a pin header chose it.
func (p *plan) choose(function string, req *abi.Request) (v *variant, onCanary, pinned bool) {
	if p.canary == nil {
		return p.stable, false, false
	}
	switch pin := strings.TrimSpace(req.Headers.Get(HeaderPin)); pin {
	case "":
	case "stable":
		return p.stable, false, true
	case "canary":
		return p.canary, true, true
	default:
		if p.canary.version.matches(pin) {
			return p.canary, true, true
		}
		if p.stable.version.matches(pin) {
			return p.stable, false, true
		}
	}
	if Bucket(function, StickyKey(req)) < p.share {
		return p.canary, true, false
	}
	return p.stable, false, false
}

// Release serves one function: it implements server.Handler by passing each
// request to the stable or the canary version's pool.
type Release struct {
	function string
	plan     atomic.Pointer[plan]
	samples  recorder
	store    *Store
	// abandon settles a request's ledger attempt at once when the module
	// failed without answering (Options.Abandon).
	abandon func(ctx context.Context, requestID string)
	// kick asks for an analysis tick now: a canary request failed.
	kick func()
	log  *slog.Logger
}

// Function is the name of the function the release serves.
func (r *Release) Function() string { return r.function }

// Handle serves req on the version the caller is assigned to, counts it for
// that version, and names the version in the X-Function-Version header. A
// canary request of a step whose sample is not judged yet needs one of the
// step's fleet-wide admissions, or goes to stable: that is what bounds the
// callers an unjudged canary can reach. A failed request is answered as it
// was, never retried on stable, because it may have changed the ledger
// already.
func (r *Release) Handle(ctx context.Context, req *abi.Request) (abi.Response, error) {
	p := r.plan.Load()
	v, onCanary, pinned := p.choose(r.function, req)
	if onCanary && !pinned && !r.admit(ctx, p) {
		v, onCanary = p.stable, false
	}
	label := v.version.Label()
	if s := servedFrom(ctx); s != nil {
		s.Store(&label)
	}
	timing := new(runtime.Timing)
	start := time.Now()
	resp, err := v.fn.Handle(runtime.WithTiming(ctx, timing), req)
	queue := timing.Queue()
	fnTime := time.Since(start) - queue
	o := classify(resp, err)
	v.stats.observe(fnTime, queue, o)
	r.samples.add(sampleKey{sha: v.version.SHA256, since: p.since, at: start.Unix() / sampleBucket * sampleBucket}, o, fnTime, queue)
	if err != nil && r.abandon != nil && req.RequestID != "" {
		// The module stopped without answering (a trap, the deadline, the
		// client gone): an attempt it reserved would stay pending for its
		// whole lease, and the account's next requests, on either version,
		// would meet 503 request_reconciliation_pending meanwhile.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		r.abandon(actx, req.RequestID)
		cancel()
	}
	if onCanary && o == failed && r.kick != nil {
		r.kick()
	}
	if err == nil {
		resp.Headers.Set(HeaderVersion, label)
	}
	return resp, err
}

// admit reports whether a canary request may go to the canary: always when
// the step's sample was judged, otherwise when the ledger grants one of the
// step's admissions. A ledger that cannot be asked sends the request to
// stable, the version known to work.
func (r *Release) admit(ctx context.Context, p *plan) bool {
	if !p.limited {
		return true
	}
	if p.full.Load() || r.store == nil {
		return false
	}
	ok, err := r.store.admit(ctx, r.function, p.canary.version.SHA256, p.since)
	if err != nil {
		r.log.Warn("canary admission not granted: the ledger did not answer", "function", r.function, "error", err.Error())
		return false
	}
	if !ok {
		p.full.Store(true)
	}
	return ok
}

// classify tells how a finished request went, for the counters and the
// analysis (Counts says what each kind means for a verdict).
func classify(resp abi.Response, err error) outcome {
	switch {
	case err != nil && errors.Is(err, context.Canceled):
		return abandoned
	case err != nil:
		return failed
	case resp.Status >= 500 && resp.Headers.Get(policy.HErrorSource) == policy.SourceUpstream:
		return upstreamFailed
	case resp.Status >= 500 || resp.Status < 100:
		return failed
	case resp.Status >= 400:
		return clientError
	}
	return served
}

// Current returns the versions the release serves now: the stable one, the
// canary (nil when there is none) and the canary's share in basis points.
func (r *Release) Current() (stable Version, canary *Version, share int) {
	p := r.plan.Load()
	if p.canary != nil {
		c := p.canary.version
		canary = &c
	}
	return p.stable.version, canary, p.share
}
