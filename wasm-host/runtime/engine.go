// Package runtime runs function modules on wazero: it compiles each module
// once (with an on-disk compilation cache), keeps a pool of warm instances
// per function, and implements the host side of the ABI (schema/abi.md) on
// top of Services supplied by the caller.
package runtime

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"decisiongateway/shared/abi"
	"decisiongateway/wasm-host/interrupt"
)

// Services are the host's implementations of the ABI imports. Every field
// must be set; the ctx passed in is the request's, so its deadline applies.
type Services struct {
	Ledger func(ctx context.Context, b *abi.Batch) abi.BatchResult
	Fetch  func(ctx context.Context, f *abi.FetchRequest) abi.FetchResponse
	AI     func(ctx context.Context, a *abi.AIRequest) abi.AIResponse
	Config func(name string) string
	Log    func(ctx context.Context, function, requestID string, rec *abi.LogRecord)
	// Output receives what a module writes to stdout or stderr (TinyGo
	// prints panics there).
	Output func(function string, p []byte)
}

// Options configure an Engine. The zero value is usable.
type Options struct {
	// CacheDir holds wazero's compilation cache; "" compiles in memory only.
	CacheDir string
	// MemoryLimitPages caps each instance's memory (64 KiB pages); 0 means 1024 (64 MiB).
	MemoryLimitPages uint32
	// RecycleBytes: an instance whose linear memory has grown past this is
	// replaced after its request instead of being reused; 0 means 8 MiB.
	// With the pool size it bounds a function's guest memory: instances
	// are held only while they compute (schema/abi.md, "Awaiting"), so a
	// small pool suffices and memory does not grow with requests in flight.
	// A module's heap is reset after every call (arena.go), so an
	// instance's memory is what its largest call needed; this bounds it.
	RecycleBytes uint32
	// Sockets, when set, makes this an engine for the socket build's
	// modules (sockets.go) instead of the ABI build's.
	Sockets *Sockets
	// QueueTimeout bounds how long a request's first call waits for an
	// instance and a run slot before it fails with ErrOverloaded, nothing
	// of it run (Function.Handle); 0 means until the request's deadline.
	QueueTimeout time.Duration
	// ParkedPerSlot is how many instances a function keeps per run slot,
	// the others parked in a ledger round trip; 0 means 4. A host on a
	// remote ledger sets more (wasm-host/app, parkedOnServer): its writer
	// groups as many batches as wait, and a wave of requests then shares
	// fewer of the server's requests.
	ParkedPerSlot int
}

// Engine owns the wazero runtime shared by all functions.
type Engine struct {
	recycle  uint32
	queue    time.Duration // Options.QueueTimeout
	parked   int           // Options.ParkedPerSlot
	cacheDir string        // Options.CacheDir
	rt       wazero.Runtime
	cache    wazero.CompilationCache
	services Services
	sockets  *Sockets
	// imports is closed once WASI and the gateway host module are
	// instantiated, importsErr set before it closes. NewEngine does that
	// in the background: compiling a module does not need them, only
	// instantiating one does, and on a cold start they would otherwise
	// delay the decision module's compile (its critical path) by about
	// half a millisecond.
	imports    chan struct{}
	importsErr error
	// sql keeps one copy of each SQL text the guests' batches carry.
	sql texts
	// memo is the `memo` import's store (memo.go).
	memo *memoStore
	// early is Prestart's compile until a compile takes it (early.go).
	earlyMu sync.Mutex
	early   *early
}

// NewEngine creates the runtime and starts instantiating WASI and the
// `gateway` host module, which the first instance waits for (an error
// there fails every instantiation). Close it to release compiled code.
func NewEngine(ctx context.Context, opts Options, s Services) (*Engine, error) {
	if s.Ledger == nil || s.Fetch == nil || s.AI == nil || s.Config == nil || s.Log == nil {
		return nil, errors.New("runtime: every service must be set")
	}
	if s.Output == nil {
		s.Output = func(string, []byte) {}
	}
	if opts.Sockets != nil {
		opts = opts.Sockets.defaults(opts)
	}
	var (
		rt    wazero.Runtime
		cache wazero.CompilationCache
	)
	p := adoptEarly(opts)
	if p != nil {
		rt, cache = p.rt, p.cache
	} else {
		var err error
		if rt, cache, err = newRuntime(ctx, opts); err != nil {
			return nil, err
		}
	}
	e := &Engine{rt: rt, cache: cache, cacheDir: opts.CacheDir, services: s, recycle: opts.RecycleBytes, sockets: opts.Sockets, queue: opts.QueueTimeout, parked: opts.ParkedPerSlot, memo: newMemoStore(), early: p}
	if e.parked <= 0 {
		e.parked = defaultParked
	}
	if e.recycle == 0 {
		e.recycle = 8 << 20
	}
	e.imports = make(chan struct{})
	// Instantiation outlives the call: a ctx ended after NewEngine returns
	// must not fail it, as it could not when this ran before returning.
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer close(e.imports)
		if e.sockets == nil { // socket builds get wasi-go's WASI, per instance
			if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
				e.importsErr = err
				return
			}
		}
		e.importsErr = e.instantiateHostModule(ctx)
	}()
	return e, nil
}

// Close releases every module and the runtime.
func (e *Engine) Close(ctx context.Context) error {
	<-e.imports
	e.earlyMu.Lock()
	p := e.early
	e.earlyMu.Unlock()
	if p != nil {
		<-p.done // its compile runs in the runtime closed here
	}
	err := e.rt.Close(ctx)
	if e.cache != nil {
		e.cache.Close(ctx)
	}
	return err
}

// Compile instruments a module with its deadline check (package
// interrupt), compiles it and checks that it speaks this ABI version. The
// module's name and version (its hash) stay those of the bytes given.
func (e *Engine) Compile(ctx context.Context, name string, wasm []byte) (*Module, error) {
	return e.compile(ctx, name, sha256.Sum256(wasm), func() ([]byte, error) { return wasm, nil })
}

// CompileFile is Compile for the module in the file at path, which the
// caller hashed as sum (the host hashes each module once, for its version
// label). The file is read only when the cache has no
// instrumented form for sum, as on a host's first start; a restart
// compiles from the cache without it. What it reads must still hash to
// sum, or the version the caller labelled it with would be wrong:
// a module replaced on disk after the host hashed it is served after a
// restart, not half-way through this run.
func (e *Engine) CompileFile(ctx context.Context, name, path string, sum [32]byte) (*Module, error) {
	return e.compile(ctx, name, sum, readChecked(path, sum))
}

// readChecked reads the module at path, which must hash to sum.
func readChecked(path string, sum [32]byte) func() ([]byte, error) {
	return func() ([]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if sha256.Sum256(b) != sum {
			return nil, fmt.Errorf("%s changed after the host hashed it at start; restart the host to serve it", path)
		}
		return b, nil
	}
}

// compile is Compile with the module's bytes asked of source only when
// the cache has no instrumented form for sum.
func (e *Engine) compile(ctx context.Context, name string, sum [32]byte, source func() ([]byte, error)) (*Module, error) {
	var (
		out    []byte
		cached bool
		cm     wazero.CompiledModule
		err    error
	)
	if p, ok := e.takeEarly(sum); ok {
		out, cached, cm = p.out, p.cached, p.cm
	} else {
		if out, cached, err = instrument(e.cacheDir, source, sum); err != nil {
			return nil, fmt.Errorf("runtime: %s: %w", name, err)
		}
		cm, err = e.rt.CompileModule(ctx, out)
	}
	if err != nil && cached {
		// A damaged cache entry: replace it, as if there had been none.
		_ = os.Remove(instrumentedPath(e.cacheDir, sum))
		if out, _, err = instrument(e.cacheDir, source, sum); err == nil {
			cm, err = e.rt.CompileModule(ctx, out)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("runtime: compile %s: %w", name, err)
	}
	for _, want := range []string{"gateway_abi_version", "gateway_alloc", "gateway_handle"} {
		if _, ok := cm.ExportedFunctions()[want]; !ok {
			cm.Close(ctx)
			return nil, fmt.Errorf("runtime: %s does not export %s", name, want)
		}
	}
	if _, socket := cm.ExportedFunctions()[exportSockets]; socket != (e.sockets != nil) {
		cm.Close(ctx)
		return nil, fmt.Errorf("runtime: %s is %s, this host runs %s", name, buildOf(socket), buildOf(e.sockets != nil))
	}
	// Instrumenting keeps the data segments and their names, so the
	// instrumented form tells where the read-only data ends as well.
	m := &Module{engine: e, name: name, compiled: cm, roEnd: interrupt.ReadOnlyEnd(out)}
	inst, err := m.instantiate(ctx)
	if err != nil {
		cm.Close(ctx)
		return nil, err
	}
	vctx, leave := inst.enter(ctx)
	res, err := inst.version.Call(vctx)
	leave()
	if err != nil {
		inst.close(ctx)
		cm.Close(ctx)
		return nil, fmt.Errorf("runtime: %s: abi version: %w", name, err)
	}
	if v := uint32(res[0]); v != abi.Version {
		inst.close(ctx)
		cm.Close(ctx)
		return nil, fmt.Errorf("runtime: %s speaks ABI v%d, host implements v%d", name, v, abi.Version)
	}
	// Asking its version changed nothing in the instance: it becomes the
	// first pooled one (NewFunction) instead of a second instantiation on
	// the way to a fresh host's first answer.
	m.spare.Store(inst)
	return m, nil
}

// instrument returns the module source gives with its deadline checks
// (interrupt.Instrument). With a cache directory, the result is kept there
// under sum, the module's hash, and the instrumentation's version, and read
// back on the next start without calling source: instrumenting the
// decision module costs about a millisecond on every start, on the path to
// the first answer, and the cache directory is already trusted with
// wazero's compiled machine code. cached reports that out came from the
// cache.
func instrument(cacheDir string, source func() ([]byte, error), sum [32]byte) (out []byte, cached bool, err error) {
	path := instrumentedPath(cacheDir, sum)
	if cacheDir != "" {
		if b, err := os.ReadFile(path); err == nil {
			return b, true, nil
		}
	}
	wasm, err := source()
	if err != nil {
		return nil, false, err
	}
	if out, err = interrupt.Instrument(wasm); err != nil || cacheDir == "" {
		return out, false, err
	}
	putCacheFile(path, out)
	return out, false, nil
}

// instrumentedPath is where instrument keeps the instrumented form of the
// module whose SHA-256 is sum.
func instrumentedPath(cacheDir string, sum [32]byte) string {
	return filepath.Join(cacheDir, "instrumented", fmt.Sprintf("v%d-%x.wasm", interrupt.Version, sum))
}

// await makes the outbound call of an Await for a request that holds no
// instance, and returns its result for the guest's Resume.
func (e *Engine) await(ctx context.Context, a *abi.Await) *abi.Resume {
	res := &abi.Resume{State: a.State}
	switch {
	case a.Fetch != nil:
		f := e.services.Fetch(ctx, a.Fetch)
		res.Fetch = &f
	case a.AI != nil:
		m := e.services.AI(ctx, a.AI)
		res.AI = &m
	default:
		res.Fetch = &abi.FetchResponse{ErrKind: abi.FetchErrDenied, ErrMsg: "an await names no call"}
	}
	return res
}

// Module is a compiled function module.
type Module struct {
	engine   *Engine
	name     string
	compiled wazero.CompiledModule
	roEnd    uint32                   // end of its read-only data (interrupt.ReadOnlyEnd), 0 when unknown
	spare    atomic.Pointer[instance] // the instance Compile checked, until a pool takes it
}

// Name is the function name the module was compiled under.
func (m *Module) Name() string { return m.name }

// instance is one instantiated module; it serves one call at a time.
type instance struct {
	mod     api.Module
	alloc   api.Function
	handle  api.Function
	version api.Function
	state   callState
	arena   *arena          // nil for a module without one (the socket build)
	sockets *socketInstance // nil for the ABI build
}

type outputWriter struct {
	fn   string
	sink func(string, []byte)
}

func (w outputWriter) Write(p []byte) (int, error) { w.sink(w.fn, p); return len(p), nil }

func (m *Module) instantiate(ctx context.Context) (*instance, error) {
	if <-m.engine.imports; m.engine.importsErr != nil {
		return nil, fmt.Errorf("runtime: host imports: %w", m.engine.importsErr)
	}
	out := io.Writer(outputWriter{m.name, m.engine.services.Output})
	cfg := wazero.NewModuleConfig().
		WithName(""). // anonymous: many instances of one module coexist
		WithStartFunctions("_initialize").
		WithSysWalltime().
		WithSysNanotime().
		WithSysNanosleep().
		WithRandSource(rand.Reader).
		WithStdout(out).
		WithStderr(out)
	if m.engine.sockets != nil {
		return m.instantiateSockets(ctx, cfg)
	}
	mod, err := m.engine.rt.InstantiateModule(ctx, m.compiled, cfg)
	if err != nil {
		return nil, fmt.Errorf("runtime: instantiate %s: %w", m.name, err)
	}
	ar, err := openArena(ctx, mod, m.roEnd)
	if err != nil {
		mod.Close(ctx)
		return nil, fmt.Errorf("runtime: instantiate %s: %w", m.name, err)
	}
	return &instance{
		mod:     mod,
		alloc:   mod.ExportedFunction("gateway_alloc"),
		handle:  mod.ExportedFunction("gateway_handle"),
		version: mod.ExportedFunction("gateway_abi_version"),
		arena:   ar,
	}, nil
}

func (i *instance) close(ctx context.Context) {
	i.mod.Close(ctx)
	if i.sockets != nil {
		i.sockets.close()
	}
}

// call runs one request on the instance. Any error leaves the instance in an
// unknown state: the caller must discard it.
func (i *instance) call(ctx context.Context, c *callState, req *abi.Request) (abi.Response, error) {
	c.buf = abi.AppendRequest(c.buf[:0], req)
	ctx, leave := i.enter(ctx)
	ctx = context.WithValue(ctx, callKey{}, c)
	resp, err := i.exchange(ctx, c)
	if !leave() && err == nil {
		// A socket build's WASI state was shut down by the deadline: the
		// guest may have answered what a failed socket made it answer,
		// and the instance cannot be used again.
		return abi.Response{}, context.Cause(ctx)
	}
	return resp, err
}

// exchange writes the encoded request into the instance and runs it.
func (i *instance) exchange(ctx context.Context, c *callState) (abi.Response, error) {
	res, err := i.alloc.Call(ctx, uint64(len(c.buf)))
	if err != nil {
		return abi.Response{}, err
	}
	ptr := uint32(res[0])
	if len(c.buf) > 0 && !i.mod.Memory().Write(ptr, c.buf) {
		return abi.Response{}, errors.New("runtime: request outside guest memory")
	}
	res, err = i.handle.Call(ctx, uint64(ptr), uint64(len(c.buf)))
	if err != nil {
		return abi.Response{}, err
	}
	rp, rl := uint32(res[0]>>32), uint32(res[0])
	out, ok := i.mod.Memory().Read(rp, rl)
	if !ok {
		return abi.Response{}, errors.New("runtime: response outside guest memory")
	}
	return abi.DecodeResponse(out)
}
