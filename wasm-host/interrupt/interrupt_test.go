package interrupt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/testenv"
)

// builtModules are every function module and test guest `make build` wrote.
func builtModules(t *testing.T) map[string][]byte {
	t.Helper()
	root := testenv.Root(t)
	var names []string
	for _, dir := range []string{"functions", "testguests"} {
		m, _ := filepath.Glob(filepath.Join(root, "build", dir, "*.wasm"))
		for _, p := range m {
			names = append(names, filepath.Join(dir, filepath.Base(p)))
		}
	}
	if len(names) < 2 {
		t.Fatalf("found %d modules under build/ (run `make build` first)", len(names))
	}
	mods := map[string][]byte{}
	for _, n := range names {
		mods[n] = testenv.Wasm(t, n)
	}
	return mods
}

func TestEveryBuiltModuleIsInstrumented(t *testing.T) {
	for name, in := range builtModules(t) {
		t.Run(name, func(t *testing.T) {
			out := mustInstrument(t, in)
			checkEveryLoopChecks(t, in, out)
			if again := mustInstrument(t, out); &again[0] != &out[0] {
				t.Fatal("instrumenting twice changed the module")
			}
			// Compiles and instantiates (with _initialize, which yields).
			var yields atomic.Int64
			instantiate(t, newHostRuntime(t, host{budget: DefaultBudget, onYield: func() { yields.Add(1) }}), out)
			if yields.Load() == 0 {
				t.Error("_initialize never yielded")
			}
			// The exports name the functions they did: the name section
			// was renumbered with the functions.
			ctx := context.Background()
			rt := wazero.NewRuntime(ctx)
			defer rt.Close(ctx)
			before, err := rt.CompileModule(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			after, err := rt.CompileModule(ctx, out)
			if err != nil {
				t.Fatal(err)
			}
			for export, d := range before.ExportedFunctions() {
				if got := after.ExportedFunctions()[export]; got.Name() != d.Name() || d.Name() == "" {
					t.Errorf("export %s: function %q, was %q", export, got.Name(), d.Name())
				}
			}
			if a, b := exportCount(t, out), exportCount(t, in); a != b {
				t.Errorf("%d exports, was %d", a, b)
			}
		})
	}
}

func TestInstrumentedGuestAnswersAsBefore(t *testing.T) {
	for _, c := range []struct {
		module string
		req    abi.Request
	}{
		{"testguests/testguest.wasm", abi.Request{Method: "PUT", Path: "/echo", Query: "a=1", RequestID: "r1",
			Headers: abi.Headers{{Name: "x-one", Value: "1"}}, Body: []byte("body")}},
		{"testguests/testguest.wasm", abi.Request{Path: "/big", Query: "n=100000"}},
		{"testguests/testguest.wasm", abi.Request{Path: "/spin", Query: "n=100000"}},
		{"functions/config.wasm", benchConfigRequest()},
	} {
		t.Run(c.module+c.req.Path, func(t *testing.T) {
			in := testenv.Wasm(t, c.module)
			rt := newRuntime(t, false)
			want, err := handle(context.Background(), instantiate(t, rt, in), &c.req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := handle(context.Background(), instantiate(t, rt, mustInstrument(t, in)), &c.req)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != want.Status || !bytes.Equal(got.Body, want.Body) || !slices.Equal(got.Headers, want.Headers) {
				t.Fatalf("instrumented: %d %q, original: %d %q", got.Status, got.Body, want.Status, want.Body)
			}
		})
	}
}

func TestSpinningGuestIsStoppedWithOneP(t *testing.T) {
	// The test guest's /spin with n=0 counts to 2^64. The runtime has no
	// close-on-context-done and there is one P, which the spinning guest
	// holds: no other goroutine runs unless the guest comes back to Go.
	// The deadline's timer fires, and the call returns, only because the
	// guest yields. Were it not to, the test would hang (to the test
	// binary's timeout).
	withGOMAXPROCS(t, 1)
	mod := instantiate(t, newRuntime(t, false), mustInstrument(t, testenv.Wasm(t, "testguests/testguest.wasm")))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := handle(ctx, mod, &abi.Request{Path: "/spin", Query: "n=0"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want one wrapping context.DeadlineExceeded", err)
	}
	t.Logf("stopped: %v", err)
}

func TestGarbageCollectionCompletesWhileAGuestSpins(t *testing.T) {
	// A collection stops the world: it waits for every goroutine, the one
	// running guest code included, to reach a preemption point. Guest code
	// has none, so without yields runtime.GC would wait for the spin to
	// end, forever. With one P the collector's goroutine also needs the
	// guest to let go of the P; with two it has a P, and only the stop of
	// the world is at stake.
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			withGOMAXPROCS(t, procs)
			// spinning is closed once this call has yielded 1000 times,
			// 16 million loop iterations: the guest is in its spin loop.
			var calling atomic.Bool
			var yields atomic.Int64
			spinning := make(chan struct{})
			rt := newHostRuntime(t, host{budget: DefaultBudget, onYield: func() {
				if calling.Load() && yields.Add(1) == 1000 {
					close(spinning)
				}
			}})
			mod := instantiate(t, rt, mustInstrument(t, testenv.Wasm(t, "testguests/testguest.wasm")))

			// The spin's context ends only when this test says so, after
			// the collection: the order is fixed by channels, not timing.
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			stopped := make(chan error, 1)
			calling.Store(true)
			go func() {
				_, err := handle(ctx, mod, &abi.Request{Path: "/spin", Query: "n=0"})
				stopped <- err
			}()
			<-spinning
			collected := make(chan struct{})
			go func() {
				runtime.GC()
				close(collected)
			}()
			select {
			case <-collected:
			case err := <-stopped:
				t.Fatalf("the spin stopped before its context ended: %v", err)
			}
			select {
			case err := <-stopped:
				t.Fatalf("the spin stopped before its context ended: %v", err)
			default: // still spinning when the collection returned
			}
			stop()
			if err := <-stopped; !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want one wrapping context.Canceled", err)
			}
		})
	}
}

func exportCount(tb testing.TB, wasm []byte) uint32 {
	for _, s := range sectionsOf(tb, wasm) {
		if s.id == secExport {
			n, _, _ := readU32(s.content, 0, len(s.content))
			return n
		}
	}
	return 0
}

func benchConfigRequest() abi.Request {
	return abi.Request{Method: "GET", Path: "/api/service/config", RequestID: "bench",
		Headers: abi.Headers{{Name: "accept", Value: "application/json"}}}
}

// TestInstrumentOutputIsPinned holds Instrument's output for a fixed module
// to a recorded hash. Hosts cache instrumented modules keyed by Version, so
// an Instrument that changes its output without a new Version would have a
// restarted host run modules instrumented the old way. When this fails on
// purpose: increment Version and record the new hash here.
func TestInstrumentOutputIsPinned(t *testing.T) {
	const want = "v1-99ab683f2092b93be04c93997888729c0a96ac96682533eac7212e1a03c8f78c"
	out := mustInstrument(t, handModule())
	got := fmt.Sprintf("v%d-%x", Version, sha256.Sum256(out))
	if got != want {
		t.Errorf("instrumented hand module is %s, pinned %s: bump Version if the output changed, then pin the new value", got, want)
	}
}
