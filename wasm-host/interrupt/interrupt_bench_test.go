package interrupt

import (
	"context"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"

	"decisiongateway/shared/abi"
	"decisiongateway/wasm-host/testenv"
)

// BenchmarkInstrument measures what the host pays per module at start:
// instrumenting the largest route module.
func BenchmarkInstrument(b *testing.B) {
	wasm := testenv.Wasm(b, "functions/decide.wasm")
	b.SetBytes(int64(len(wasm)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Instrument(wasm); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGuestCall compares one warm guest call under the three ways to
// run it: no deadline enforcement at all ("none"), wazero's
// close-on-context-done ("close"), and this package's check with a
// watchdog armed per call as the host would ("interrupt"). Each iteration
// makes one call of each and times them separately, so the figures and
// their ratios come from one run under the same machine load. Every call
// gets a cancellable context, like a request with a deadline.
func BenchmarkGuestCall(b *testing.B) {
	for _, c := range []struct {
		name, module string
		req          abi.Request
	}{
		// A tight arithmetic loop: the worst case for a per-iteration check.
		{"spin", "testguests/testguest.wasm", abi.Request{Path: "/spin", Query: "n=100000"}},
		// A real route: settings, JSON writing.
		{"config", "functions/config.wasm", benchConfigRequest()},
	} {
		b.Run(c.name, func(b *testing.B) {
			in := testenv.Wasm(b, c.module)
			none := instantiate(b, newRuntime(b, false), in)
			closing := instantiate(b, newRuntime(b, true), in)
			instrumented := instantiate(b, newRuntime(b, false), mustInstrument(b, in))
			g := interruptOf(b, instrumented)
			call := func(mod api.Module, watchdog bool) time.Duration {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				t0 := time.Now()
				stop := func() bool { return true }
				if watchdog {
					stop = context.AfterFunc(ctx, func() { g.Set(1) })
				}
				resp, err := handle(ctx, mod, &c.req)
				stop()
				d := time.Since(t0)
				if err != nil || resp.Status != 200 {
					b.Fatalf("status %d, %v", resp.Status, err)
				}
				return d
			}
			var tNone, tClose, tInterrupt time.Duration
			for b.Loop() {
				tNone += call(none, false)
				tClose += call(closing, false)
				tInterrupt += call(instrumented, true)
			}
			n := float64(b.N)
			b.ReportMetric(float64(tNone.Nanoseconds())/n, "none-ns/call")
			b.ReportMetric(float64(tClose.Nanoseconds())/n, "close-ns/call")
			b.ReportMetric(float64(tInterrupt.Nanoseconds())/n, "interrupt-ns/call")
			b.ReportMetric(float64(tClose)/float64(tNone), "close/none")
			b.ReportMetric(float64(tInterrupt)/float64(tNone), "interrupt/none")
		})
	}
}
