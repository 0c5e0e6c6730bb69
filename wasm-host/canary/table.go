package canary

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"decisiongateway/wasm-host/runtime"
)

// Options configure a Table.
type Options struct {
	Engine *runtime.Engine
	Ledger Ledger
	// DataDir is GATEWAY_DATA_DIR: released modules are kept in
	// DataDir/releases/<function>/<sha256>.wasm.
	DataDir string
	// PoolSize is the number of instances of each version (GATEWAY_POOL_SIZE).
	PoolSize int
	// Grace is how long a replaced version's compiled code outlives its pool,
	// so that a request which chose the version just before the change still
	// finishes on it. The request timeout is the right value; 0 means 60 s.
	Grace time.Duration
	Log   *slog.Logger
	// ClientAddr, when set, returns the client address of a request as the
	// server decides it (behind trusted proxies, the forwarded client); the
	// metrics endpoint answers only when it is a loopback address too, so a
	// proxy on the same machine does not make every client local.
	ClientAddr func(*http.Request) string
	// Abandon, when set, settles the ledger attempt of a request whose
	// module stopped without answering (trap, deadline, client gone), so
	// its reservation is refunded at once instead of after its lease.
	Abandon func(ctx context.Context, requestID string)
}

// Table holds the releases of every function a host serves and keeps them
// in line with the ledger.
type Table struct {
	opts  Options
	store *Store
	stats registry

	mu       sync.Mutex // serialises Sync and Close
	releases map[string]*Release
	built    map[string]*variant            // the module in GATEWAY_FUNCTIONS_DIR, owned by the caller
	live     map[string]map[string]*variant // function → sha256 → loaded version
	pools    map[*variant]*runtime.Function // versions this Table loaded and must close
	modules  map[*variant]*runtime.Module
	applied  map[string]int64 // generation applied per function
	kick     chan struct{}    // a canary request failed: tick now
	stop     chan struct{}
	done     chan struct{}
}

// NewTable returns an empty Table. Add the host's functions, call Sync once
// before serving, then Start.
func NewTable(o Options) *Table {
	if o.Grace <= 0 {
		o.Grace = 60 * time.Second
	}
	if o.PoolSize < 1 {
		o.PoolSize = 1
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Table{
		opts: o, store: NewStore(o.Ledger),
		releases: map[string]*Release{}, built: map[string]*variant{},
		live: map[string]map[string]*variant{}, pools: map[*variant]*runtime.Function{},
		modules: map[*variant]*runtime.Module{}, applied: map[string]int64{}, kick: make(chan struct{}, 1),
	}
}

// Store is the ledger state the Table follows.
func (t *Table) Store() *Store { return t.store }

// Add registers a function with its built module (version v, served by fn)
// and returns the Release that serves it. Until the ledger names another
// stable version, everyone gets the built one. fn stays the caller's to
// close.
func (t *Table) Add(function string, v Version, fn Handler) *Release {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := &variant{version: v, fn: fn, stats: t.stats.stats(v)}
	t.built[function] = b
	t.live[function] = map[string]*variant{v.SHA256: b}
	r := &Release{function: function, log: t.opts.Log, store: t.store, abandon: t.opts.Abandon, kick: t.kickNow}
	r.plan.Store(&plan{stable: b})
	t.releases[function] = r
	return r
}

// kickNow asks the polling loop for a tick at once (without waiting).
func (t *Table) kickNow() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// Sync reads every release from the ledger and applies those that changed
// since the last Sync. A version that cannot be loaded leaves its function's
// release as it was (the error says why) and is tried again next time.
func (t *Table) Sync(ctx context.Context) error {
	states, err := t.store.Load(ctx)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var firstErr error
	for _, st := range states {
		if _, served := t.releases[st.Function]; !served || t.applied[st.Function] == st.Generation {
			continue
		}
		if err := t.apply(ctx, st); err != nil {
			t.opts.Log.Error("release not applied", "function", st.Function, "error", err.Error())
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		t.applied[st.Function] = st.Generation
	}
	return firstErr
}

// apply makes r serve st. Versions are reused across plans by hash, so a
// promotion keeps the canary's warm pool and its counters.
func (t *Table) apply(ctx context.Context, st State) error {
	fn := st.Function
	stable, err := t.variant(ctx, fn, st.StableSHA)
	if err != nil {
		return err
	}
	p := &plan{stable: stable}
	if st.CanarySHA != "" && st.CanarySHA != stable.version.SHA256 {
		c, err := t.variant(ctx, fn, st.CanarySHA)
		if err != nil {
			return err
		}
		p.canary, p.share, p.since, p.limited = c, st.Share, st.StepSince, st.Budget >= 0
	}
	r := t.releases[fn]
	r.plan.Store(p)
	attrs := []any{"function", fn, "stable", stable.version.Label(), "generation", st.Generation}
	if p.canary != nil {
		attrs = append(attrs, "canary", p.canary.version.Label(), "share", FormatPercent(p.share), "step", st.Step+1)
	}
	t.opts.Log.Info("release applied", attrs...)
	t.retire(fn, p)
	return nil
}

// variant returns the loaded version sha of fn ("" is the built module),
// loading, compiling and warming it on first use.
func (t *Table) variant(ctx context.Context, fn, sha string) (*variant, error) {
	if sha == "" {
		return t.built[fn], nil
	}
	if v, ok := t.live[fn][sha]; ok {
		return v, nil
	}
	ver := Version{Function: fn, SHA256: sha}
	wasm, err := t.moduleBytes(ctx, ver)
	if err != nil {
		return nil, err
	}
	// `release canary` refused another function's module; a ledger
	// written some other way is checked again here. A module without a
	// name, released before modules had one, is served as it was.
	if err := CheckNotAnother(fn, wasm); err != nil {
		return nil, fmt.Errorf("%s: %w", ver.Label(), err)
	}
	m, err := t.opts.Engine.Compile(ctx, fn, wasm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ver.Label(), err)
	}
	pool, err := runtime.NewFunction(ctx, m, t.opts.PoolSize, 1)
	if err != nil {
		m.Close(ctx)
		return nil, fmt.Errorf("%s: %w", ver.Label(), err)
	}
	v := &variant{version: ver, fn: pool, stats: t.stats.stats(ver)}
	t.live[fn][sha] = v
	t.pools[v], t.modules[v] = pool, m
	return v, nil
}

// moduleBytes returns a released module, from this host's copy when it has
// one whose hash checks, otherwise from the ledger (keeping a copy).
func (t *Table) moduleBytes(ctx context.Context, v Version) ([]byte, error) {
	path := ModulePath(t.opts.DataDir, v)
	if b, err := os.ReadFile(path); err == nil && sha256Hex(b) == v.SHA256 {
		return b, nil
	}
	b, err := t.store.Module(ctx, v)
	if err != nil {
		return nil, err
	}
	if sha256Hex(b) != v.SHA256 {
		return nil, fmt.Errorf("release module %s in the ledger does not match its hash", v.Label())
	}
	if err := WriteModule(t.opts.DataDir, v, b); err != nil {
		t.opts.Log.Warn("release module not cached on disk", "version", v.Label(), "error", err.Error())
	}
	return b, nil
}

// retire closes the loaded versions of fn that p no longer uses. Their pools
// stop at once; their compiled code goes after the grace period.
func (t *Table) retire(fn string, p *plan) {
	for sha, v := range t.live[fn] {
		if v == t.built[fn] || v == p.stable || v == p.canary {
			continue
		}
		delete(t.live[fn], sha)
		t.close(v, t.opts.Grace)
	}
}

func (t *Table) close(v *variant, grace time.Duration) {
	pool, m := t.pools[v], t.modules[v]
	delete(t.pools, v)
	delete(t.modules, v)
	if pool != nil {
		pool.Close()
	}
	switch {
	case m == nil:
	case grace == 0:
		m.Close(context.Background())
	default:
		time.AfterFunc(grace, func() { m.Close(context.Background()) })
	}
}

// Tick is one round of the polling loop: write this host's outcomes to
// the ledger, judge every canary on the fleet's counts (any host may act;
// the ledger makes the decision once), and apply what changed.
func (t *Table) Tick(ctx context.Context) error {
	var errs []error
	if err := t.Flush(ctx); err != nil {
		errs = append(errs, fmt.Errorf("outcomes not written: %w", err))
	}
	decisions, err := t.store.Analyze(ctx)
	if err != nil {
		errs = append(errs, fmt.Errorf("analysis: %w", err))
	}
	for _, d := range decisions {
		if d.Action != "wait" && d.Action != "hold" {
			t.opts.Log.Warn("canary "+d.Action, "function", d.Function, "canary", d.Canary.Label(), "reason", d.Reason)
		}
	}
	if err := t.Sync(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Start ticks every interval, and at once when a canary request failed,
// until Close.
func (t *Table) Start(every time.Duration) {
	t.stop, t.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(t.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-tick.C:
			case <-t.kick:
			}
			ctx, cancel := context.WithTimeout(context.Background(), max(every, 10*time.Second))
			if err := t.Tick(ctx); err != nil {
				t.opts.Log.Warn("release tick incomplete; serving the last applied releases", "error", err.Error())
			}
			cancel()
		}
	}()
}

// Close stops polling, writes the outcomes not written yet, and closes
// every version the Table loaded. Built
// modules stay open: they belong to the caller.
func (t *Table) Close() {
	if t.stop != nil {
		close(t.stop)
		<-t.done
		t.stop = nil
	}
	// The outcomes counted since the last tick (up to a poll interval of
	// them) go to the ledger too: the
	// fleet's counts survive a restart, and a canary's last failures are
	// not lost with the host that served them.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if err := t.Flush(ctx); err != nil {
		t.opts.Log.Warn("release outcomes of the last poll not written", "error", err.Error())
	}
	cancel()
	t.mu.Lock()
	defer t.mu.Unlock()
	for v := range t.pools {
		t.close(v, 0)
	}
}

// functions returns the served function names, sorted.
func (t *Table) functions() []*Release {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*Release, 0, len(t.releases))
	for _, r := range t.releases {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].function < out[j].function })
	return out
}

// Release returns the release of a served function, or nil.
func (t *Table) Release(function string) *Release {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.releases[function]
}

// ModulePath is where a host keeps its copy of a released module.
func ModulePath(dataDir string, v Version) string {
	return filepath.Join(dataDir, "releases", v.Function, v.SHA256+".wasm")
}

// WriteModule stores a released module under dataDir atomically (a reader
// sees the whole file or none).
func WriteModule(dataDir string, v Version, wasm []byte) error {
	path := ModulePath(dataDir, v)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*.wasm")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(wasm); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
