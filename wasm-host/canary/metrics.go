package canary

import (
	"sync"
	"sync/atomic"
	"time"
)

// latencyBounds are the upper bounds, in seconds, of the latency histogram's
// buckets. They span a warm config read (well under a millisecond) to a
// decision waiting on a slow upstream (the default deadline is 60 s).
var latencyBounds = [...]float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Stats counts what one module version of one function served on this
// host. It counts for the life of the host, across promotions and
// rollbacks, so the failures of a canary that was rolled back stay visible
// after it stopped serving. The fleet's counts, which the analysis judges,
// are in the ledger (release_samples). Safe for concurrent use.
type Stats struct {
	requests atomic.Int64
	errors   atomic.Int64
	client   atomic.Int64 // 4xx answers
	upstream atomic.Int64 // 5xx answers blamed on the upstream, not counted as errors
	function histogram    // time in the function, the wait for an instance excluded
	queue    histogram    // the wait for a free instance
}

// histogram counts durations into latencyBounds.
type histogram struct {
	sumNanos atomic.Int64
	// buckets[i] counts durations no longer than latencyBounds[i] and
	// longer than the bound before; the last one counts the rest (+Inf).
	buckets [len(latencyBounds) + 1]atomic.Int64
}

func (h *histogram) observe(d time.Duration) {
	h.sumNanos.Add(int64(d))
	sec := d.Seconds()
	i := 0
	for i < len(latencyBounds) && sec > latencyBounds[i] {
		i++
	}
	h.buckets[i].Add(1)
}

// outcome is how a request ended, as far as a release is concerned.
type outcome uint8

const (
	served         outcome = iota
	failed                 // 5xx of the function or the platform, a trap, a timeout
	upstreamFailed         // a 5xx the function forwarded from the upstream
	clientError            // a 4xx
	abandoned              // the client went away before the answer
)

// judged reports whether the outcome counts in the error rate and the
// latency (Counts).
func (o outcome) judged() bool { return o == served || o == failed }

func (s *Stats) observe(fn, queue time.Duration, o outcome) {
	s.requests.Add(1)
	switch o {
	case failed:
		s.errors.Add(1)
	case upstreamFailed:
		s.upstream.Add(1)
	case clientError:
		s.client.Add(1)
	}
	s.function.observe(fn)
	s.queue.observe(queue)
}

// StatsSnapshot is a copy of a version's counters.
type StatsSnapshot struct {
	Requests int64 `json:"requests"`
	// Errors counts 5xx answers, traps and timeouts, except 5xx answers
	// marked X-Service-Error-Source: upstream, which say the upstream
	// failed rather than the module; those are in UpstreamErrors.
	Errors         int64 `json:"errors"`
	ClientErrors   int64 `json:"clientErrors"`
	UpstreamErrors int64 `json:"upstreamErrors"`
	// LatencySum and Buckets are the function's time; QueueSum and
	// QueueBuckets the wait for an instance before it.
	LatencySum   float64       `json:"latencySeconds"`
	QueueSum     float64       `json:"queueSeconds"`
	Buckets      []BucketCount `json:"buckets"`
	QueueBuckets []BucketCount `json:"queueBuckets"`
}

// BucketCount is one cumulative latency bucket, as in Prometheus: Count
// requests took at most LE seconds. The last bucket's LE is +Inf, written as
// 0 in JSON.
type BucketCount struct {
	LE    float64 `json:"le"`
	Count int64   `json:"count"`
}

func (h *histogram) snapshot() (float64, []BucketCount) {
	var out []BucketCount
	var cum int64
	for i := range h.buckets {
		cum += h.buckets[i].Load()
		le := 0.0 // +Inf
		if i < len(latencyBounds) {
			le = latencyBounds[i]
		}
		out = append(out, BucketCount{LE: le, Count: cum})
	}
	return time.Duration(h.sumNanos.Load()).Seconds(), out
}

// Snapshot copies the counters. Concurrent requests may land between the
// reads, so the copy can be off by the requests in flight; it never goes
// backwards.
func (s *Stats) Snapshot() StatsSnapshot {
	out := StatsSnapshot{
		Requests:       s.requests.Load(),
		Errors:         s.errors.Load(),
		ClientErrors:   s.client.Load(),
		UpstreamErrors: s.upstream.Load(),
	}
	out.LatencySum, out.Buckets = s.function.snapshot()
	out.QueueSum, out.QueueBuckets = s.queue.snapshot()
	return out
}

// registry holds the Stats of every version a host has run, by label.
type registry struct {
	mu       sync.Mutex
	versions map[string]*Stats
	order    []Version // first-seen order, for stable output
}

func (r *registry) stats(v Version) *Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.versions == nil {
		r.versions = map[string]*Stats{}
	}
	s, ok := r.versions[v.Label()]
	if !ok {
		s = &Stats{}
		r.versions[v.Label()] = s
		r.order = append(r.order, v)
	}
	return s
}

// of returns every version of function seen so far, oldest first.
func (r *registry) of(function string) []Version {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Version
	for _, v := range r.order {
		if v.Function == function {
			out = append(out, v)
		}
	}
	return out
}
