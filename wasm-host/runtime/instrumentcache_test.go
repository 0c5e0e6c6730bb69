package runtime

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/testenv"
	"decisiongateway/wasm-host/interrupt"
)

// A module's instrumented form is kept in the cache directory and used by
// the next engine; an entry that is damaged is replaced, and the module
// still loads and answers.
func TestInstrumentedModulesAreCachedAndRepaired(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	wasm := testenv.Wasm(t, "testguests/testguest.wasm")
	want, err := interrupt.Instrument(wasm)
	if err != nil {
		t.Fatal(err)
	}
	start := func() *Function {
		t.Helper()
		e, err := NewEngine(ctx, Options{CacheDir: dir}, (&fakeServices{}).services())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close(ctx) })
		m, err := e.Compile(ctx, "testguest", wasm)
		if err != nil {
			t.Fatal(err)
		}
		f, err := NewFunction(ctx, m, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Close)
		return f
	}
	entry := func() string {
		t.Helper()
		m, _ := filepath.Glob(filepath.Join(dir, "instrumented", "*.wasm"))
		if len(m) != 1 {
			t.Fatalf("cache holds %d instrumented modules, want 1: %v", len(m), m)
		}
		if got, _ := os.ReadFile(m[0]); !bytes.Equal(got, want) {
			t.Fatal("the cached module is not what Instrument makes")
		}
		return m[0]
	}
	echo := func(f *Function) {
		t.Helper()
		resp := call(t, f, abi.Request{Method: "PUT", Path: "/echo", Body: []byte("hello")})
		if !bytes.Contains(resp.Body, []byte("hello")) {
			t.Fatalf("echo answered %d %q", resp.Status, resp.Body)
		}
	}

	echo(start())
	path := entry()
	echo(start()) // from the cache
	entry()
	if err := os.WriteFile(path, []byte("\x00asm damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	echo(start())
	entry()
}
