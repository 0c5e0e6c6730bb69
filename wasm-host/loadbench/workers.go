package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// burstSize is how many decisions the Workers case sends at once.
const burstSize = 200

// workersCase checks the Workers path: every function Worker in one
// `wrangler dev` (workerd, as `go run ./wrangler-compat/workers dev` runs
// them), its ledger on a real sqld, the same fake upstream answering after
// 1 s. Each round sends burstSize decisions at once to the proxy, then to
// the Workers, and waits for every answer; it counts 503 overloaded (a
// request that found every instance of its function busy until its
// deadline) and reports the memory of each Worker's isolate (isolates.go)
// and the peak RSS of the workerd that runs them all.
func (b *bench) workersCase(spec func(string, *ledgerDB) gatewaySpec) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	nodeBin := filepath.Join(root, "wrangler-compat", "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(nodeBin, "workerd")); err != nil {
		return fmt.Errorf("workers: %v (run scripts/install-node-tools.sh)", err)
	}
	dir := filepath.Join(b.dir, "workers")
	led, err := openLedger("sqld", filepath.Join(dir, "ledger"))
	if err != nil {
		return err
	}
	defer led.close()
	s := spec("workers-gateway", led)
	keys, err := s.provision(b.accounts)
	if err != nil {
		return err
	}
	out, err := generateWorkers(s, dir)
	if err != nil {
		return err
	}
	w, err := startWorkers(s, dir, out, nodeBin, keys[0], b.payloads["small"])
	if err != nil {
		return err
	}
	defer w.stop()
	prefix, err := deploymentPrefix(out)
	if err != nil {
		return err
	}
	workerd, targets := findWorkers(groupMembers(w.pid(), "workerd"), prefix)
	if workerd == 0 {
		return fmt.Errorf("workers: no workerd under wrangler dev serves an inspector that lists the Workers; log:\n%s", w.tail(20))
	}

	// Warm: instances are created inside requests, up to the pool's limit.
	b.up.setLatency(0)
	closedLoop(&load{url: "http://" + w.addr, keys: keys, body: b.payloads["small"], dur: max(b.warmup, time.Second), grace: 5 * time.Second}, closedConns)
	b.up.setLatency(slowLatency)
	resetPeak(workerd)
	watch := watchIsolates(targets)
	var px, wk []burstResult
	for i := 0; i < b.rounds; i++ {
		px = append(px, burst("http://"+b.proxy.addr, keys, b.payloads["small"]))
		b.up.waitIdle(5 * time.Second)
		wk = append(wk, burst("http://"+w.addr, keys, b.payloads["small"]))
		b.up.waitIdle(5 * time.Second)
		if b.verbose {
			fmt.Fprintf(b.out, "  workers round %d: proxy %s | workers %s\n", i+1, px[i], wk[i])
		}
	}
	peaks := watch.stop()
	fmt.Fprintf(b.out, "%-26s %d decisions at once, 1 s upstream, %d rounds: proxy %s | workers %s | %s | workerd (all %d Workers and wrangler's local services) peak RSS %s\n",
		"workers/burst200-1s", burstSize, len(wk), mergeBursts(px), mergeBursts(wk), isolatesLine(peaks), len(targets), fmtMiB(peakRSS(workerd)))
	return nil
}

// generateWorkers writes the Workers of every built function from the
// gateway's route table, offline flavour, and returns their directory.
func generateWorkers(s gatewaySpec, dir string) (string, error) {
	routes, err := exec.Command(s.bin, "routes").Output()
	if err != nil {
		return "", fmt.Errorf("gateway routes: %w", err)
	}
	routesFile := filepath.Join(dir, "routes.json")
	if err := os.WriteFile(routesFile, routes, 0o644); err != nil {
		return "", err
	}
	tool := filepath.Join(dir, "workers-tool")
	if b, err := exec.Command("go", "build", "-o", tool, "./wrangler-compat/workers").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build wrangler-compat/workers: %w\n%s", err, b)
	}
	out := filepath.Join(dir, "generated")
	cmd := exec.Command(tool, "generate", "-routes", routesFile, "-functions", s.functions, "-out", out, "-local")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("workers generate: %w\n%s", err, b)
	}
	return out, nil
}

// startWorkers runs `workers dev` on the generated Workers with the
// gateway's settings as their env file, and waits for a 2xx decision.
func startWorkers(s gatewaySpec, dir, out, nodeBin, key string, probe []byte) (*process, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := strings.Cut(addr, ":")
	var env strings.Builder
	for _, kv := range s.env(addr) {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "SERVICE_") || strings.HasPrefix(name, "UPSTREAM_") || name == "LIBSQL_URL" {
			env.WriteString(kv + "\n")
		}
	}
	envFile := filepath.Join(dir, "dev.env")
	if err := os.WriteFile(envFile, []byte(env.String()), 0o600); err != nil {
		return nil, err
	}
	// Offline, and with wrangler's state in the temporary directory.
	offline := []string{
		"WRANGLER_SEND_METRICS=false", "WRANGLER_SEND_ERROR_REPORTS=false", "CLOUDFLARE_CF_FETCH_ENABLED=false", "CI=true",
		"WRANGLER_LOG_PATH=" + filepath.Join(dir, "wrangler-logs"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"PATH=" + nodeBin + string(os.PathListSeparator) + os.Getenv("PATH"),
	}
	p, err := startGroup("wrangler dev", filepath.Join(dir, "wrangler.log"), addr, offline,
		filepath.Join(dir, "workers-tool"), "dev", "-out", out, "-env-file", envFile, "-port", port)
	if err != nil {
		return nil, err
	}
	if _, err := p.waitReady(decisionProbe("http://"+addr, key, probe), 50*time.Millisecond, 120*time.Second); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// groupMembers returns the pids of the processes named comm in pgid's
// process group.
func groupMembers(pgid int, comm string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		lp, rp := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if lp < 0 || rp < lp {
			continue
		}
		f := strings.Fields(s[rp+1:]) // state ppid pgrp …
		if len(f) > 2 && s[lp+1:rp] == comm && f[2] == strconv.Itoa(pgid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// burstResult is what one burst of decisions got back.
type burstResult struct {
	ok, overloaded int
	other          map[string]int // other answers, by status and error code
	p50, p99, last time.Duration
}

func (r burstResult) String() string {
	s := fmt.Sprintf("2xx %d, 503 overloaded %d", r.ok, r.overloaded)
	var keys []string
	for k := range r.other {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s += fmt.Sprintf(", %s×%d", k, r.other[k])
	}
	return s + fmt.Sprintf(", p50 %s p99 %s, all answered after %s", fmtDur(r.p50), fmtDur(r.p99), fmtDur(r.last))
}

// mergeBursts sums the rounds' counts and takes the medians of their times.
func mergeBursts(rs []burstResult) burstResult {
	m := burstResult{other: map[string]int{}}
	var p50, p99, last []float64
	for _, r := range rs {
		m.ok += r.ok
		m.overloaded += r.overloaded
		for k, n := range r.other {
			m.other[k] += n
		}
		p50, p99, last = append(p50, float64(r.p50)), append(p99, float64(r.p99)), append(last, float64(r.last))
	}
	m.p50, m.p99, m.last = time.Duration(median(p50)), time.Duration(median(p99)), time.Duration(median(last))
	return m
}

// burst sends burstSize decisions at the same moment and waits for every
// answer (up to the gateway's default 60 s deadline and a margin).
func burst(url string, keys []string, body []byte) burstResult {
	c, t := client(burstSize)
	defer t.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r := burstResult{other: map[string]int{}}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		lats []time.Duration
	)
	start := time.Now()
	gate := make(chan struct{})
	for i := 0; i < burstSize; i++ {
		wg.Add(1)
		go func(key string) {
			defer wg.Done()
			<-gate
			resp, err := c.Do(decisionRequest(ctx, url, key, body))
			var outcome string
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				outcome = strconv.Itoa(resp.StatusCode) + " " + resp.Header.Get("X-Service-Error-Code")
			} else {
				outcome = "no answer"
			}
			d := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && resp.StatusCode/100 == 2:
				r.ok++
				lats = append(lats, d)
			case outcome == "503 overloaded":
				r.overloaded++
			default:
				r.other[strings.TrimSpace(outcome)]++
			}
			r.last = max(r.last, d)
		}(keys[i%len(keys)])
	}
	close(gate)
	wg.Wait()
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	if n := len(lats); n > 0 {
		r.p50, r.p99 = lats[(n-1)/2], lats[(n*99+99)/100-1]
	}
	return r
}
