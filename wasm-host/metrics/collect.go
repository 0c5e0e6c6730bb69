package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"decisiongateway/wasm-host/runtime"
)

// Pool is one instance pool as a scrape sees it: a function's module
// version (function@sha, as in the release families) and its counters.
type Pool struct {
	Function, Version string
	Stats             runtime.Stats
}

// poolCollector reads the pools' counters at scrape time: the pools keep
// them as atomics already, so serving a request costs nothing more. Its
// sources are the host's built modules and, as the release table may add,
// the versions it runs besides.
type poolCollector struct {
	mu      sync.Mutex
	sources []func() []Pool
}

var poolDescs = struct {
	size, inUse, idle, peak, awaiting, created, discarded, recycled *prometheus.Desc
}{
	size:      poolDesc("gateway_pool_size", "Most instances the function's pool holds (GATEWAY_POOL_SIZE)."),
	inUse:     poolDesc("gateway_pool_instances_in_use", "Instances running a call now."),
	idle:      poolDesc("gateway_pool_instances_idle", "Warm instances waiting for a call."),
	peak:      poolDesc("gateway_pool_instances_in_use_peak", "Most instances in use at once since the host started."),
	awaiting:  poolDesc("gateway_pool_requests_awaiting", "Requests whose upstream call is in flight; they hold no instance."),
	created:   poolDesc("gateway_pool_instances_created_total", "Instances created (warm-up, growth, replacement)."),
	discarded: poolDesc("gateway_pool_instances_discarded_total", "Instances thrown away after a trap or a deadline."),
	recycled:  poolDesc("gateway_pool_instances_recycled_total", "Instances replaced because their memory passed the arena bound."),
}

func poolDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, []string{"function", "version"}, nil)
}

// WatchPools adds the pools that pools returns at each scrape. A version
// must come from one source only.
func (h *Host) WatchPools(pools func() []Pool) {
	h.pools.mu.Lock()
	h.pools.sources = append(h.pools.sources, pools)
	h.pools.mu.Unlock()
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	d := poolDescs
	for _, x := range []*prometheus.Desc{d.size, d.inUse, d.idle, d.peak, d.awaiting, d.created, d.discarded, d.recycled} {
		ch <- x
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	d := poolDescs
	c.mu.Lock()
	sources := c.sources[:len(c.sources):len(c.sources)]
	c.mu.Unlock()
	var pools []Pool
	for _, source := range sources {
		pools = append(pools, source()...)
	}
	for _, p := range pools {
		s := p.Stats
		for _, m := range []struct {
			desc *prometheus.Desc
			kind prometheus.ValueType
			v    float64
		}{
			{d.size, prometheus.GaugeValue, float64(s.Size)},
			{d.inUse, prometheus.GaugeValue, float64(s.InUse)},
			{d.idle, prometheus.GaugeValue, float64(s.Idle)},
			{d.peak, prometheus.GaugeValue, float64(s.PeakInUse)},
			{d.awaiting, prometheus.GaugeValue, float64(s.Awaiting)},
			{d.created, prometheus.CounterValue, float64(s.Created)},
			{d.discarded, prometheus.CounterValue, float64(s.Discarded)},
			{d.recycled, prometheus.CounterValue, float64(s.Recycled)},
		} {
			ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.v, p.Function, p.Version)
		}
	}
}

// CreditSums reads the credit entries appended since the entry numbered
// after (0: since the ledger began): the sum of |delta| per kind, and the
// highest entry number read.
type CreditSums func(ctx context.Context, after int64) (sums map[string]int64, last int64, err error)

// creditCollector follows the ledger's append-only credit entries: each
// scrape reads only the entries added since the last one, so a scrape
// costs a range read, not a sum over the whole ledger.
type creditCollector struct {
	read CreditSums
	desc *prometheus.Desc

	mu     sync.Mutex
	last   int64
	totals map[string]int64
	failed func(error)
}

// creditKinds are the kinds of schema/migrations/0002 (credit_entries.kind),
// always reported, so a rate over a kind with no entries yet is 0, not absent.
var creditKinds = []string{"welcome", "grant", "reserve", "refund"}

// WatchCredits adds gateway_ledger_credits_total, read with read at each
// scrape; failed is told of a read that failed (the previous totals are
// served again).
func (h *Host) WatchCredits(read CreditSums, failed func(error)) error {
	return h.reg.Register(&creditCollector{
		read: read, failed: failed, totals: map[string]int64{},
		desc: prometheus.NewDesc("gateway_ledger_credits_total",
			"Credits moved by the ledger's credit entries, by kind (welcome, grant, reserve, refund), over the whole ledger: every host sharing it reports the same totals. Charged so far = reserve - refund - credits of pending attempts.",
			[]string{"kind"}, nil),
	})
}

func (c *creditCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *creditCollector) Collect(ch chan<- prometheus.Metric) {
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
	for _, k := range creditKinds {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(c.totals[k]), k)
	}
}
