package runtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		return pooled(t, m)
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
	echo := func(f *Function) { t.Helper(); ask(t, f, "hello") }

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

// CompileFile reads the module's file only when the cache has no
// instrumented form for the hash it is given: a restart compiles from the
// cache even with the file gone. Without a cached form, a file that no
// longer hashes to what the caller labelled it with is refused, not
// compiled under the wrong version.
func TestCompileFileReadsTheModuleOnlyWithoutACachedForm(t *testing.T) {
	ctx := context.Background()
	wasm := testenv.Wasm(t, "testguests/testguest.wasm")
	sum := sha256.Sum256(wasm)
	path := filepath.Join(t.TempDir(), "testguest.wasm")
	if err := os.WriteFile(path, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	compile := func(cache string) (*Function, error) {
		t.Helper()
		e, err := NewEngine(ctx, Options{CacheDir: cache}, (&fakeServices{}).services())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close(ctx) })
		m, err := e.CompileFile(ctx, "testguest", path, sum)
		if err != nil {
			return nil, err
		}
		return pooled(t, m), nil
	}
	echo := func(f *Function, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		ask(t, f, "hello")
	}

	cache := t.TempDir()
	echo(compile(cache)) // reads the file, fills the cache
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	echo(compile(cache)) // the file is gone: from the cache alone

	if _, err := compile(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no file and no cache: %v, want the file's absence", err)
	}
	other := append(append([]byte(nil), wasm...), 0, 0) // not what was hashed
	if err := os.WriteFile(path, other, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := compile(t.TempDir()); err == nil || !strings.Contains(err.Error(), "changed after the host hashed it") {
		t.Fatalf("a changed file without a cached form: %v, want it refused", err)
	}
	echo(compile(cache)) // its hash's cached form is still what it serves
}
