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
	once    sync.Once
	load    func() (*wrt.Function, error)
	// done is what loading gave, set once; nil until then, so it can be
	// read without waiting on once.
	done atomic.Pointer[loaded]
}

type loaded struct {
	fn  *wrt.Function
	err error
}

func (a *App) loader(name string, wasm []byte) *Function {
	return &Function{name: name, version: canary.VersionOf(name, wasm).Label(), load: func() (*wrt.Function, error) {
		ctx := context.Background()
		m, err := a.Engine.Compile(ctx, name, wasm)
		if err != nil {
			a.Log.Error("function module does not load; its routes answer 503", "function", name, "error", err.Error())
			return nil, err
		}
		return wrt.NewFunction(ctx, m, a.Config.PoolSize, 1)
	}}
}

// Ready loads the module if no one has yet, and returns its pool.
func (f *Function) Ready() (*wrt.Function, error) {
	f.once.Do(func() {
		fn, err := f.load()
		f.done.Store(&loaded{fn, err})
	})
	d := f.done.Load()
	return d.fn, d.err
}

// Loaded reports whether the module is loaded and serving.
func (f *Function) Loaded() bool { d := f.done.Load(); return d != nil && d.fn != nil }

// Failed reports whether loading the module was tried and failed.
func (f *Function) Failed() bool { d := f.done.Load(); return d != nil && d.err != nil }

// Handle serves req once the module is loaded. Loading is the host's cost,
// not the function's: the request's deadline is moved by the time spent
// waiting for it.
func (f *Function) Handle(ctx context.Context, req *abi.Request) (abi.Response, error) {
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

// Close closes the pool if the module was loaded.
func (f *Function) Close() {
	f.once.Do(func() { f.done.Store(&loaded{err: wrt.ErrUnavailable}) })
	if d := f.done.Load(); d.fn != nil {
		d.fn.Close()
	}
}

// warm loads the modules sent on loads in the background, one at a time
// in the order sent: a request for a module not loaded yet loads it at once
// on its own goroutine, and should not share the CPU with more than one
// background compile.
func (a *App) warm(loads <-chan *Function) {
	go func() {
		for f := range loads {
			f.Ready()
		}
	}()
}
