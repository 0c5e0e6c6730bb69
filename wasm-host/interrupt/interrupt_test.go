package interrupt

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/wasm-host/testenv"
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
			// Compiles, instantiates (with _initialize), exports the
			// global at 0.
			mod := instantiate(t, newRuntime(t, false), out)
			if g := interruptOf(t, mod); g.Get() != 0 {
				t.Fatalf("interrupt starts at %d", g.Get())
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
			if got.Status != want.Status || !bytes.Equal(got.Body, want.Body) || len(got.Headers) != len(want.Headers) {
				t.Fatalf("instrumented: %d %q, original: %d %q", got.Status, got.Body, want.Status, want.Body)
			}
		})
	}
}

func TestSpinningGuestIsStopped(t *testing.T) {
	// The test guest's /spin with n=0 counts to 2^64. The runtime has no
	// close-on-context-done, so the interrupt global is the only way out.
	// The global is set from another goroutine, as the host's watchdog
	// does. A load hoisted out of the loop would leave the call running
	// forever and the test would time out. (The short pause lets the guest
	// get past decoding the request into the spin loop; it bounds nothing:
	// TestInterruptStopsALoopAlreadyRunning waits for its loop
	// deterministically.)
	needFreeP(t)
	rt := newRuntime(t, false)
	mod := instantiate(t, rt, mustInstrument(t, testenv.Wasm(t, "testguests/testguest.wasm")))
	g := interruptOf(t, mod)
	done := make(chan error, 1)
	go func() {
		_, err := handle(context.Background(), mod, &abi.Request{Path: "/spin", Query: "n=0"})
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the spin returned before the interrupt: %v", err)
	default:
	}
	g.Set(1) // this goroutine is not the one running the guest
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("err = %v, want the unreachable trap", err)
	}
	t.Logf("trap: %v", err)
}

func benchConfigRequest() abi.Request {
	return abi.Request{Method: "GET", Path: "/api/service/config", RequestID: "bench",
		Headers: abi.Headers{{Name: "accept", Value: "application/json"}}}
}
