package metrics

import (
	"bytes"
	"context"
	"sync"
	"time"

	"decisiongateway/wasm-host/runtime"
)

// Pool is one instance pool as a scrape sees it: a function's module
// version (function@sha, as in the release families) and its counters.
type Pool struct {
	Function, Version string
	Stats             runtime.Stats
}

// pools reads the pools' counters at scrape time: the pools keep them as
// atomics already, so serving a request costs nothing more. Its sources
// are the host's built modules and, as the release table may add, the
// versions it runs besides.
type pools struct {
	mu      sync.Mutex
	sources []func() []Pool
}

// poolFamilies are the pool families, each with how it reads a pool.
var poolFamilies = []struct {
	name, kind, help string
	value            func(runtime.Stats) int64
}{
	{"gateway_pool_size", "gauge", "Most instances the function's pool holds (GATEWAY_POOL_SIZE).", func(s runtime.Stats) int64 { return int64(s.Size) }},
	{"gateway_pool_instances_in_use", "gauge", "Instances running a call now.", func(s runtime.Stats) int64 { return int64(s.InUse) }},
	{"gateway_pool_instances_idle", "gauge", "Warm instances waiting for a call.", func(s runtime.Stats) int64 { return int64(s.Idle) }},
	{"gateway_pool_instances_in_use_peak", "gauge", "Most instances in use at once since the host started.", func(s runtime.Stats) int64 { return int64(s.PeakInUse) }},
	{"gateway_pool_requests_awaiting", "gauge", "Requests whose upstream call is in flight; they hold no instance.", func(s runtime.Stats) int64 { return int64(s.Awaiting) }},
	{"gateway_pool_instances_created_total", "counter", "Instances created (warm-up, growth, replacement).", func(s runtime.Stats) int64 { return int64(s.Created) }},
	{"gateway_pool_instances_discarded_total", "counter", "Instances thrown away after a trap or a deadline.", func(s runtime.Stats) int64 { return int64(s.Discarded) }},
	{"gateway_pool_instances_recycled_total", "counter", "Instances replaced because a call grew their memory past the recycle size.", func(s runtime.Stats) int64 { return int64(s.Recycled) }},
}

// WatchPools adds the pools that pools returns at each scrape. A version
// must come from one source only.
func (h *Host) WatchPools(pools func() []Pool) {
	h.pools.mu.Lock()
	h.pools.sources = append(h.pools.sources, pools)
	h.pools.mu.Unlock()
}

func (p *pools) write(b *bytes.Buffer) {
	p.mu.Lock()
	sources := p.sources[:len(p.sources):len(p.sources)]
	p.mu.Unlock()
	var all []Pool
	for _, source := range sources {
		all = append(all, source()...)
	}
	if len(all) == 0 {
		return
	}
	for _, f := range poolFamilies {
		header(b, f.name, f.kind, f.help)
		for _, pool := range all {
			sample(b, f.name, f.value(pool.Stats), "function", pool.Function, "version", pool.Version)
		}
	}
}

// CreditSums reads the credit entries appended since the entry numbered
// after (0: since the ledger began): the sum of |delta| per kind, and the
// highest entry number read.
type CreditSums func(ctx context.Context, after int64) (sums map[string]int64, last int64, err error)

// credits follows the ledger's append-only credit entries: each scrape
// reads only the entries added since the last one, so a scrape costs a
// range read, not a sum over the whole ledger.
type credits struct {
	read   CreditSums
	failed func(error)

	mu     sync.Mutex
	last   int64
	totals map[string]int64
}

// creditKinds are the kinds of schema/migrations/0002 (credit_entries.kind),
// always reported, so a rate over a kind with no entries yet is 0, not absent.
var creditKinds = []string{"welcome", "grant", "reserve", "refund"}

const creditsName = "gateway_ledger_credits_total"

// WatchCredits adds gateway_ledger_credits_total, read with read at each
// scrape; failed is told of a read that failed (the previous totals are
// served again). Call it once, before serving.
func (h *Host) WatchCredits(read CreditSums, failed func(error)) {
	h.credits = &credits{read: read, failed: failed, totals: map[string]int64{}}
}

func (c *credits) write(b *bytes.Buffer) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	sums, last, err := c.read(ctx, c.last)
	if err != nil {
		if c.failed != nil {
			c.failed(err)
		}
	} else if last > c.last {
		for k, v := range sums {
			c.totals[k] += v
		}
		c.last = last
	}
	header(b, creditsName, "counter", "Credits moved by the ledger's credit entries, by kind (welcome, grant, reserve, refund), over the whole ledger: every host sharing it reports the same totals. Charged so far = reserve - refund - credits of pending attempts.")
	for _, k := range creditKinds {
		sample(b, creditsName, c.totals[k], "kind", k)
	}
}

// Ledger is what WatchLedger reads of the ledger's writer at each scrape.
type Ledger struct {
	// RoundTrip is the shortest ping to the ledger's server since the host
	// started; 0 for a file, or before the first answer.
	RoundTrip time.Duration
	// Pipelined counts requests written before the answer to the one ahead.
	Pipelined int64
	// Batches, Transactions, Requests, Statements and Retries are the
	// writer's counts since the host started (wasm-host/ledger, Stats):
	// batches with an outcome, transactions committed, requests sent to a
	// server, statements run, and groups run again.
	Batches, Transactions, Requests, Statements, Retries int64
}

// WatchLedger adds the ledger writer's families (gateway_ledger_round_trip_seconds,
// gateway_ledger_pipelined_total, gateway_ledger_transactions_total, …),
// read with read at each scrape. Call it once, before serving.
func (h *Host) WatchLedger(read func() Ledger) {
	rtt := h.family("gateway_ledger_round_trip_seconds", "gauge",
		"Shortest WebSocket ping to the ledger's server since the host started (0 for a file, or before the first). From 0.001 the host writes ledger requests without waiting for the answers ahead (schema/ledger.md).")
	rtt.set.NewGauge(rtt.name, func() float64 { return read().RoundTrip.Seconds() })
	for _, c := range []struct {
		name, help string
		value      func(Ledger) int64
	}{
		{"gateway_ledger_pipelined_total", "Ledger requests written while an earlier one was still unanswered (a far ledger).",
			func(l Ledger) int64 { return l.Pipelined }},
		{"gateway_ledger_batches_total", "Ledger batches the writer gave an outcome, committed or failed, the host's own included.",
			func(l Ledger) int64 { return l.Batches }},
		{"gateway_ledger_transactions_total", "Ledger transactions committed. Batches per transaction is what group commit shares one commit among (schema/ledger.md).",
			func(l Ledger) int64 { return l.Transactions }},
		{"gateway_ledger_requests_total", "Requests sent to the ledger's server (0 for a file): with group commit, fewer than the batches.",
			func(l Ledger) int64 { return l.Requests }},
		{"gateway_ledger_statements_total", "SQL statements the ledger ran for this host, BEGIN and COMMIT included.",
			func(l Ledger) int64 { return l.Statements }},
		{"gateway_ledger_retries_total", "Groups of ledger batches run again: the database was locked by another host, the connection failed before COMMIT, or one batch's error sent the others round again without it.",
			func(l Ledger) int64 { return l.Retries }},
	} {
		f := h.family(c.name, "counter", c.help)
		f.set.NewGauge(f.name, func() float64 { return float64(c.value(read())) })
	}
}

// WatchConnections adds gateway_connections_open and
// gateway_connections_max, read with open at each scrape. Call it once,
// before serving.
func (h *Host) WatchConnections(open func() int64, max int) {
	o := h.family("gateway_connections_open", "gauge",
		"Client connections the host holds open now. At gateway_connections_max new connections wait in the listen backlog (GATEWAY_MAX_CONNECTIONS).")
	o.set.NewGauge(o.name, func() float64 { return float64(open()) })
	m := h.family("gateway_connections_max", "gauge",
		"GATEWAY_MAX_CONNECTIONS: the client connections the host keeps open at once.")
	m.set.NewGauge(m.name, func() float64 { return float64(max) })
}
