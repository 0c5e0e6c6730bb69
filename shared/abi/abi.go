// Package abi is the wire format of the host ABI: the messages that cross
// between a function module and its host. The same code is compiled into the
// TinyGo guests and into the Go host, so both sides agree by construction;
// schema/abi.md is the written contract the Workers shim implements.
//
// Every message is little-endian and length-prefixed: a string or byte slice
// is a u32 length followed by its bytes, a header list is a u32 count followed
// by name/value strings. Names of headers are lower-case on the wire.
package abi

// Version is the ABI version a module exports as gateway_abi_version. A host
// refuses to run a module whose version it does not implement.
const Version = 2

// Header is one HTTP header field. Name is lower-case.
type Header struct {
	Name, Value string
}

// Headers is an ordered header list; a name may repeat.
type Headers []Header

// Get returns the first value of name (lower-case), or "".
func (h Headers) Get(name string) string {
	for _, f := range h {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// Joined returns the values of name (lower-case) joined by ", ", as RFC
// 9110 §5.3 combines a repeated field and as the Workers runtime hands one
// to a function (the wazero host passes one entry per line), or "". Read a
// header with it wherever the two hosts must agree on a repeated one.
func (h Headers) Joined(name string) string {
	v, n := "", 0
	for _, f := range h {
		if f.Name != name {
			continue
		}
		if n++; n == 1 {
			v = f.Value
		} else {
			v += ", " + f.Value
		}
	}
	return v
}

// Has reports whether name (lower-case) is present.
func (h Headers) Has(name string) bool {
	for _, f := range h {
		if f.Name == name {
			return true
		}
	}
	return false
}

// Set replaces every value of name (lower-case) with value.
func (h *Headers) Set(name, value string) {
	h.Del(name)
	*h = append(*h, Header{name, value})
}

// Add appends a value of name (lower-case).
func (h *Headers) Add(name, value string) { *h = append(*h, Header{name, value}) }

// Del removes every value of name (lower-case).
func (h *Headers) Del(name string) {
	out := (*h)[:0]
	for _, f := range *h {
		if f.Name != name {
			out = append(out, f)
		}
	}
	*h = out
}

// Request is what the host hands to a function's handle export.
type Request struct {
	Method     string
	Path       string
	Query      string // raw query, without '?'
	ClientAddr string // the client's IP address as the host saw it
	RequestID  string // the platform request id, also in logs and X-Request-Id
	Headers    Headers
	Body       []byte
	// Resume is set when the host hands back the result of a call the
	// function asked for with Response.Await; nil for a fresh request. Only
	// a host sets it: nothing a client sends can produce one.
	Resume *Resume
}

// Response is what a function returns from handle.
type Response struct {
	Status  int
	Headers Headers
	Body    []byte
	// Await, when set, is not an answer: it asks the host to make one
	// outbound call and then call the function again with the same Request
	// and the result in Request.Resume. Status, Headers and Body are ignored.
	Await *Await
}

// Await is an outbound call a function hands to its host instead of waiting
// for it (schema/abi.md, "Awaiting"). Exactly one of Fetch and AI is set.
// The instance is free while the call runs, and the continuation may run on
// another instance, so everything it needs beyond the Request travels in
// State, which the host returns untouched.
type Await struct {
	Fetch *FetchRequest
	AI    *AIRequest
	State []byte
}

// Resume is the result of an Await: the call's answer (Fetch or AI, as
// asked) and the State the function saved.
type Resume struct {
	Fetch *FetchResponse
	AI    *AIResponse
	State []byte
}

// FetchRequest is an outbound HTTP request made through the host.
//
// The guest never holds an upstream secret: Credential names one the host
// keeps (see Credential* constants) and the host adds it as a Bearer
// Authorization header after its egress checks. A response to a fetch never
// carries that credential back.
type FetchRequest struct {
	Method     string
	URL        string
	Headers    Headers
	Body       []byte
	TimeoutMS  uint32 // 0: the host's default
	MaxBytes   uint32 // largest response body accepted; 0: the host's default
	Credential string
}

// CredentialUpstream asks the host to authenticate with UPSTREAM_API_KEY.
const CredentialUpstream = "upstream"

// Fetch error kinds, stable across hosts.
const (
	FetchErrTimeout  = "timeout"   // no complete answer before the deadline
	FetchErrConnect  = "connect"   // no connection, or it broke mid-answer
	FetchErrTooLarge = "too_large" // the body exceeded MaxBytes
	FetchErrDenied   = "denied"    // the host's egress policy refused the URL
	// FetchErrCredentialLeak: the answer to a request that carried a
	// credential contained that credential's value (in its body or a
	// header). The host dropped the whole answer; the guest never sees it.
	FetchErrCredentialLeak = "credential_leak"
)

// FetchResponse is the answer to a FetchRequest. When ErrKind is set the
// request produced no HTTP answer and Status is 0.
type FetchResponse struct {
	Status  int
	Headers Headers
	Body    []byte
	ErrKind string
	ErrMsg  string
}

// AIRequest runs a model through the edge-runtime binding: the Workers AI
// binding on Workers, its REST shape in the wazero host.
type AIRequest struct {
	Model string
	Input []byte // JSON
}

// AIResponse carries the binding's output JSON, or an error.
type AIResponse struct {
	Output  []byte // JSON
	Status  int    // HTTP-like status of the binding call (200 on success)
	ErrKind string
	ErrMsg  string
}

// Log levels of the log import.
const (
	LogDebug = 0
	LogInfo  = 1
	LogWarn  = 2
	LogError = 3
)

// LogRecord is one structured log line from a guest. The host adds the time,
// the function name and the request id.
type LogRecord struct {
	Level   uint8
	Message string
	Attrs   []Header // key/value pairs
}
