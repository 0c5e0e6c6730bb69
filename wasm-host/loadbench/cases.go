package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// benchCase is one line of the report: a load shape run against the proxy
// and the gateway in interleaved rounds.
type benchCase struct {
	name    string
	ledger  string // "embedded" or "sqld"
	payload string
	latency time.Duration // of the fake upstream
	conns   int           // closed loop: concurrent clients
	rate    float64       // open loop: requests per second (then conns is unused)
	targets targets
}

// targets are the goals for a case; zero fields are not checked.
type targets struct {
	minRatio    float64       // throughput, gateway ÷ proxy
	maxAddedP50 time.Duration // gateway p50 − proxy p50
	maxAddedP99 time.Duration
	maxRSS      int64 // gateway peak RSS during the case
}

// Load shapes of the issue.
const (
	closedConns = 16  // closed loop, instant upstream
	manyClients = 500 // closed loop, slow upstream
	slowLatency = time.Second
	openRate    = 300 // open loop, requests per second
	// overRate is an open loop about 1.5 times what a host on 2 cores
	// serves of small decisions on the embedded ledger (about 4,000 a
	// second), overRateSqld on sqld (about 2,000); the proxy serves both.
	// The overload cases show what the gateway does with more than it can
	// serve (GATEWAY_QUEUE_TIMEOUT).
	overRate     = 6000
	overRateSqld = 3000
)

// loadCases lists every load case in run order: all cases of one ledger
// run against one gateway process. The many-clients case comes first, so
// its peak RSS is not the heap that large payloads left behind.
func loadCases() []benchCase {
	ms := time.Millisecond
	var cs []benchCase
	for _, led := range []string{"embedded", "sqld"} {
		closed := map[string]targets{
			"small":  {minRatio: 0.5, maxAddedP99: 2 * ms},
			"medium": {minRatio: 0.4},
			"large":  {minRatio: 0.25},
		}
		openP99 := 10 * ms
		if led == "sqld" {
			closed = map[string]targets{"small": {minRatio: 0.2}}
			openP99 = 25 * ms
		}
		cs = append(cs, benchCase{
			name: fmt.Sprintf("closed%d-1s/small/%s", manyClients, led), ledger: led, payload: "small",
			latency: slowLatency, conns: manyClients,
			targets: targets{minRatio: 0.95, maxAddedP50: 5 * ms, maxRSS: 512 << 20},
		})
		for _, p := range payloadSpecs {
			cs = append(cs, benchCase{
				name: fmt.Sprintf("closed%d/%s/%s", closedConns, p.name, led), ledger: led, payload: p.name,
				conns: closedConns, targets: closed[p.name],
			})
		}
		for _, p := range payloadSpecs {
			cs = append(cs, benchCase{
				name: fmt.Sprintf("open%d/%s/%s", openRate, p.name, led), ledger: led, payload: p.name,
				rate: openRate, targets: targets{maxAddedP99: openP99},
			})
		}
		// No target of the issue's: the figures to read are the 2xx
		// answers' p99 (about the queue timeout at most, not the run's
		// length), the 503s, and the peak RSS.
		over := overRate
		if led == "sqld" {
			over = overRateSqld
		}
		cs = append(cs, benchCase{
			name: fmt.Sprintf("overload%d/small/%s", over, led), ledger: led, payload: "small", rate: float64(over),
		})
	}
	return cs
}

// overload reports whether c offers more than a host serves.
func (c benchCase) overload() bool { return strings.HasPrefix(c.name, "overload") }

// roundResult is one round of a case: each side's figures and peak RSS.
type roundResult struct {
	proxy, gateway       summary
	proxyRSS, gatewayRSS int64
	otherCPU             float64 // cores other processes used during the round
	// CPU per 2xx answer, in µs: the proxy's and the gateway's process,
	// and sqld's while the gateway ran (0 on the embedded ledger).
	proxyCPU, gatewayCPU, sqldCPU float64
	// The gateway's ledger writer during the round (from its metrics).
	ledger ledgerFigures
}

// runCase runs c's rounds (proxy, gateway, proxy, gateway, …) and prints
// its line.
func (b *bench) runCase(c benchCase, gw *process, keys []string) {
	b.up.setLatency(c.latency)
	l := load{keys: keys, body: b.payloads[c.payload], dur: b.duration, grace: c.latency + 2*time.Second}
	if c.latency > 0 {
		// Enough answers per client that the first and last (started
		// together, answered together) do not dominate.
		l.dur = max(2*b.duration, 5*c.latency)
		if b.stagger {
			l.stagger = c.latency
		}
	}
	sides := []struct {
		name string
		p    *process
	}{{"proxy", b.proxy}, {"gateway", gw}}
	// measure runs l against p. Besides the run and p's peak RSS it
	// returns the CPU time p and sqld spent on it: CPU per answer does not
	// move with the machine's speed the way throughput on a shared 2-core
	// box does, so it is the steadier figure for comparing two builds.
	// On the gateway it also returns what its ledger writer did (zero
	// when a scrape of its metrics failed).
	measure := func(p *process, l load) (r run, rss int64, cpu, sqldCPU float64, led ledgerCounts) {
		p.resetPeak()
		led0, scraped := ledgerCounts{}, p == gw
		if scraped {
			led0, scraped = scrapeLedger(p.addr)
		}
		cpu0, sqld0 := processCPU(p.pid()), b.sqldCPU()
		if c.rate > 0 {
			r = openLoop(&l, c.rate)
		} else {
			r = closedLoop(&l, c.conns)
		}
		rss = p.peakRSS()
		b.up.waitIdle(l.grace + 5*time.Second)
		cpu, sqldCPU = processCPU(p.pid())-cpu0, b.sqldCPU()-sqld0
		if scraped {
			if led1, ok := scrapeLedger(p.addr); ok {
				led = led1.since(led0)
			}
		}
		return r, rss, cpu, sqldCPU, led
	}
	if c.latency == 0 && b.warmup > 0 {
		for _, s := range sides {
			w := l
			w.url, w.dur = "http://"+s.p.addr, b.warmup
			measure(s.p, w)
		}
	}
	pids := []int{os.Getpid(), b.proxy.pid(), gw.pid(), b.sqldPID}
	var rounds []roundResult
	redone := 0
	for len(rounds) < b.rounds {
		var rr roundResult
		before := snapCPU(pids...)
		for _, s := range sides {
			m := l
			m.url = "http://" + s.p.addr
			r, rss, cpu, sqldCPU, led := measure(s.p, m)
			sum := summarise(r)
			if b.verbose && c.latency > 0 {
				fmt.Fprintf(b.out, "  %s %s by second of start: %s\n", c.name, s.name, bySecond(r))
			}
			if s.name == "proxy" {
				rr.proxy, rr.proxyRSS, rr.proxyCPU = sum, rss, perAnswer(cpu, sum.ok)
			} else {
				rr.gateway, rr.gatewayRSS, rr.ledger = sum, rss, ledgerWork(led, sum.ok)
				rr.gatewayCPU, rr.sqldCPU = perAnswer(cpu, sum.ok), perAnswer(sqldCPU, sum.ok)
			}
		}
		rr.otherCPU = otherCores(before, snapCPU(pids...))
		if b.verbose {
			fmt.Fprintf(b.out, "  %s round %d: proxy %s p50 %s p99 %s %.0fµs/2xx | gateway %s p50 %s p99 %s %.0fµs/2xx (sqld %.0fµs), ledger %s | other processes %.2f cores\n",
				c.name, len(rounds)+1, fmtRPS(rr.proxy.rps), rr.proxy.p50, rr.proxy.p99, rr.proxyCPU,
				fmtRPS(rr.gateway.rps), rr.gateway.p50, rr.gateway.p99, rr.gatewayCPU, rr.sqldCPU, rr.ledger, rr.otherCPU)
		}
		if rr.otherCPU > busyMachine && redone < b.busyRetries {
			// Another job took CPU during the round: its figures say more
			// about that job than about the gateway. Wait for a quieter
			// moment and run the round again.
			redone++
			waitQuiet(pids, 30*time.Second)
			continue
		}
		rounds = append(rounds, rr)
	}
	if !c.overload() {
		// The overload case's memory is what the requests it holds
		// cost (its own line), not the peak the issue bounds.
		b.noteRSS("proxy", rounds, func(r roundResult) int64 { return r.proxyRSS })
		b.noteRSS("gateway/"+c.ledger, rounds, func(r roundResult) int64 { return r.gatewayRSS })
	}
	fmt.Fprintln(b.out, caseLine(c, rounds, redone))
}

// perAnswer is CPU seconds spread over n answers, in µs (0 without answers).
func perAnswer(seconds float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return seconds / float64(n) * 1e6
}

func (b *bench) noteRSS(name string, rounds []roundResult, rss func(roundResult) int64) {
	for _, r := range rounds {
		b.peaks[name] = max(b.peaks[name], rss(r))
	}
}

// busyMachine is the CPU other processes may take during a round, in
// cores, before the round is run again or its case's line warns that the
// figures are disturbed.
const busyMachine = 0.1

// caseLine is the case's report: medians over rounds of each side's
// figures and of the per-round ratio and added latencies, each beside its
// target, then the peak RSS and every answer that was not a 2xx.
func caseLine(c benchCase, rounds []roundResult, redone int) string {
	var (
		pRPS, gRPS, ratio, add50, add99 []float64
		addLate50                       []float64
		lbLate                          bool
		p50, p99, g50, g99              []quantile
		pFail, gFail                    summary
		pRSS, gRSS                      int64
		lb50, lb99                      bool
		otherCPU                        float64
		pCPU, gCPU, sCPU, cpuRatio      []float64
		perTx, txPer                    []float64
	)
	for _, r := range rounds {
		pRPS, gRPS = append(pRPS, r.proxy.rps), append(gRPS, r.gateway.rps)
		if r.proxy.rps > 0 {
			ratio = append(ratio, r.gateway.rps/r.proxy.rps)
		}
		add50 = append(add50, float64(r.gateway.p50.d-r.proxy.p50.d))
		add99 = append(add99, float64(r.gateway.p99.d-r.proxy.p99.d))
		addLate50 = append(addLate50, float64(r.gateway.late50.d-r.proxy.late50.d))
		lbLate = lbLate || r.gateway.late50.lowerBound
		lb50 = lb50 || r.gateway.p50.lowerBound
		lb99 = lb99 || r.gateway.p99.lowerBound
		p50, p99 = append(p50, r.proxy.p50), append(p99, r.proxy.p99)
		g50, g99 = append(g50, r.gateway.p50), append(g99, r.gateway.p99)
		pFail.addFailures(r.proxy)
		gFail.addFailures(r.gateway)
		pRSS, gRSS = max(pRSS, r.proxyRSS), max(gRSS, r.gatewayRSS)
		otherCPU = max(otherCPU, r.otherCPU)
		pCPU, gCPU, sCPU = append(pCPU, r.proxyCPU), append(gCPU, r.gatewayCPU), append(sCPU, r.sqldCPU)
		if r.proxyCPU > 0 {
			cpuRatio = append(cpuRatio, (r.gatewayCPU+r.sqldCPU)/r.proxyCPU)
		}
		if r.ledger.txPer2xx > 0 {
			perTx, txPer = append(perTx, r.ledger.batchesPerTx), append(txPer, r.ledger.txPer2xx)
		}
	}
	t := c.targets
	var b strings.Builder
	fmt.Fprintf(&b, "%-26s proxy %s p50 %s p99 %s | gateway %s p50 %s p99 %s",
		c.name, fmtRPS(median(pRPS)), medianQ(p50), medianQ(p99), fmtRPS(median(gRPS)), medianQ(g50), medianQ(g99))
	r := median(ratio)
	fmt.Fprintf(&b, " | throughput %s", fmtRatio(r, t.minRatio, 2))
	if t.minRatio > 0 {
		b.WriteString(verdict(fmt.Sprintf("≥%.2f×", t.minRatio), r >= t.minRatio))
	}
	a50, a99 := time.Duration(median(add50)), time.Duration(median(add99))
	fmt.Fprintf(&b, " | added p50 %s", fmtAdded(a50, lb50))
	if t.maxAddedP50 > 0 {
		b.WriteString(verdict("≤"+fmtDur(t.maxAddedP50), !lb50 && a50 <= t.maxAddedP50))
	}
	if c.latency > 0 && c.rate == 0 && len(rounds) > 0 {
		// Clients that start together stay in step with an upstream whose
		// latency never varies; the herd of the start takes some cycles to
		// spread. The second half's figure is what remains after it, for
		// reading beside the whole run's, which the target judges.
		fmt.Fprintf(&b, " (second half %s)", fmtAdded(time.Duration(median(addLate50)), lbLate))
	}
	fmt.Fprintf(&b, " p99 %s", fmtAdded(a99, lb99))
	if t.maxAddedP99 > 0 {
		b.WriteString(verdict("≤"+fmtDur(t.maxAddedP99), !lb99 && a99 <= t.maxAddedP99))
	}
	fmt.Fprintf(&b, " | CPU per 2xx proxy %.0fµs gateway %.0fµs", median(pCPU), median(gCPU))
	if c.ledger == "sqld" {
		fmt.Fprintf(&b, " + sqld %.0fµs", median(sCPU))
	}
	if len(cpuRatio) > 0 {
		fmt.Fprintf(&b, " (%.1f×)", median(cpuRatio))
	}
	if len(perTx) > 0 {
		fmt.Fprintf(&b, " | ledger %s", ledgerFigures{median(perTx), median(txPer)})
	}
	fmt.Fprintf(&b, " | peak RSS proxy %s gateway %s", fmtMiB(pRSS), fmtMiB(gRSS))
	if t.maxRSS > 0 {
		b.WriteString(verdict("≤"+fmtMiB(t.maxRSS), gRSS <= t.maxRSS))
	}
	b.WriteString(" | not 2xx: ")
	pf, gf := pFail.failures(), gFail.failures()
	if pf == "" && gf == "" {
		b.WriteString("none")
	} else {
		fmt.Fprintf(&b, "proxy %s, gateway %s", orNone(pf), orNone(gf))
	}
	fmt.Fprintf(&b, " | other processes ≤%.2f cores", otherCPU)
	if redone > 0 {
		fmt.Fprintf(&b, " (%d busy rounds run again)", redone)
	}
	if otherCPU > busyMachine {
		b.WriteString(" MACHINE BUSY: figures disturbed")
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
