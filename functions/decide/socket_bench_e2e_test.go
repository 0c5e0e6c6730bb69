package decide_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/sqldtest"
	"decisiongateway/testkit/testenv"
	"decisiongateway/wasm-host/runtime"
)

// BenchmarkSocketBuild sets the socket build (schema/socket.md) against the
// ABI build in one run: each decide module's size, the time to make a warm
// instance of it (instantiate and _initialize, the module already compiled),
// and a decision's latency through the whole host, both hosts on the same
// real sqld and the same instant fake vendor, requests alternating between
// them.
func BenchmarkSocketBuild(b *testing.B) {
	root := testenv.Root(b)
	builds := []struct {
		name, dir string
		sockets   *runtime.Sockets
		env       map[string]string
	}{
		{"abi", "functions", nil, nil},
		{"socket", "functions-socket", &runtime.Sockets{}, map[string]string{"GATEWAY_MODULES": "socket"}},
	}
	// Reported after the loop: b.Loop's first call clears metrics.
	var sizes, starts []float64
	for _, bd := range builds {
		wasm, err := os.ReadFile(filepath.Join(root, "build", bd.dir, "decide.wasm"))
		if err != nil {
			b.Fatalf("%v (run `make build` first)", err)
		}
		sizes = append(sizes, float64(len(wasm))/1e6)
		starts = append(starts, float64(instantiation(b, bd.sockets, wasm).Microseconds()))
	}

	ledger := sqldtest.Start(b)
	var canned bytes.Buffer
	answerValid(headerSink{&canned}, []byte(simpleRequest))
	hosts := make([]*gateway, len(builds))
	keys := make([]string, len(builds))
	for i, bd := range builds {
		env := map[string]string{"SERVICE_RATE_LIMIT": "100000000", "SERVICE_AUTH_RATE_LIMIT": "100000000"}
		for k, v := range bd.env {
			env[k] = v
		}
		hosts[i] = startGateway(b, ledger, env)
		hosts[i].vendor.Handle(func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(canned.Bytes())
		})
		_, keys[i] = hosts[i].NewAccount(randomEmail(), 1_000_000_000)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	send := func(i int) time.Duration { return timedDecision(b, client, hosts[i].URL+"/v1/service", keys[i]) }
	for i := range builds { // each instance's first decision opens its connections
		send(i)
	}
	took := make([][]time.Duration, len(builds))
	for b.Loop() {
		for i := range builds {
			took[i] = append(took[i], send(i))
		}
	}
	for i, bd := range builds {
		b.ReportMetric(sizes[i], bd.name+"-MB")
		b.ReportMetric(starts[i], bd.name+"-instantiate-µs")
		p := percentiles(took[i])
		b.ReportMetric(float64(p[0].Microseconds()), bd.name+"-decision-p50-µs")
		b.ReportMetric(float64(p[1].Microseconds()), bd.name+"-decision-p99-µs")
	}
}

// instantiation is the median time to make a ready instance of a compiled
// module: what a pool pays for each instance it adds or recycles.
func instantiation(b *testing.B, sockets *runtime.Sockets, wasm []byte) time.Duration {
	ctx := context.Background()
	cache := filepath.Join(testenv.Root(b), "build", "test-data-socket", "wazero-cache")
	none := func(context.Context, *abi.Batch) abi.BatchResult { return abi.BatchResult{} }
	e, err := runtime.NewEngine(ctx, runtime.Options{CacheDir: cache, Sockets: sockets}, runtime.Services{
		Ledger: none,
		Fetch:  func(context.Context, *abi.FetchRequest) abi.FetchResponse { return abi.FetchResponse{} },
		AI:     func(context.Context, *abi.AIRequest) abi.AIResponse { return abi.AIResponse{} },
		Config: func(string) string { return "" },
		Log:    func(context.Context, string, string, *abi.LogRecord) {},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(ctx)
	m, err := e.Compile(ctx, "decide", wasm)
	if err != nil {
		b.Fatal(err)
	}
	var took []time.Duration
	for range 21 {
		start := time.Now()
		f, err := runtime.NewFunction(ctx, m, 1, 1)
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		f.Close()
	}
	return percentiles(took)[0]
}
