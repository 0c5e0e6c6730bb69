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
//     every request per version and rolls the canary back by itself once
//     its error rate passes the release's bound after a minimum number of
//     requests.
//   - store.go: the desired state, kept in the ledger (table releases), so
//     every host of a fleet serves the same release and an operator changes
//     it with `gateway release …` while hosts run.
//   - table.go: the host side: loads module versions (from
//     GATEWAY_DATA_DIR/releases or the ledger), keeps a warm pool per
//     version, and applies the ledger's state every few seconds.
//   - http.go: the X-Function-Version header on every response and the
//     loopback-only metrics endpoint GET /_gateway/metrics.
package canary

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/policy"
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
	sum := sha256.Sum256(wasm)
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

// Bound says when a canary is rolled back without an operator: when more
// than MaxErrorRate of its requests failed, counted from the moment it
// started serving, once it has served at least MinSamples requests. The
// minimum keeps a single early failure from condemning a release.
type Bound struct {
	MaxErrorRate float64
	MinSamples   int64
}

// DefaultBound is used when an operator names none: 5% after 100 requests.
var DefaultBound = Bound{MaxErrorRate: 0.05, MinSamples: 100}

func (b Bound) exceeded(requests, errs int64) bool {
	return requests >= max(b.MinSamples, 1) && float64(errs) > b.MaxErrorRate*float64(requests)
}

// Rollback describes a canary rolled back because it passed its bound.
type Rollback struct {
	Canary   Version
	Since    int64 // when the canary started serving (unix ms), as in the ledger
	Requests int64 // canary requests counted against the bound
	Errors   int64 // of which failed
	Bound    Bound
}

// Reason is the sentence the ledger and the logs keep.
func (r Rollback) Reason() string {
	return fmt.Sprintf("error rate %d/%d above %.2f%% after at least %d requests",
		r.Errors, r.Requests, 100*r.Bound.MaxErrorRate, r.Bound.MinSamples)
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
	bound  Bound
	window *window // the canary's counters for the bound
}

// window counts a canary's requests since it started serving. It belongs
// to one canary version and start time, so ramping the share keeps it, and
// a new canary starts a new one.
type window struct {
	sha      string
	since    int64
	requests atomic.Int64
	errors   atomic.Int64
	tripped  atomic.Bool // the bound was passed: the canary must not serve again
}

// choose picks the variant for req and reports whether it is the canary.
func (p *plan) choose(function string, req *abi.Request) (*variant, bool) {
	if p.canary == nil {
		return p.stable, false
	}
	switch pin := strings.TrimSpace(req.Headers.Get(HeaderPin)); pin {
	case "":
	case "stable":
		return p.stable, false
	case "canary":
		return p.canary, true
	default:
		if p.canary.version.matches(pin) {
			return p.canary, true
		}
		if p.stable.version.matches(pin) {
			return p.stable, false
		}
	}
	if Bucket(function, StickyKey(req)) < p.share {
		return p.canary, true
	}
	return p.stable, false
}

// Release serves one function: it implements server.Handler by passing each
// request to the stable or the canary version's pool.
type Release struct {
	function   string
	plan       atomic.Pointer[plan]
	rollbacks  atomic.Int64
	onRollback func(Rollback) // called once per rollback, on its own goroutine
	log        *slog.Logger
}

// Function is the name of the function the release serves.
func (r *Release) Function() string { return r.function }

// Handle serves req on the version the caller is assigned to, counts it for
// that version, and names the version in the X-Function-Version header. A
// failed canary request may roll the canary back; the request itself is
// answered as it was, never retried on stable, because it may have changed
// the ledger already.
func (r *Release) Handle(ctx context.Context, req *abi.Request) (abi.Response, error) {
	p := r.plan.Load()
	v, onCanary := p.choose(r.function, req)
	label := v.version.Label()
	if s := servedFrom(ctx); s != nil {
		s.Store(&label)
	}
	start := time.Now()
	resp, err := v.fn.Handle(ctx, req)
	o := judge(resp, err)
	v.stats.observe(time.Since(start), o)
	if onCanary && p.window != nil {
		r.count(p, o == failed)
	}
	if err == nil {
		resp.Headers.Set(HeaderVersion, label)
	}
	return resp, err
}

// judge classifies a finished request. A request the client abandoned is
// not the module's failure; a 5xx the function marked as the upstream's is
// counted apart, since a canary cannot be blamed for its upstream.
func judge(resp abi.Response, err error) outcome {
	switch {
	case err != nil && errors.Is(err, context.Canceled):
		return served
	case err != nil:
		return failed
	case resp.Status >= 500 && resp.Headers.Get(policy.HErrorSource) == policy.SourceUpstream:
		return upstreamFailed
	case resp.Status >= 500 || resp.Status < 100:
		return failed
	}
	return served
}

// count adds a canary request to the plan's window and rolls the canary back
// when the window passes the bound. Only the request that trips the window
// rolls back, so the rollback is counted and reported once.
func (r *Release) count(p *plan, failedRequest bool) {
	w := p.window
	n := w.requests.Add(1)
	e := w.errors.Load()
	if failedRequest {
		e = w.errors.Add(1)
	}
	if !p.bound.exceeded(n, e) || !w.tripped.CompareAndSwap(false, true) {
		return
	}
	rb := Rollback{Canary: p.canary.version, Since: w.since, Requests: n, Errors: e, Bound: p.bound}
	for {
		cur := r.plan.Load()
		if cur.canary == nil || cur.canary.version != rb.Canary {
			return // an operator changed the release meanwhile
		}
		next := *cur
		next.canary, next.share, next.window = nil, 0, nil
		if r.plan.CompareAndSwap(cur, &next) {
			break
		}
	}
	r.rollbacks.Add(1)
	r.log.Warn("canary rolled back", "function", r.function, "canary", rb.Canary.Label(), "reason", rb.Reason())
	if r.onRollback != nil {
		go r.onRollback(rb)
	}
}

// Rollbacks is how many times this host rolled a canary of the function
// back by itself.
func (r *Release) Rollbacks() int64 { return r.rollbacks.Load() }

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
