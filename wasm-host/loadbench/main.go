// Command loadbench measures the gateway (`bin/gateway serve`) against a
// bare httputil.ReverseProxy to the same fake vendor upstream, on the same
// machine, in one run: each case alternates rounds of proxy and gateway and
// reports medians of the per-round ratios (gateway ÷ proxy) and added
// latencies (gateway − proxy), beside the targets. It is a program,
// not a test: figures are read by people, never asserted.
//
//	go run ./wasm-host/loadbench [-cases REGEXP] [-rounds N] [-duration D] [-quick] [-v] [-workers]
//	loadbench proxy -addr A -upstream URL   (the baseline; the benchmark starts it)
//
// README, "Load benchmark", says what each case means.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"decisiongateway/testkit/netdelay"
)

// bench is one run's shared state.
type bench struct {
	rounds   int
	duration time.Duration
	warmup   time.Duration
	accounts int
	verbose  bool
	// busyRetries is how many rounds of a case may be run again because
	// other processes took CPU during them.
	busyRetries int
	dir         string // temporary files: logs, ledgers, caches
	out         io.Writer
	up          *fakeUpstream
	proxy       *process
	payloads    map[string][]byte
	peaks       map[string]int64 // peak RSS per process over the run
	sqldPID     int              // the ledger's server, when it is sqld
	// stagger spreads a slow-upstream case's closed-loop clients over one
	// upstream latency instead of starting them together (-stagger).
	stagger bool
	// ledgerRTT is the round trip added between the gateway and sqld
	// (-ledger-rtt): a relay in front of sqld holds each direction for half.
	ledgerRTT time.Duration
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "proxy" {
		if err := runProxy(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "loadbench proxy:", err)
			os.Exit(1)
		}
		return
	}
	if err := benchmark(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}

func benchmark(args []string) error {
	fs := flag.NewFlagSet("loadbench", flag.ContinueOnError)
	casesRE := fs.String("cases", ".", "regexp: run the cases whose name matches (closed16/…, closed500-1s/…, open300/…, coldstart, rss; workers/… with -workers)")
	rounds := fs.Int("rounds", 3, "interleaved rounds per case (proxy, gateway, proxy, gateway, …)")
	duration := fs.Duration("duration", 5*time.Second, "load per side per round (the 1 s upstream case runs max(2×, 5 s))")
	warmup := fs.Duration("warmup", 500*time.Millisecond, "unmeasured load per side before each instant-upstream case")
	quick := fs.Bool("quick", false, "a smoke run: 1 round of 1 s per case")
	accounts := fs.Int("accounts", 4, "accounts (one key each) the requests are spread over")
	busyRetries := fs.Int("busy-retries", 2, "rounds per case run again when other processes took CPU during them")
	workers := fs.Bool("workers", false, "also run the Workers case on wrangler dev (needs scripts/install-node-tools.sh)")
	verbose := fs.Bool("v", false, "print every round")
	keep := fs.Bool("keep", false, "keep the temporary directory (logs, ledgers)")
	stagger := fs.Bool("stagger", false, "start the 1 s upstream case's clients spread over one upstream latency, not together: a steady state instead of a herd that the fake upstream's exact latency keeps in step")
	ledgerRTT := fs.Duration("ledger-rtt", 0, "round-trip time added between the gateway and sqld, half each way, by a relay in front of sqld: a ledger in another zone or region (sqld cases only)")
	gatewayBin := fs.String("gateway", "bin/gateway", "the gateway binary (make build)")
	functions := fs.String("functions", "build/functions", "the function modules (make build)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	re, err := regexp.Compile(*casesRE)
	if err != nil {
		return err
	}
	if *rounds < 1 || *accounts < 1 || *duration <= 0 || *ledgerRTT < 0 {
		return fmt.Errorf("-rounds and -accounts must be at least 1, -duration positive, -ledger-rtt not negative")
	}
	b := &bench{rounds: *rounds, duration: *duration, warmup: *warmup, accounts: *accounts, verbose: *verbose, busyRetries: *busyRetries,
		stagger: *stagger, ledgerRTT: *ledgerRTT, out: os.Stdout, payloads: map[string][]byte{}, peaks: map[string]int64{}}
	if *quick {
		b.rounds, b.duration, b.warmup = 1, time.Second, 200*time.Millisecond
	}
	bin, err := filepath.Abs(*gatewayBin)
	if err != nil {
		return err
	}
	fns, err := filepath.Abs(*functions)
	if err != nil {
		return err
	}
	for _, p := range []string{bin, filepath.Join(fns, "decide.wasm")} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%v (run `make build` first)", err)
		}
	}
	if b.dir, err = os.MkdirTemp("", "loadbench-"); err != nil {
		return err
	}
	if *keep {
		fmt.Fprintln(os.Stderr, "loadbench: files kept in", b.dir)
	} else {
		defer os.RemoveAll(b.dir)
	}

	payloads, err := buildPayloads()
	if err != nil {
		return err
	}
	for _, p := range payloads {
		b.payloads[p.Name] = p.Body
	}
	if b.up, err = startUpstream(payloads); err != nil {
		return err
	}
	defer b.up.close()
	b.header(payloads)

	if b.proxy, err = startProxy(b.dir, b.up.URL); err != nil {
		return err
	}
	defer b.proxy.stop()
	if _, err := b.proxy.waitReady(decisionProbe("http://"+b.proxy.addr, "none", b.payloads["small"]), 5*time.Millisecond, 30*time.Second); err != nil {
		return err
	}

	byLedger := map[string][]benchCase{}
	var order []string
	for _, c := range loadCases() {
		if re.MatchString(c.name) {
			if byLedger[c.ledger] == nil {
				order = append(order, c.ledger)
			}
			byLedger[c.ledger] = append(byLedger[c.ledger], c)
		}
	}
	spec := func(name string, led *ledgerDB) gatewaySpec {
		dir := filepath.Join(b.dir, name)
		os.MkdirAll(dir, 0o755)
		return gatewaySpec{bin: bin, functions: fns, dataDir: dir, ledger: led, upstream: b.up.URL}
	}
	for _, kind := range order {
		if err := b.runLedger(kind, byLedger[kind], spec); err != nil {
			return err
		}
	}
	if re.MatchString("coldstart") {
		led, err := openLedger("embedded", filepath.Join(b.dir, "coldstart"))
		if err != nil {
			return err
		}
		if err := b.coldStart(spec("coldstart", led)); err != nil {
			return err
		}
	}
	if re.MatchString("rss") && len(b.peaks) > 0 {
		b.rssLine()
	}
	if *workers && re.MatchString("workers/burst200-1s") {
		if err := b.workersCase(spec); err != nil {
			return err
		}
	}
	return nil
}

// runLedger starts a ledger of kind and a gateway on it, runs the cases,
// and stops both.
func (b *bench) runLedger(kind string, cases []benchCase, spec func(string, *ledgerDB) gatewaySpec) error {
	led, err := openLedger(kind, filepath.Join(b.dir, "ledger-"+kind))
	if err != nil {
		return err
	}
	defer led.close()
	b.sqldPID = 0
	if led.sqld != nil {
		b.sqldPID = led.sqld.PID
		if b.ledgerRTT > 0 {
			relay, err := netdelay.Start(led.url, b.ledgerRTT/2)
			if err != nil {
				return err
			}
			defer relay.Close()
			led.url = relay.URL
		}
	}
	s := spec("gateway-"+kind, led)
	// Each case gets accounts of its own: a request cut at the end of a run
	// leaves its reservation pending, and the account's next decision after
	// the lease ends is refused (503 request_reconciliation_pending), which
	// would charge one case's cut to the next.
	keys, err := s.provision(b.accounts * len(cases))
	if err != nil {
		return err
	}
	b.up.setLatency(0)
	gw, _, err := s.start(filepath.Join(b.dir, "gateway-"+kind+".log"), keys[0], b.payloads["small"])
	if err != nil {
		return err
	}
	defer gw.stop()
	for _, p := range []*process{b.proxy, gw} {
		closedLoop(&load{url: "http://" + p.addr, keys: keys[:b.accounts], body: b.payloads["small"], dur: b.warmup, grace: time.Second}, closedConns)
	}
	for i, c := range cases {
		b.runCase(c, gw, keys[i*b.accounts:(i+1)*b.accounts])
		if !gw.running() {
			return fmt.Errorf("the gateway exited during %s; log:\n%s", c.name, gw.tail(20))
		}
	}
	if d := gw.logDigest(); d != "" {
		fmt.Fprintf(b.out, "%-26s %s\n", "gateway log/"+kind, d)
	}
	if n := b.up.unknown.Load(); n > 0 {
		fmt.Fprintf(b.out, "warning: the upstream got %d bodies without a payload marker\n", n)
	}
	return nil
}

// rssLine reports each process's peak RSS over all the cases it served
// but the overload ones.
func (b *bench) rssLine() {
	var parts []string
	for _, name := range []string{"proxy", "gateway/embedded", "gateway/sqld"} {
		if v, ok := b.peaks[name]; ok {
			parts = append(parts, name+" "+fmtMiB(v))
		}
	}
	worst := max(b.peaks["gateway/embedded"], b.peaks["gateway/sqld"])
	fmt.Fprintf(b.out, "%-26s %s | gateway%s | VmHWM, reset before each side's run\n",
		"rss", strings.Join(parts, " | "), verdict("≤512MiB", worst <= 512<<20))
}

// header prints what a reader needs to compare two runs: the commit, the
// machine, the settings and the payload sizes.
func (b *bench) header(payloads []payload) {
	commit, _ := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	dirty, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
	state := ""
	if len(strings.TrimSpace(string(dirty))) > 0 {
		state = " (with uncommitted changes)"
	}
	fmt.Fprintf(b.out, "loadbench %s: commit %s%s, %d CPUs, %s, load average %s, GATEWAY_POOL_SIZE=%s\n",
		time.Now().UTC().Format(time.RFC3339), strings.TrimSpace(string(commit)), state, runtime.NumCPU(), cpuModel(),
		loadAverage(), orDefault(os.Getenv("GATEWAY_POOL_SIZE")))
	starts := "together"
	if b.stagger {
		starts = "spread over " + slowLatency.String()
	}
	ledger := ""
	if b.ledgerRTT > 0 {
		ledger = ", sqld " + b.ledgerRTT.String() + " round trip away"
	}
	fmt.Fprintf(b.out, "rounds %d × %s per side (1 s upstream: %s, clients start %s%s), warm-up %s, %d accounts;",
		b.rounds, b.duration, max(2*b.duration, 5*slowLatency), starts, ledger, b.warmup, b.accounts)
	for _, p := range payloads {
		fmt.Fprintf(b.out, " %s %d B", p.Name, len(p.Body))
	}
	fmt.Fprintln(b.out)
	fmt.Fprintln(b.out, "figures: medians over rounds; throughput = 2xx/s; ratio = gateway ÷ proxy; added = gateway − proxy; ≥ marks a lower bound (requests unanswered at the cut)")
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
		}
	}
	return "unknown CPU"
}

func orDefault(v string) string {
	if v == "" {
		return "default"
	}
	return v
}
