package runtime

import (
	"bytes"
	"context"
	"testing"
	"time"

	"decisiongateway/functions/config"
	"decisiongateway/shared/abi"
	"decisiongateway/testkit/testenv"
)

// The config function is the benchmark subject: a real route module whose
// handler also compiles natively. Both variants get the same services (an
// in-memory ledger answer), so the difference is the cost of the wasm
// boundary: encoding, the pooled instance, the guest's own code under wazero.

func benchConfigRequest() abi.Request {
	return abi.Request{Method: "GET", Path: "/api/service/config", RequestID: "bench",
		Headers: abi.Headers{{Name: "accept", Value: "application/json"}}}
}

// BenchmarkConfigCall compares a warm pooled call into config.wasm with the
// same handler called natively. Each iteration makes one call of each and
// times them separately, so both figures and their ratio come from one run
// under the same machine load.
func BenchmarkConfigCall(b *testing.B) {
	ctx := context.Background()
	e, err := NewEngine(ctx, Options{}, (&fakeServices{}).services())
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(ctx)
	m, err := e.Compile(ctx, "config", testenv.Wasm(b, "functions/config.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	f, err := NewFunction(ctx, m, 1, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	env := NativeEnv(ctx, (&fakeServices{}).services(), "bench")
	req := benchConfigRequest()
	var wasm, native time.Duration
	for b.Loop() {
		t0 := time.Now()
		resp, err := f.Handle(ctx, &req)
		t1 := time.Now()
		nresp := config.Handle(env, &req)
		t2 := time.Now()
		if err != nil || resp.Status != 200 || nresp.Status != 200 || !bytes.Equal(resp.Body, nresp.Body) {
			b.Fatalf("wasm %d %v, native %d", resp.Status, err, nresp.Status)
		}
		wasm += t1.Sub(t0)
		native += t2.Sub(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(wasm.Nanoseconds())/n, "wasm-ns/call")
	b.ReportMetric(float64(native.Nanoseconds())/n, "native-ns/call")
	b.ReportMetric(float64(wasm)/float64(native), "wasm/native")
}

// BenchmarkInstantiate measures creating one instance of config.wasm from
// its compiled module: what a cold pool slot costs.
func BenchmarkInstantiate(b *testing.B) {
	ctx := context.Background()
	e, err := NewEngine(ctx, Options{}, (&fakeServices{}).services())
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(ctx)
	m, err := e.Compile(ctx, "config", testenv.Wasm(b, "functions/config.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		inst, err := m.instantiate(ctx)
		if err != nil {
			b.Fatal(err)
		}
		inst.close(ctx)
	}
}

// BenchmarkCompile measures compiling a module in a fresh engine with an
// empty cache directory (cold) and with one an earlier start filled (warm),
// which is what a host restart costs: config.wasm, and decide.wasm, whose
// warm compile is most of the gateway's cold start (wazero validates and
// hashes the whole module before its cache answers).
func BenchmarkCompile(b *testing.B) {
	ctx := context.Background()
	for _, name := range []string{"config", "decide"} {
		wasm := testenv.Wasm(b, "functions/"+name+".wasm")
		compile := func(b *testing.B, dir string) {
			e, err := NewEngine(ctx, Options{CacheDir: dir}, (&fakeServices{}).services())
			if err != nil {
				b.Fatal(err)
			}
			if _, err := e.Compile(ctx, name, wasm); err != nil {
				b.Fatal(err)
			}
			e.Close(ctx)
		}
		b.Run(name+"/cold-cache", func(b *testing.B) {
			for b.Loop() {
				compile(b, b.TempDir())
			}
		})
		b.Run(name+"/warm-cache", func(b *testing.B) {
			dir := b.TempDir()
			compile(b, dir)
			for b.Loop() {
				compile(b, dir)
			}
		})
	}
}
