//go:build wasip1 && !socket

// Package guest is the module side of the host ABI (schema/abi.md). A route
// function's main package calls Serve once from init; the exports below let
// the host hand it requests, and the imports reach the host's services.
//
// A module serves one request at a time: the host never re-enters an
// instance, so the package keeps its buffers in globals and reuses them.
package guest

import (
	"encoding/binary"
	"time"
	"unsafe"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/platform"
	"decisiongateway/shared/settings"
)

var (
	handler platform.Handler
	env     = platform.Env{
		Ledger:    ledger{},
		Transport: transport{},
		Model:     model{},
		Config:    config{},
		Logger:    logger{},
		Memo:      memo{},
	}

	// scratch receives import results; grown when a result does not fit.
	scratch = make([]byte, 16<<10)
	msg     []byte
)

// Serve registers the function's handler and reads the settings a module
// may read. Call it from init: what init leaves is what every call starts
// from (schema/abi.md, "The arena"), so settings read here are read once
// per instance, not a dozen host calls per request.
func Serve(h platform.Handler) {
	handler = h
	for _, name := range contract.ModuleSettings() {
		config{}.Get(name)
	}
	settings.Fix(config{})
}

//go:wasmexport gateway_abi_version
func abiVersion() uint32 { return abi.Version }

// gateway_handle decodes the request in the alloc'd buffer, runs the handler
// and returns the encoded response as ptr<<32 | len.
//
//go:wasmexport gateway_handle
func handle(ptr, n uint32) uint64 {
	req, err := abi.DecodeRequest(inBuf[:n])
	var resp abi.Response
	if err != nil {
		resp = abi.Response{Status: 400, Body: []byte(err.Error())}
	} else {
		resp = handler(&env, &req)
	}
	return respond(&resp)
}

func ptrOf(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

// Imports that answer, named for call (TinyGo cannot take an imported
// function as a value).
const (
	impLedger = iota
	impFetch
	impAI
	impConfig
	impMemo
)

// call runs one import with the request in msg and returns its result,
// fetching it with gateway_take when it did not fit the scratch buffer.
func call(imp int) []byte {
	p, l, o, c := ptrOf(msg), uint32(len(msg)), ptrOf(scratch), uint32(len(scratch))
	var n uint32
	switch imp {
	case impLedger:
		n = ledgerImport(p, l, o, c)
	case impFetch:
		n = fetchImport(p, l, o, c)
	case impAI:
		n = aiImport(p, l, o, c)
	case impConfig:
		n = configImport(p, l, o, c)
	case impMemo:
		n = memoImport(p, l, o, c)
	}
	if n <= c {
		return scratch[:n]
	}
	scratch = make([]byte, n)
	takeResult(ptrOf(scratch), n)
	return scratch[:n]
}

//go:wasmimport gateway ledger
func ledgerImport(reqPtr, reqLen, outPtr, outCap uint32) uint32

//go:wasmimport gateway fetch
func fetchImport(reqPtr, reqLen, outPtr, outCap uint32) uint32

//go:wasmimport gateway ai
func aiImport(reqPtr, reqLen, outPtr, outCap uint32) uint32

//go:wasmimport gateway config
func configImport(reqPtr, reqLen, outPtr, outCap uint32) uint32

//go:wasmimport gateway memo
func memoImport(reqPtr, reqLen, outPtr, outCap uint32) uint32

//go:wasmimport gateway log
func logImport(ptr, n uint32)

//go:wasmimport gateway take
func takeResult(outPtr, n uint32)

type ledger struct{}

func (ledger) Exec(b *abi.Batch) (abi.BatchResult, error) {
	msg = abi.AppendBatch(msg[:0], b)
	return abi.DecodeBatchResult(call(impLedger))
}

type transport struct{}

func (transport) Fetch(r *abi.FetchRequest) (abi.FetchResponse, error) {
	msg = abi.AppendFetchRequest(msg[:0], r)
	return abi.DecodeFetchResponse(call(impFetch))
}

type model struct{}

func (model) Run(r *abi.AIRequest) (abi.AIResponse, error) {
	msg = abi.AppendAIRequest(msg[:0], r)
	return abi.DecodeAIResponse(call(impAI))
}

// config caches what the host answers: settings are fixed for a host's
// life, and a request reads about a dozen of them. Serve fills the cache at
// init; a name read later is asked for then (and forgotten at the reset).
type config struct{}

var settingsRead = map[string]string{}

func (config) Get(name string) string {
	if v, ok := settingsRead[name]; ok {
		return v
	}
	msg = append(msg[:0], name...)
	v := string(call(impConfig))
	settingsRead[name] = v
	return v
}

type memo struct{}

func (memo) Get(key string) []byte {
	msg = abi.AppendMemoRequest(msg[:0], &abi.MemoRequest{Op: abi.MemoGet, Key: key})
	v := call(impMemo)
	if len(v) == 0 {
		return nil
	}
	return append([]byte(nil), v...)
}

func (memo) Put(key string, value []byte, ttl time.Duration) {
	msg = abi.AppendMemoRequest(msg[:0], &abi.MemoRequest{Op: abi.MemoPut, Key: key, Value: value, TTLMillis: ttlMillis(ttl)})
	call(impMemo)
}

func (memo) Add(key string, delta int64, ttl time.Duration) int64 {
	msg = abi.AppendMemoRequest(msg[:0], &abi.MemoRequest{Op: abi.MemoAdd, Key: key, Delta: delta, TTLMillis: ttlMillis(ttl)})
	v := call(impMemo)
	if len(v) != 8 {
		return delta
	}
	return int64(binary.LittleEndian.Uint64(v))
}

func ttlMillis(d time.Duration) uint32 {
	return uint32(min(max(d/time.Millisecond, 0), 1<<31))
}

type logger struct{}

func (logger) Log(rec *abi.LogRecord) {
	msg = abi.AppendLogRecord(msg[:0], rec)
	logImport(ptrOf(msg), uint32(len(msg)))
}
