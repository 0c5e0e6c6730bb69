package interrupt

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/testenv"
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
// close-on-context-done ("close"), and this package's budget with a yield
// that looks at the context ("budget"). Each iteration makes one call of
// each and times them separately, so the figures and their ratios come
// from one run under the same machine load; the figures are medians of the
// calls' times, which a shared machine's pauses move less than means.
// Every call gets a cancellable context, like a request with a deadline.
func BenchmarkGuestCall(b *testing.B) {
	for _, c := range []struct {
		name, module string
		req          abi.Request
	}{
		// A tight arithmetic loop: the worst case for a per-iteration check.
		{"spin", "testguests/testguest.wasm", abi.Request{Path: "/spin", Query: "n=100000"}},
		// A byte search: the loop a JSON parser runs over a string's bytes
		// (fastjson's strings.IndexByte), 4 KiB of text 16 times.
		{"scan", "testguests/testguest.wasm", abi.Request{Path: "/scan", Query: "n=16", Body: bytes.Repeat([]byte("a question "), 4096/11)}},
		// A real route: settings, JSON writing.
		{"config", "functions/config.wasm", benchConfigRequest()},
	} {
		b.Run(c.name, func(b *testing.B) {
			in := testenv.Wasm(b, c.module)
			none := instantiate(b, newRuntime(b, false), in)
			closing := instantiate(b, newRuntime(b, true), in)
			budget := instantiate(b, newRuntime(b, false), mustInstrument(b, in))
			call := func(mod api.Module) time.Duration {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				t0 := time.Now()
				resp, err := handle(ctx, mod, &c.req)
				d := time.Since(t0)
				if err != nil || resp.Status != 200 {
					b.Fatalf("status %d, %v", resp.Status, err)
				}
				return d
			}
			var tNone, tClose, tBudget []time.Duration
			for b.Loop() {
				tNone = append(tNone, call(none))
				tClose = append(tClose, call(closing))
				tBudget = append(tBudget, call(budget))
			}
			mNone, mClose, mBudget := median(tNone), median(tClose), median(tBudget)
			b.ReportMetric(float64(mNone.Nanoseconds()), "none-ns/call")
			b.ReportMetric(float64(mClose.Nanoseconds()), "close-ns/call")
			b.ReportMetric(float64(mBudget.Nanoseconds()), "budget-ns/call")
			b.ReportMetric(float64(mClose)/float64(mNone), "close/none")
			b.ReportMetric(float64(mBudget)/float64(mNone), "budget/none")
		})
	}
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}
