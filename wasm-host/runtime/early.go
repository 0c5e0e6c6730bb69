package runtime

import (
	"context"
	"fmt"
	"sync"

	"github.com/tetratelabs/wazero"
)

// Compiling before main.
//
// On a cold start the decision module's compile is the critical path: ten
// milliseconds of wazero decoding, validating and hashing a cached module
// (wasm-host/loadbench/MEASUREMENTS.md), on one core while the other is
// idle. Prestart begins it from a package initialiser (the gateway
// command's prestart package), so it runs beside the rest of the binary's
// package initialisation and main's own start instead of after them.
//
// wazero ties a compiled module to the runtime that compiled it (its
// function types are numbered per store), so the runtime Prestart makes is
// the one the host uses: NewEngine adopts it when its options would have
// made the same one, and the first compile of the same module (by its
// hash) takes the compiled module instead of compiling again. Anything
// that does not match is closed and compiled the ordinary way, so a wrong
// guess costs CPU on a spare core, never a different result.

// early is a runtime made by Prestart and the compile running in it.
type early struct {
	pages    uint32 // the runtime's memory limit
	cacheDir string
	rt       wazero.Runtime
	cache    wazero.CompilationCache

	done   chan struct{} // closed when the fields below are set
	sum    [32]byte      // the module's hash (SumFile)
	cm     wazero.CompiledModule
	out    []byte // the instrumented module compiled
	cached bool   // out came from the cache
	err    error
}

// prestarted is the early runtime no engine has adopted yet.
var prestarted struct {
	sync.Mutex
	e *early
}

// Prestart makes the runtime NewEngine(opts) would make and starts
// compiling the module at path in it, in the background. It is for a
// host's start, before the engine exists: the engine adopts both
// (NewEngine, Engine.compile). Options that NewEngine would not turn into
// the same runtime (sockets) are ignored, as is a second Prestart.
func Prestart(opts Options, path string) {
	if opts.Sockets != nil {
		return
	}
	rt, cache, err := newRuntime(context.Background(), opts)
	if err != nil {
		return // NewEngine reports it
	}
	p := &early{pages: limitPages(opts), cacheDir: opts.CacheDir, rt: rt, cache: cache, done: make(chan struct{})}
	prestarted.Lock()
	defer prestarted.Unlock()
	if prestarted.e != nil {
		go p.discard()
		return
	}
	prestarted.e = p
	go func() {
		defer close(p.done)
		if p.sum, p.err = SumFile(opts.CacheDir, path); p.err != nil {
			return
		}
		if p.out, p.cached, p.err = instrument(opts.CacheDir, readChecked(path, p.sum), p.sum); p.err != nil {
			return
		}
		p.cm, p.err = rt.CompileModule(context.Background(), p.out)
	}()
}

// adoptEarly returns the prestarted runtime when opts make the same one,
// and discards it otherwise.
func adoptEarly(opts Options) *early {
	prestarted.Lock()
	p := prestarted.e
	prestarted.e = nil
	prestarted.Unlock()
	if p == nil {
		return nil
	}
	if opts.Sockets != nil || p.pages != limitPages(opts) || p.cacheDir != opts.CacheDir {
		go p.discard()
		return nil
	}
	return p
}

// discard closes an early runtime no engine adopted.
func (p *early) discard() {
	<-p.done
	ctx := context.Background()
	_ = p.rt.Close(ctx)
	if p.cache != nil {
		_ = p.cache.Close(ctx)
	}
}

// takeEarly returns the early compile of the module whose hash is sum,
// waiting for it to end, or ok false when there is none (or it failed: the
// caller compiles the ordinary way, which also replaces a damaged cache
// entry). Only the first caller for sum gets it.
func (e *Engine) takeEarly(sum [32]byte) (p *early, ok bool) {
	e.earlyMu.Lock()
	p = e.early
	e.earlyMu.Unlock()
	if p == nil {
		return nil, false
	}
	<-p.done
	e.earlyMu.Lock()
	defer e.earlyMu.Unlock()
	if e.early != p || p.sum != sum {
		return nil, false
	}
	e.early = nil
	if p.err != nil {
		return nil, false
	}
	return p, true
}

// newRuntime is the wazero runtime (and its compilation cache) of an
// engine with opts.
func newRuntime(ctx context.Context, opts Options) (wazero.Runtime, wazero.CompilationCache, error) {
	// A deadline stops a guest that never returns through the yield import
	// that interrupt.Instrument adds to every loop (imports.go), not with
	// wazero's close-on-context-done: that exits to Go at every loop
	// header and made guest code 2–8× slower (BenchmarkGuestCall in
	// wasm-host/interrupt), while the yield costs under 1%.
	cfg := wazero.NewRuntimeConfig().WithMemoryLimitPages(limitPages(opts))
	var cache wazero.CompilationCache
	if opts.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			return nil, nil, fmt.Errorf("runtime: compilation cache: %w", err)
		}
		cache = c
		cfg = cfg.WithCompilationCache(c)
	}
	return wazero.NewRuntimeWithConfig(ctx, cfg), cache, nil
}

// limitPages is the memory limit of opts' instances, in 64 KiB pages.
func limitPages(opts Options) uint32 {
	if opts.MemoryLimitPages == 0 {
		return 1024
	}
	return opts.MemoryLimitPages
}
