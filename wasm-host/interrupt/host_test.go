package interrupt

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"decisiongateway/shared/abi"
)

// The tests run real modules on wazero, but not through wasm-host/runtime:
// that package hard-wires close-on-context-done, which is what this one
// replaces. This is the least of the host the modules need: WASI and a
// `gateway` module whose answering imports return empty results, and
// yield as the package doc asks of the host.

// compiled is shared by every runtime of the tests, so each module is
// compiled once per configuration.
var compiled = wazero.NewCompilationCache()

// host configures a test runtime.
type host struct {
	closeOnContextDone bool
	budget             uint32 // what yield returns
	onYield            func() // called at every yield, before the context is looked at
}

func newRuntime(tb testing.TB, closeOnContextDone bool) wazero.Runtime {
	return newHostRuntime(tb, host{closeOnContextDone: closeOnContextDone, budget: DefaultBudget})
}

func newHostRuntime(tb testing.TB, h host) wazero.Runtime {
	tb.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCloseOnContextDone(h.closeOnContextDone).
		WithCompilationCache(compiled))
	tb.Cleanup(func() { rt.Close(ctx) })
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		tb.Fatal(err)
	}
	i32 := api.ValueTypeI32
	empty := api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) { stack[0] = 0 })
	none := api.GoModuleFunc(func(context.Context, api.Module, []uint64) {})
	b := rt.NewHostModuleBuilder(YieldModule)
	for _, name := range []string{"ledger", "fetch", "ai", "config", "memo"} {
		b.NewFunctionBuilder().WithGoModuleFunction(empty, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).Export(name)
	}
	for _, name := range []string{"log", "take"} {
		b.NewFunctionBuilder().WithGoModuleFunction(none, []api.ValueType{i32, i32}, nil).Export(name)
	}
	// sha256 answers 0: the module hashes by itself.
	b.NewFunctionBuilder().WithGoModuleFunction(empty, []api.ValueType{i32, i32, i32}, []api.ValueType{i32}).Export("sha256")
	// yield, as the package doc asks of the host: stop the guest when the
	// call's context is done, else give it another budget.
	yield := api.GoModuleFunc(func(ctx context.Context, _ api.Module, stack []uint64) {
		if h.onYield != nil {
			h.onYield()
		}
		if ctx.Err() != nil {
			panic(context.Cause(ctx))
		}
		stack[0] = uint64(h.budget)
	})
	b.NewFunctionBuilder().WithGoModuleFunction(yield, nil, []api.ValueType{i32}).Export(YieldImport)
	if _, err := b.Instantiate(ctx); err != nil {
		tb.Fatal(err)
	}
	return rt
}

// instantiate compiles wasm and makes one instance of it, initialised as a
// reactor.
func instantiate(tb testing.TB, rt wazero.Runtime, wasm []byte) api.Module {
	tb.Helper()
	ctx := context.Background()
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := wazero.NewModuleConfig().WithName("")
	if _, ok := cm.ExportedFunctions()["_initialize"]; ok {
		cfg = cfg.WithStartFunctions("_initialize")
	}
	mod, err := rt.InstantiateModule(ctx, cm, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { mod.Close(ctx) })
	return mod
}

// handle sends one request through the ABI (schema/abi.md).
func handle(ctx context.Context, mod api.Module, req *abi.Request) (abi.Response, error) {
	in := abi.AppendRequest(nil, req)
	res, err := mod.ExportedFunction("gateway_alloc").Call(ctx, uint64(len(in)))
	if err != nil {
		return abi.Response{}, err
	}
	ptr := uint32(res[0])
	if !mod.Memory().Write(ptr, in) {
		return abi.Response{}, errors.New("request outside guest memory")
	}
	res, err = mod.ExportedFunction("gateway_handle").Call(ctx, uint64(ptr), uint64(len(in)))
	if err != nil {
		return abi.Response{}, err
	}
	out, ok := mod.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
	if !ok {
		return abi.Response{}, errors.New("response outside guest memory")
	}
	return abi.DecodeResponse(out)
}

// withGOMAXPROCS runs the rest of the test with n Ps.
func withGOMAXPROCS(t *testing.T, n int) {
	prev := runtime.GOMAXPROCS(n)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
}
