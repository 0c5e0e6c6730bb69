// Package platform is everything a route function may ask of its host, as
// small interfaces. The TinyGo guest implements them with ABI imports
// (package guest); tests and native benchmarks implement them in Go. A later
// build for runtimes with real sockets can implement Transport and Ledger
// with standard Go networking and libsql-client-go without touching a
// function.
package platform

import (
	"time"

	"decisiongateway/shared/abi"
)

// Ledger executes one atomic batch of SQL against the system of record.
type Ledger interface {
	Exec(b *abi.Batch) (abi.BatchResult, error)
}

// Transport makes outbound HTTP requests. The host applies egress policy,
// timeouts and secrets.
type Transport interface {
	Fetch(r *abi.FetchRequest) (abi.FetchResponse, error)
}

// Model runs the edge-runtime model binding.
type Model interface {
	Run(r *abi.AIRequest) (abi.AIResponse, error)
}

// Config reads deployment settings by name (SERVICE_RATE_LIMIT, ...).
// Secrets are never readable: the host keeps them and applies them itself.
type Config interface {
	Get(name string) string
}

// Logger writes structured log lines; the host adds time and request id.
type Logger interface {
	Log(rec *abi.LogRecord)
}

// Memo is a small store of hints the host keeps for a function across its
// calls and instances on one host (schema/abi.md, "Memo"): what a module's
// own memory, reset after every call, cannot keep. It is never the record:
// an entry may be gone at any time (its time to live, the store's size, a
// restart), and hosts are not shared. Env.Memo is nil where the host keeps
// none.
type Memo interface {
	// Get returns the entry's value, or nil.
	Get(key string) []byte
	// Put sets a non-empty value for ttl.
	Put(key string, value []byte, ttl time.Duration)
	// Add adds delta to the entry's counter (0 when absent or not a
	// counter), keeps it for ttl, and returns the new count.
	Add(key string, delta int64, ttl time.Duration) int64
}

// Env bundles the host services for one request.
type Env struct {
	Ledger    Ledger
	Transport Transport
	Model     Model
	Config    Config
	Logger    Logger
	Memo      Memo // nil: none
}

// Handler is a route function: one request in, one response out.
type Handler func(env *Env, req *abi.Request) abi.Response

// Info logs at info level with key/value attributes.
func (e *Env) Info(msg string, kv ...string) { e.log(abi.LogInfo, msg, kv) }

// Warn logs at warn level with key/value attributes.
func (e *Env) Warn(msg string, kv ...string) { e.log(abi.LogWarn, msg, kv) }

// Error logs at error level with key/value attributes.
func (e *Env) Error(msg string, kv ...string) { e.log(abi.LogError, msg, kv) }

func (e *Env) log(level uint8, msg string, kv []string) {
	if e.Logger == nil {
		return
	}
	rec := abi.LogRecord{Level: level, Message: msg}
	for i := 0; i+1 < len(kv); i += 2 {
		rec.Attrs = append(rec.Attrs, abi.Header{Name: kv[i], Value: kv[i+1]})
	}
	e.Logger.Log(&rec)
}

// MapConfig is a Config backed by a map, for tests and native callers.
type MapConfig map[string]string

// Get returns the setting or "".
func (m MapConfig) Get(name string) string { return m[name] }

// Do makes the outbound call of an Await here and now, for callers that run
// a function natively (tests, benchmarks). Module hosts make the call
// themselves, while no instance waits on it, and hand the result back in
// Request.Resume.
func (e *Env) Do(a *abi.Await) abi.Resume {
	res := abi.Resume{State: a.State}
	switch {
	case a.Fetch != nil:
		var f abi.FetchResponse
		if e.Transport == nil {
			f = abi.FetchResponse{ErrKind: abi.FetchErrDenied, ErrMsg: "no transport"}
		} else if got, err := e.Transport.Fetch(a.Fetch); err != nil {
			f = abi.FetchResponse{ErrKind: abi.FetchErrConnect, ErrMsg: err.Error()}
		} else {
			f = got
		}
		res.Fetch = &f
	case a.AI != nil:
		var m abi.AIResponse
		if e.Model == nil {
			m = abi.AIResponse{ErrKind: abi.FetchErrDenied, ErrMsg: "no model binding"}
		} else if got, err := e.Model.Run(a.AI); err != nil {
			m = abi.AIResponse{ErrKind: abi.FetchErrConnect, ErrMsg: err.Error()}
		} else {
			m = got
		}
		res.AI = &m
	}
	return res
}
