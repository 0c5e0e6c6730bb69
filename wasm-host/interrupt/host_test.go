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
// `gateway` module whose answering imports return empty results.

// compiled is shared by every runtime of the tests, so each module is
// compiled once per configuration.
var compiled = wazero.NewCompilationCache()

func newRuntime(tb testing.TB, closeOnContextDone bool) wazero.Runtime {
	tb.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCloseOnContextDone(closeOnContextDone).
		WithCompilationCache(compiled))
	tb.Cleanup(func() { rt.Close(ctx) })
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		tb.Fatal(err)
	}
	i32 := api.ValueTypeI32
	empty := api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) { stack[0] = 0 })
	none := api.GoModuleFunc(func(context.Context, api.Module, []uint64) {})
	b := rt.NewHostModuleBuilder("gateway")
	for _, name := range []string{"ledger", "fetch", "ai", "config"} {
		b.NewFunctionBuilder().WithGoModuleFunction(empty, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).Export(name)
	}
	for _, name := range []string{"log", "take"} {
		b.NewFunctionBuilder().WithGoModuleFunction(none, []api.ValueType{i32, i32}, nil).Export(name)
	}
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

// needFreeP makes sure a goroutine can run while a guest spins: guest
// machine code is not preemptible, so with one P the goroutine that sets
// the interrupt would never run (see the package doc).
func needFreeP(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Cleanup(func() { runtime.GOMAXPROCS(1) })
		runtime.GOMAXPROCS(2)
	}
}

// interruptOf returns the instance's interrupt global.
func interruptOf(tb testing.TB, mod api.Module) api.MutableGlobal {
	tb.Helper()
	g, ok := mod.ExportedGlobal(ExportName).(api.MutableGlobal)
	if !ok {
		tb.Fatalf("%s is not exported as a mutable global", ExportName)
	}
	if g.Type() != api.ValueTypeI32 {
		tb.Fatalf("%s has type %s, want i32", ExportName, api.ValueTypeName(g.Type()))
	}
	return g
}
