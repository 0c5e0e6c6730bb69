package app

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/wasm-host/canary"
	wrt "decisiongateway/wasm-host/runtime"
)

// Function is a routed module that loads in the background. The host starts
// listening before its modules are compiled: compiling from wazero's cache
// still decodes and validates every function body (about 4 ms for the
// decide module), so compiling all of them first would put 30 ms between
// exec and the first answer. Instead each module loads on its own, and a
// request for one that is not ready yet waits for that one alone.
type Function struct {
	name string
	// version is the module's label, function@sha (wasm-host/canary), for
	// the pool metrics.
	version string
	load    func() (*wrt.Function, error)
	// mu is held while loading, so that one call loads and the others
	// wait for it.
	mu sync.Mutex
	// done is what the last load gave; nil until then, so it can be read
	// without waiting on mu.
	done atomic.Pointer[loaded]
	// traffic counts the host's calls in flight (warm waits for them).
	traffic *traffic
}

type loaded struct {
	fn  *wrt.Function
	err error
	// again is when a failed load may be tried again; final, never (the
	// function is closed).
	again time.Time
	final bool
}

// loadRetry is how long a module that failed to load answers 503 before
// the next call for it, or a readiness probe, loads it again. A load fails
// for reasons that pass (the process out of file descriptors or memory
// while it started, a file being replaced) as well as for ones that do not
// (a module that does not compile); before, either kind left its routes
// answering 503, and the host not ready, until a restart. Trying a module
// that never loads costs one failed compile per period.
const loadRetry = 5 * time.Second

func (a *App) loader(name, path string, sum [32]byte) *Function {
	return &Function{name: name, version: canary.VersionOfSum(name, sum).Label(), traffic: a.traffic, load: func() (*wrt.Function, error) {
		ctx := context.Background()
		m, err := a.Engine.CompileFile(ctx, name, path, sum)
		if err != nil {
			a.Log.Error("function module does not load; its routes answer 503", "function", name, "error", err.Error())
			return nil, err
		}
		return wrt.NewFunction(ctx, m, a.Config.PoolSize, 1)
	}}
}

// Ready loads the module if no one has yet, or if its last load failed
// more than its retry period ago, and returns its pool.
func (f *Function) Ready() (*wrt.Function, error) {
	if d := f.standing(); d != nil {
		return d.fn, d.err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if d := f.standing(); d != nil {
		return d.fn, d.err
	}
	fn, err := f.load()
	f.done.Store(&loaded{fn: fn, err: err, again: time.Now().Add(loadRetry)})
	return fn, err
}

// standing is the last load's outcome while it stands: a pool, a closed
// function, or a failure not yet due for another try; nil otherwise.
func (f *Function) standing() *loaded {
	if d := f.done.Load(); d != nil && (d.fn != nil || d.final || time.Now().Before(d.again)) {
		return d
	}
	return nil
}

// Loaded reports whether the module is loaded and serving.
func (f *Function) Loaded() bool { d := f.done.Load(); return d != nil && d.fn != nil }

// Failed reports whether loading the module was tried and failed.
func (f *Function) Failed() bool { d := f.done.Load(); return d != nil && d.err != nil }

// Handle serves req once the module is loaded. Loading is the host's cost,
// not the function's: the request's deadline is moved by the time spent
// waiting for it.
func (f *Function) Handle(ctx context.Context, req *abi.Request) (abi.Response, error) {
	if f.traffic != nil {
		f.traffic.busy.Add(1)
		defer f.traffic.done()
	}
	var fn *wrt.Function
	if d := f.done.Load(); d != nil && d.fn != nil {
		fn = d.fn
	} else {
		start := time.Now()
		var err error
		if fn, err = f.Ready(); err != nil {
			return abi.Response{}, errors.Join(wrt.ErrUnavailable, err)
		}
		if dl, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), dl.Add(time.Since(start)))
			defer cancel()
		}
	}
	return fn.Handle(ctx, req)
}

// Close closes the pool if the module was loaded; it is not loaded again.
func (f *Function) Close() {
	f.mu.Lock()
	d := f.done.Load()
	if d == nil || d.fn == nil {
		f.done.Store(&loaded{err: wrt.ErrUnavailable, final: true})
	}
	f.mu.Unlock()
	if d != nil && d.fn != nil {
		d.fn.Close()
	}
}

// traffic is what background warming yields to: the calls in flight, and
// whether the host has answered one yet.
type traffic struct {
	busy      atomic.Int64
	once      sync.Once
	answered  chan struct{} // closed when the first call finishes
	hurryOnce sync.Once
	hurry     chan struct{} // closed when a readiness probe asks for every module
	// patience for the first answer and for a moment without calls
	firstAnswer, idle time.Duration
}

func newTraffic() *traffic {
	return &traffic{answered: make(chan struct{}), hurry: make(chan struct{}), firstAnswer: firstAnswerPatience, idle: idlePatience}
}

// hurryUp makes warming stop waiting: an orchestrator's readiness probe
// wants every module loaded, and a host that is not ready gets no traffic
// to wait for.
func (t *traffic) hurryUp() { t.hurryOnce.Do(func() { close(t.hurry) }) }

func (t *traffic) done() {
	t.busy.Add(-1)
	t.once.Do(func() { close(t.answered) })
}

// Background warming waits up to firstAnswerPatience for the host's first
// answer, then up to idlePatience for no call to be in flight before each
// module: a fresh host's first decision does not share two cores with the
// compile of modules it does not use (it took 4 ms instead of 2), and a host
// restarted under traffic still warms every module within seconds. A
// readiness probe (ReadyPath) ends the waiting at once.
const (
	firstAnswerPatience = time.Second
	idlePatience        = 100 * time.Millisecond
)

// warm loads the modules sent on loads in the background, one at a time
// in the order sent: a request for a module not loaded yet loads it at once
// on its own goroutine, and should not share the CPU with more than one
// background compile. The first module (the decision) loads at once; the
// others yield to traffic (see firstAnswerPatience).
func (a *App) warm(loads <-chan *Function, t *traffic) {
	go func() {
		first := true
		for f := range loads {
			if !first {
				t.yield()
			}
			first = false
			f.Ready()
		}
	}()
}

// yield waits for the first answer, then for a moment without calls in
// flight, each within its patience, unless a readiness probe hurries it.
func (t *traffic) yield() {
	select {
	case <-t.hurry:
		return
	case <-t.answered:
	case <-time.After(t.firstAnswer):
	}
	for deadline := time.Now().Add(t.idle); t.busy.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}
