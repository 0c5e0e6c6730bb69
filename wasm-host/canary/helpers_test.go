package canary_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/keys"
	"decisiongateway/testkit/sqldtest"
	"decisiongateway/testkit/testenv"
	"decisiongateway/wasm-host/canary"
	"decisiongateway/wasm-host/ledger"
	"decisiongateway/wasm-host/routes"
	"decisiongateway/wasm-host/runtime"
	"decisiongateway/wasm-host/server"
)

// function is the name the two test builds are released under, the one
// they declare (their FUNCTION files, scripts/build-functions.sh).
const function = "config"

// host is a wazero host serving one function, built from canaryv1, as a
// release: real modules, a real ledger, the real HTTP server.
type host struct {
	url     string
	handler http.Handler
	table   *canary.Table
	store   *canary.Store
	v1, v2  []byte
}

func startHost(t *testing.T) *host {
	t.Helper()
	return startHostOn(t, "file:"+filepath.Join(t.TempDir(), "ledger.db"), nil)
}

// startFleet starts n hosts sharing one real sqld, as a fleet shares its
// ledger; each has its own engine, pools and counters, as separate
// processes would.
func startFleet(t *testing.T, n int) []*host {
	t.Helper()
	url := sqldtest.Start(t)
	var hosts []*host
	for range n {
		hosts = append(hosts, startHostOn(t, url, nil))
	}
	return hosts
}

// startHostOn starts a host on the ledger at url; abandon, when set, is
// its canary.Options.Abandon.
func startHostOn(t *testing.T, url string, abandon func(context.Context, string)) *host {
	t.Helper()
	ctx := context.Background()
	led, err := ledger.OpenWith(ctx, url, "", ledger.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	if err := led.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	eng, err := runtime.NewEngine(ctx, runtime.Options{}, runtime.Services{
		Ledger: led.Exec,
		Fetch: func(context.Context, *abi.FetchRequest) abi.FetchResponse {
			return abi.FetchResponse{ErrKind: abi.FetchErrDenied}
		},
		AI: func(context.Context, *abi.AIRequest) abi.AIResponse {
			return abi.AIResponse{ErrKind: abi.FetchErrDenied}
		},
		Config: func(string) string { return "" },
		Log:    func(context.Context, string, string, *abi.LogRecord) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(ctx) })
	h := &host{v1: testenv.Wasm(t, "testguests/canaryv1.wasm"), v2: testenv.Wasm(t, "testguests/canaryv2.wasm")}
	m, err := eng.Compile(ctx, function, h.v1)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := runtime.NewFunction(ctx, m, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	log := slog.New(slog.DiscardHandler)
	h.table = canary.NewTable(canary.Options{Engine: eng, Ledger: led, DataDir: t.TempDir(), PoolSize: 4, Log: log, Abandon: abandon})
	t.Cleanup(h.table.Close)
	h.store = h.table.Store()
	srv := &server.Server{
		Routes:    []routes.Route{{Method: "GET", Pattern: "/:any", Function: function}},
		Functions: map[string]server.Handler{function: h.table.Add(function, canary.VersionOf(function, h.v1), pool)},
		Timeout:   10 * time.Second,
		Log:       log,
	}
	h.handler = h.table.Wrap(srv)
	hs := httptest.NewServer(h.handler)
	t.Cleanup(hs.Close)
	h.url = hs.URL
	return h
}

// wideOpen is a policy whose sample no assignment test fills, so every
// caller assigned to the canary is admitted.
var wideOpen = canary.Policy{MaxErrorRate: 0.05, MinSamples: 1 << 40, MaxLatencyRatio: 1.5}

// canary makes v2 the canary for share basis points, one step judged by
// policy, and applies it now.
func (h *host) canary(t *testing.T, share int, policy canary.Policy) canary.Version {
	t.Helper()
	return h.rollout(t, canary.Rollout{Steps: []canary.Step{{Share: share}}, Policy: policy})
}

// rollout starts a rollout of v2 and applies it now.
func (h *host) rollout(t *testing.T, r canary.Rollout) canary.Version {
	t.Helper()
	v, err := h.store.Canary(context.Background(), function, h.v2, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.table.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return v
}

// tick is one analysis round of a fleet, driven by the test: every host
// writes its outcomes, one analysis judges the fleet's counts, every host
// applies the result.
func tick(t *testing.T, hosts ...*host) []canary.Decision {
	t.Helper()
	ctx := context.Background()
	for _, h := range hosts {
		if err := h.table.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	d, err := hosts[0].store.Analyze(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		if err := h.table.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// account returns the n-th synthetic account id. Ids are derived from n, so
// the test's accounts (and its buckets) are the same on every run.
func account(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	sum := sha256.Sum256([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	id := make([]byte, 12)
	for i := range id {
		id[i] = alphabet[sum[i]&31]
	}
	return string(id)
}

type reply struct {
	status  int
	body    string
	version string
}

// get sends GET path with the given headers.
func (h *host) get(t *testing.T, path string, header ...string) reply {
	t.Helper()
	req, err := http.NewRequest("GET", h.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, string(b), resp.Header.Get("X-Function-Version")}
}

// asAccount sends GET path with a fresh API key of account acct.
func (h *host) asAccount(t *testing.T, path, acct string, header ...string) reply {
	t.Helper()
	return h.get(t, path, append([]string{"Authorization", "Bearer " + keys.New(keys.APIKey, acct)}, header...)...)
}

// metrics reads GET /_gateway/metrics?format=json.
func (h *host) metrics(t *testing.T) canary.FunctionMetrics {
	t.Helper()
	resp, err := http.Get(h.url + canary.MetricsPath + "?format=json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct{ Functions []canary.FunctionMetrics }
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || len(m.Functions) != 1 {
		t.Fatalf("metrics: %v %+v", err, m)
	}
	return m.Functions[0]
}

// versionMetrics finds one version's counters in fm.
func versionMetrics(t *testing.T, fm canary.FunctionMetrics, label string) canary.VersionMetrics {
	t.Helper()
	for _, v := range fm.Versions {
		if v.Version == label {
			return v
		}
	}
	t.Fatalf("metrics have no version %s: %+v", label, fm)
	return canary.VersionMetrics{}
}
