package canary

import (
	"context"
	"sync"
	"time"

	"decisiongateway/shared/abi"
)

// sampleBucket is the width of a release_samples row.
const sampleBucket = 10 // seconds

// sampleKey is one row of release_samples, less the function.
type sampleKey struct {
	sha   string
	since int64 // the step the request was served under (0: no canary)
	at    int64 // unix seconds, a multiple of sampleBucket
}

type sampleSum struct {
	requests, errors, client, upstream, judged int64
	fnUS, queueUS                              int64
}

// recorder holds a host's outcomes of one function until the next flush
// writes them to the ledger, where the fleet's analysis adds them up.
type recorder struct {
	mu      sync.Mutex
	pending map[sampleKey]*sampleSum
}

func (r *recorder) add(k sampleKey, o outcome, fn, queue time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		r.pending = map[sampleKey]*sampleSum{}
	}
	s := r.pending[k]
	if s == nil {
		s = &sampleSum{}
		r.pending[k] = s
	}
	s.requests++
	s.queueUS += queue.Microseconds()
	switch o {
	case failed:
		s.errors++
	case clientError:
		s.client++
	case upstreamFailed:
		s.upstream++
	}
	if o.judged() {
		s.judged++
		s.fnUS += fn.Microseconds()
	}
}

// take empties the recorder.
func (r *recorder) take() map[sampleKey]*sampleSum {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.pending
	r.pending = nil
	return m
}

// putBack returns samples a failed flush could not write, for the next one.
func (r *recorder) putBack(m map[sampleKey]*sampleSum) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		r.pending = map[sampleKey]*sampleSum{}
	}
	for k, s := range m {
		if p := r.pending[k]; p != nil {
			p.requests += s.requests
			p.errors += s.errors
			p.client += s.client
			p.upstream += s.upstream
			p.judged += s.judged
			p.fnUS += s.fnUS
			p.queueUS += s.queueUS
		} else {
			r.pending[k] = s
		}
	}
}

// Flush writes every function's outcomes counted since the last flush to
// the ledger, in one batch, so the analysis of any host sees them. Hosts
// flush on every poll; tests flush to drive the analysis.
func (t *Table) Flush(ctx context.Context) error {
	type taken struct {
		r *Release
		m map[sampleKey]*sampleSum
	}
	var all []taken
	var stmts []abi.Statement
	for _, r := range t.functions() {
		m := r.samples.take()
		if len(m) == 0 {
			continue
		}
		all = append(all, taken{r, m})
		for k, s := range m {
			stmts = append(stmts, abi.Statement{
				SQL: `INSERT INTO release_samples (function, sha256, since, at, requests, errors, client_errors, upstream_errors, judged, fn_us, queue_us)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (function, sha256, since, at) DO UPDATE SET requests = requests + excluded.requests, errors = errors + excluded.errors,
    client_errors = client_errors + excluded.client_errors, upstream_errors = upstream_errors + excluded.upstream_errors,
    judged = judged + excluded.judged, fn_us = fn_us + excluded.fn_us, queue_us = queue_us + excluded.queue_us`,
				Args: []abi.Value{abi.String(r.function), abi.String(k.sha), abi.Int64(k.since), abi.Int64(k.at),
					abi.Int64(s.requests), abi.Int64(s.errors), abi.Int64(s.client), abi.Int64(s.upstream), abi.Int64(s.judged),
					abi.Int64(s.fnUS), abi.Int64(s.queueUS)},
			})
		}
	}
	if len(stmts) == 0 {
		return nil
	}
	if _, err := t.store.exec(ctx, stmts...); err != nil {
		for _, a := range all {
			a.r.samples.putBack(a.m)
		}
		return err
	}
	return nil
}
