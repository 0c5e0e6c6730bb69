package runtime

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/stealthrocket/wasi-go/imports"
	"github.com/tetratelabs/wazero"

	"decisiongateway/shared/abi"
)

// Sockets configures an engine for the socket build (schema/socket.md):
// modules that implement the platform themselves, reaching the ledger and
// the upstream over the WasmEdge sockets extension to WASI preview 1. Such
// a module imports nothing from `gateway`; it gets wasi-go's WASI with
// sockets instead of wazero's, and its settings and secrets as its
// environment. The pool, the request encoding and the deadline are the
// same as for the ABI build.
type Sockets struct {
	// Environ is each module's environment (NAME=value); the engine adds
	// GATEWAY_FUNCTION, the function's name.
	Environ []string
}

// exportSockets is the export that marks a socket build.
const exportSockets = "gateway_sockets"

// socketLogPrefix starts the log lines a socket-build module writes on
// stderr (shared/guest's LogPrefix).
const socketLogPrefix = "gateway-log "

// bound is a request's context that also carries an instance's WASI state:
// wasi-go's host functions find their instance among the context's values.
type bound struct {
	context.Context
	values context.Context
}

func (b bound) Value(k any) any {
	if v := b.values.Value(k); v != nil {
		return v
	}
	return b.Context.Value(k)
}

// socketInstance is what a socket-build instance holds besides the module.
type socketInstance struct {
	values   context.Context // carries the wasi-go instance
	shutdown func()          // unblocks a guest waiting in poll_oneoff
	close    func()
}

// instantiateSockets makes one instance of a socket-build module with its
// own WASI state (descriptor table, environment), and its stderr read into
// the host's log.
func (m *Module) instantiateSockets(ctx context.Context, cfg wazero.ModuleConfig) (*instance, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	env := append([]string{"GATEWAY_FUNCTION=" + m.name}, m.engine.sockets.Environ...)
	wctx, sys, err := imports.NewBuilder().
		WithName(m.name).
		WithEnv(env...).
		WithStdio(int(null.Fd()), int(w.Fd()), int(w.Fd())).
		WithSocketsExtension("auto", m.compiled).
		Instantiate(ctx, m.engine.rt)
	null.Close()
	w.Close() // the WASI state holds its own copies
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("runtime: sockets for %s: %w", m.name, err)
	}
	go m.readLog(r)
	mod, err := m.engine.rt.InstantiateModule(wctx, m.compiled, cfg)
	if err != nil {
		sys.Close(context.Background())
		return nil, fmt.Errorf("runtime: instantiate %s: %w", m.name, err)
	}
	si := &socketInstance{values: wctx, close: func() { sys.Close(context.Background()) }, shutdown: func() {}}
	if s, ok := sys.(interface{ Shutdown(context.Context) error }); ok {
		si.shutdown = func() { s.Shutdown(context.Background()) }
	}
	return &instance{
		mod:     mod,
		alloc:   mod.ExportedFunction("gateway_alloc"),
		handle:  mod.ExportedFunction("gateway_handle"),
		version: mod.ExportedFunction("gateway_abi_version"),
		sockets: si,
	}, nil
}

// readLog turns a module's stderr into log records (the lines it marks as
// such) and output (anything else: a panic's trace). It ends when the
// instance's WASI state closes the pipe.
func (m *Module) readLog(r io.ReadCloser) {
	defer r.Close()
	s := m.engine.services
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, socketLogPrefix)
		var rec struct {
			Level     uint8      `json:"level"`
			Message   string     `json:"msg"`
			RequestID string     `json:"request_id"`
			Attrs     [][]string `json:"attrs"`
		}
		if !ok || json.Unmarshal([]byte(rest), &rec) != nil {
			s.Output(m.name, []byte(line+"\n"))
			continue
		}
		lr := abi.LogRecord{Level: rec.Level, Message: rec.Message}
		for _, kv := range rec.Attrs {
			if len(kv) == 2 {
				lr.Attrs = append(lr.Attrs, abi.Header{Name: kv[0], Value: kv[1]})
			}
		}
		s.Log(context.Background(), m.name, rec.RequestID, &lr)
	}
}

// enter prepares ctx for a call into the instance: the socket build's WASI
// state travels in it, and when ctx ends a guest blocked on a socket is
// woken (the trap then comes from the yield check or the failed poll). The
// returned func undoes the wake-up.
func (i *instance) enter(ctx context.Context) (context.Context, func() bool) {
	if i.sockets == nil {
		return ctx, func() bool { return true }
	}
	stop := context.AfterFunc(ctx, i.sockets.shutdown)
	return bound{ctx, i.sockets.values}, stop
}

func buildOf(socket bool) string {
	if socket {
		return "a socket build (schema/socket.md)"
	}
	return "an ABI build"
}

// defaults sizes a socket build's instances. Go's runtime collects its
// heap, so its linear memory is not an arena to recycle at 8 MiB: it starts
// near 20 MiB and grows with the live heap. An instance is replaced only
// past 128 MiB, and may grow to 256 MiB.
func (s *Sockets) defaults(o Options) Options {
	if o.MemoryLimitPages == 0 {
		o.MemoryLimitPages = 4096
	}
	if o.RecycleBytes == 0 {
		o.RecycleBytes = 128 << 20
	}
	return o
}
