package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"decisiongateway/testkit/sqldtest"
)

// Settings of every gateway the benchmark starts. The limits are far above
// what a run can reach: a 429 or 402 in the output means the setup is
// wrong, not the gateway slow.
const (
	rateLimit   = "1000000000"
	credits     = 1_000_000_000_000 // accounts.MaxGrant: more than any run spends
	operatorKey = "loadbench-operator-key"
)

// ledgerDB is a fresh ledger: an embedded SQLite file or a real sqld.
type ledgerDB struct {
	kind string // "embedded" or "sqld"
	url  string // LIBSQL_URL
	sqld *sqldtest.Server
}

// openLedger creates an empty ledger of kind under dir.
func openLedger(kind, dir string) (*ledgerDB, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	switch kind {
	case "embedded":
		return &ledgerDB{kind: kind, url: "file:" + filepath.Join(dir, "ledger.db")}, nil
	case "sqld":
		bin, err := sqldtest.Binary()
		if err != nil {
			return nil, err
		}
		s, err := sqldtest.Launch(bin, filepath.Join(dir, "sqld"))
		if err != nil {
			return nil, err
		}
		return &ledgerDB{kind: kind, url: s.URL, sqld: s}, nil
	}
	return nil, fmt.Errorf("unknown ledger %q", kind)
}

func (l *ledgerDB) close() {
	if l.sqld != nil {
		l.sqld.Stop()
	}
}

// gatewaySpec is everything needed to start `bin/gateway serve`.
type gatewaySpec struct {
	bin       string // bin/gateway
	functions string // build/functions
	dataDir   string // GATEWAY_DATA_DIR: wazero's compilation cache
	ledger    *ledgerDB
	upstream  string // the fake upstream's root URL
}

// env is the gateway's environment on top of this process's: a vendor
// upstream at the fake, limits no run reaches, no welcome grant. Anything
// else (GATEWAY_POOL_SIZE, …) comes from the caller's environment.
func (g *gatewaySpec) env(addr string) []string {
	return []string{
		"SERVICE_ADDR=" + addr,
		"SERVICE_ORIGIN=http://" + addr,
		"LIBSQL_URL=" + g.ledger.url,
		"UPSTREAM_KIND=vendor",
		"UPSTREAM_URL=" + g.upstream + "/v1",
		"UPSTREAM_API_KEY=" + operatorKey,
		"SERVICE_RATE_LIMIT=" + rateLimit,
		"SERVICE_AUTH_RATE_LIMIT=" + rateLimit,
		"SERVICE_WELCOME_CREDITS=0",
		"GATEWAY_FUNCTIONS_DIR=" + g.functions,
		"GATEWAY_DATA_DIR=" + g.dataDir,
	}
}

// admin runs `bin/gateway admin ARGS…` on the ledger and returns the last
// line of its output.
func (g *gatewaySpec) admin(args ...string) (string, error) {
	cmd := exec.Command(g.bin, append([]string{"admin"}, args...)...)
	cmd.Env = append(os.Environ(), g.env("127.0.0.1:0")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("gateway admin %v: %w\n%s", args, err, out)
	}
	return lastLine(out), nil
}

// provision migrates the ledger and creates n accounts, each with one API
// key and credits no run can spend. Several accounts spread the per-account
// rows (rate window, balance) as real traffic from several customers does.
func (g *gatewaySpec) provision(n int) ([]string, error) {
	if _, err := g.admin("migrate"); err != nil {
		return nil, err
	}
	var keys []string
	for i := 0; i < n; i++ {
		email := "bench" + strconv.Itoa(i) + "@loadbench.invalid"
		key, err := g.admin("key", email, "loadbench")
		if err != nil {
			return nil, err
		}
		if _, err := g.admin("credits", email, strconv.FormatInt(credits, 10)); err != nil {
			return nil, err
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// start execs `bin/gateway serve` on a free port and waits for its first
// 2xx decision; it returns the process and that time from exec.
func (g *gatewaySpec) start(logPath, key string, probeBody []byte) (*process, time.Duration, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, 0, err
	}
	p, err := startProcess("gateway", logPath, addr, g.env(addr), g.bin, "serve")
	if err != nil {
		return nil, 0, err
	}
	ready, err := p.waitReady(decisionProbe("http://"+addr, key, probeBody), time.Millisecond, 60*time.Second)
	if err != nil {
		p.stop()
		return nil, 0, err
	}
	return p, ready, nil
}
