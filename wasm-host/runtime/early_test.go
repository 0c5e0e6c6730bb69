package runtime

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"decisiongateway/testkit/testenv"
)

// writeGuest puts the test guest rel into dir and returns its path and hash.
func writeGuest(t *testing.T, dir, rel string) (string, [32]byte) {
	t.Helper()
	wasm := testenv.Wasm(t, rel)
	path := filepath.Join(dir, filepath.Base(rel))
	if err := os.WriteFile(path, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, sha256.Sum256(wasm)
}

// prestartedEngine runs Prestart(opts, path), then NewEngine(opts2).
func prestartedEngine(t *testing.T, opts Options, path string, opts2 Options) *Engine {
	t.Helper()
	Prestart(opts, path)
	prestarted.Lock()
	p := prestarted.e
	prestarted.Unlock()
	// Cleanups run last first: the compile writes into the cache
	// directory, which must outlive it.
	t.Cleanup(func() { <-p.done })
	e, err := NewEngine(context.Background(), opts2, (&fakeServices{}).services())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	prestarted.Lock()
	left := prestarted.e
	prestarted.Unlock()
	if left != nil {
		t.Fatal("NewEngine left the prestarted runtime for another engine")
	}
	return e
}

// compileAndAsk compiles the module at path with e and checks that it
// answers a PUT of "hello" with a body holding want (the test guest echoes
// it; the canary guests answer "v1" or "v2").
func compileAndAsk(t *testing.T, e *Engine, path string, sum [32]byte, want string) *Module {
	t.Helper()
	m, err := e.CompileFile(context.Background(), filepath.Base(path), path, sum)
	if err != nil {
		t.Fatal(err)
	}
	ask(t, pooled(t, m), want)
	return m
}

// The engine adopts the runtime Prestart made with the same options, and
// the first compile of the module Prestart compiled serves that compile;
// a compile of another module first leaves it for its own module.
func TestPrestartedCompileIsServed(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	path, sum := writeGuest(t, dir, "testguests/testguest.wasm")
	other, otherSum := writeGuest(t, dir, "testguests/canaryv1.wasm")
	e := prestartedEngine(t, Options{CacheDir: cache}, path, Options{CacheDir: cache})
	p := e.early
	if p == nil || e.rt != p.rt {
		t.Fatal("the engine did not adopt the prestarted runtime")
	}

	compileAndAsk(t, e, other, otherSum, "v1")
	if e.early != p {
		t.Fatal("another module's compile took the prestarted one")
	}
	m := compileAndAsk(t, e, path, sum, "hello")
	if m.compiled != p.cm || e.early != nil {
		t.Fatal("the module was compiled again instead of served from its prestarted compile")
	}
}

// Options the engine would not make the same runtime with, a module
// replaced after Prestart hashed it, and a module that is not there all
// leave the engine compiling the ordinary way, with the same outcome as
// without Prestart.
func TestPrestartThatDoesNotMatchChangesNothing(t *testing.T) {
	t.Run("other options", func(t *testing.T) {
		dir := t.TempDir()
		path, sum := writeGuest(t, dir, "testguests/testguest.wasm")
		e := prestartedEngine(t, Options{CacheDir: t.TempDir()}, path, Options{CacheDir: t.TempDir()})
		if e.early != nil {
			t.Fatal("an engine with another cache adopted the prestarted runtime")
		}
		compileAndAsk(t, e, path, sum, "hello")
	})
	t.Run("module replaced", func(t *testing.T) {
		dir, cache := t.TempDir(), t.TempDir()
		path, _ := writeGuest(t, dir, "testguests/canaryv1.wasm")
		e := prestartedEngine(t, Options{CacheDir: cache}, path, Options{CacheDir: cache})
		<-e.early.done
		v2 := testenv.Wasm(t, "testguests/canaryv2.wasm")
		if err := os.WriteFile(path, v2, 0o644); err != nil {
			t.Fatal(err)
		}
		m := compileAndAsk(t, e, path, sha256.Sum256(v2), "v2")
		if m.compiled == e.early.cm {
			t.Fatal("the module replaced after Prestart was served from Prestart's compile of the old one")
		}
	})
	t.Run("module missing", func(t *testing.T) {
		dir, cache := t.TempDir(), t.TempDir()
		path := filepath.Join(dir, "testguest.wasm")
		e := prestartedEngine(t, Options{CacheDir: cache}, path, Options{CacheDir: cache})
		if _, err := e.CompileFile(context.Background(), "testguest", path, [32]byte{}); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a missing module: %v, want its absence", err)
		}
		path, sum := writeGuest(t, dir, "testguests/testguest.wasm")
		compileAndAsk(t, e, path, sum, "hello")
	})
}
