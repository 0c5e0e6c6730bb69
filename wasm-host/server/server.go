// Package server is the wazero host's HTTP front: it matches the route,
// reads the body within the route's limit, gives the request an id and a
// deadline, runs the function on a pooled instance, and writes the answer
// with the headers every response carries.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/policy"
	"decisiongateway/wasm-host/routes"
	"decisiongateway/wasm-host/runtime"
)

// causeKey finds a request's causeNote in its context.
type causeKey struct{}

// causeNote is the request's context, carrying what went wrong with its
// outbound calls (NoteCause) to the request's log line. It is the context
// itself, so noting costs the request one allocation, not two.
type causeNote struct {
	context.Context
	cause atomic.Pointer[string]
}

func (c *causeNote) Value(key any) any {
	if key == (causeKey{}) {
		return c
	}
	return c.Context.Value(key)
}

func (c *causeNote) String() string {
	if p := c.cause.Load(); p != nil {
		return *p
	}
	return ""
}

// NoteCause records why an outbound call made for ctx's request failed,
// for the log line of its answer (a 502 or 504 names its cause). The last
// note wins. Outside a request served by a Server it does nothing. The
// text must hold no secret; the host's log redaction is the second line.
func NoteCause(ctx context.Context, cause string) {
	if c, ok := ctx.Value(causeKey{}).(*causeNote); ok {
		c.cause.Store(&cause)
	}
}

// Handler is what serves a route: a pooled function module.
type Handler interface {
	Handle(ctx context.Context, req *abi.Request) (abi.Response, error)
}

// Server serves the route table.
type Server struct {
	Routes    []routes.Route
	Functions map[string]Handler
	Timeout   time.Duration
	Log       *slog.Logger
	// Static, when set, serves GET requests no route matches (the console).
	Static http.Handler
	// Client decides the client address a function sees (trusted proxies).
	Client ClientAddr
	// BodyTimeout bounds reading a request's body, from the moment its
	// headers are in; 0 means no bound. A client that sends part of its
	// body and stalls is answered 408 and its connection closed when it
	// passes, and no function has run: the body is read whole first, so a
	// slow client holds a connection and a goroutine, never an instance.
	BodyTimeout time.Duration
	// Observer, when set, is told of every answer but the static files'
	// (the host's metrics, wasm-host/metrics).
	Observer Observer
	// MaxRequests bounds the requests for functions served at once, those
	// awaiting their upstream included; past it a request is answered 503
	// overloaded before its body is read. 0 means no bound. What a request
	// in flight holds (its connection's goroutine and buffers, its body,
	// its upstream connection) is what the host's memory grows with under
	// load, and the queue timeout bounds a request's wait, not how many
	// wait: at 6,000 requests a second on 2 cores, about 10,000 were held
	// at once, 1.2 GiB (schema/abi.md, "Overload").
	MaxRequests int
	inFlight    atomic.Int64
}

// Observer is told of every request the server answered: route is the
// table's entry, nil when no route took the request.
type Observer interface {
	Served(route *routes.Route, resp *abi.Response, elapsed time.Duration)
}

// NewRequestID returns a fresh platform request id: 32 lower-case hex
// digits, the first 12 the milliseconds since 1970 and the other 20 random
// (80 bits), so ids sort by time. The id is the ledger's key for the
// request (schema/ledger.md, "Request ids"): random ids put every new row
// on a random page of the key's index, and each commit wrote as many index
// pages to the WAL as it held decisions.
func NewRequestID() string {
	var b [16]byte
	ms := uint64(time.Now().UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	rand.Read(b[6:])
	return hex.EncodeToString(b[:])
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rid := NewRequestID()
	resp, route, cause := s.serve(w, r, rid)
	if resp.Status == 0 && s.Static != nil {
		// No route: the console's static files, which set their own headers.
		w.Header().Set("X-Request-Id", rid)
		s.Static.ServeHTTP(w, r)
		return
	}
	write(w, r, rid, &resp)
	elapsed := time.Since(start)
	if s.Observer != nil {
		s.Observer.Served(route, &resp, elapsed)
	}
	s.logAnswer(r, rid, route, &resp, cause, elapsed)
}

// logAnswer writes the request's log line, with the error code of an
// answer that has one. An answer the gateway failed to
// give (5xx) is a warning, and a 502 or 504, where something beyond the
// function failed, an error; both carry the error code and, when the host
// knows it, the cause: the failed outbound call, or why the function
// stopped. Log levels: GATEWAY_LOG_LEVEL (README, "Configuration").
func (s *Server) logAnswer(r *http.Request, rid string, route *routes.Route, resp *abi.Response, cause string, elapsed time.Duration) {
	level := slog.LevelInfo
	switch {
	case resp.Status == http.StatusBadGateway || resp.Status == http.StatusGatewayTimeout:
		level = slog.LevelError
	case resp.Status >= 500:
		level = slog.LevelWarn
	}
	ctx := r.Context()
	if !s.Log.Enabled(ctx, level) {
		return
	}
	fn := ""
	if route != nil {
		fn = route.Function
	}
	// The record is built here rather than by Logger.LogAttrs, which would
	// walk the stack for a source position that the handlers never print
	// (runtime.Callers: a tenth of the access log's CPU, perf).
	rec := slog.NewRecord(time.Now(), level, "request", 0)
	rec.AddAttrs(slog.String("request_id", rid), slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.String("function", fn), slog.Int("status", resp.Status),
		slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000))
	code := resp.Headers.Get(policy.HErrorCode)
	if level > slog.LevelInfo {
		rec.AddAttrs(slog.String("code", code), slog.String("cause", cause))
	} else if code != "" {
		// A refusal (4xx) names its error code, so the log tells a 429 of
		// the account's window from one of the address's sign-in limit.
		rec.AddAttrs(slog.String("code", code))
	}
	_ = s.Log.Handler().Handle(ctx, rec)
}

// serve returns the response for r, or Status 0 when no route matches and a
// static handler should answer; the route that took it; and what the host
// knows of why it failed, if it did.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, rid string) (abi.Response, *routes.Route, string) {
	route, allow := routes.Match(s.Routes, r.Method, r.URL.Path)
	if route == nil {
		if len(allow) > 0 {
			resp := policy.Error(contract.MethodNotAllowed, "this path does not accept "+r.Method)
			resp.Headers.Set(policy.HAllow, strings.Join(allow, ", "))
			return resp, nil, ""
		}
		if s.Static != nil && (r.Method == "GET" || r.Method == "HEAD") {
			return abi.Response{}, nil, ""
		}
		return policy.Error(contract.NotFound, "no such route"), nil, ""
	}
	fn, ok := s.Functions[route.Function]
	if !ok {
		return refused(route, policy.Error(contract.FunctionUnavailable, "the "+route.Function+" function is not deployed on this host")), route, "not deployed"
	}
	if s.MaxRequests > 0 {
		if s.inFlight.Add(1) > int64(s.MaxRequests) {
			s.inFlight.Add(-1)
			return refused(route, overloaded("this host is serving as many requests as it may; retry shortly")), route, "GATEWAY_MAX_REQUESTS requests in flight"
		}
		defer s.inFlight.Add(-1)
	}
	maxBody := route.MaxBody
	if maxBody == 0 {
		maxBody = contract.DefaultMaxBody
	}
	if r.ContentLength > maxBody {
		// Declared too large: refused from the header, so the client is
		// not asked for the body (no 100 Continue) and a Content-Length
		// that promises more than arrives is not waited for. The
		// connection closes: the unread body must not be taken for the
		// next request, nor read to skip it.
		resp := refused(route, tooLarge(maxBody))
		resp.Headers.Set("connection", "close")
		return resp, route, ""
	}
	body, err := s.readBody(w, r, maxBody)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		resp := refused(route, policy.Error(contract.BodyTimeout, "the request body did not arrive in time"))
		resp.Headers.Set("connection", "close")
		return resp, route, ""
	}
	if err != nil {
		return refused(route, policy.Error(contract.InvalidBody, "the request body could not be read")), route, ""
	}
	if int64(len(body)) > maxBody {
		// Refused before any function runs: it costs nothing.
		return refused(route, tooLarge(maxBody)), route, ""
	}
	req := abi.Request{
		Method:     r.Method,
		Path:       r.URL.Path,
		Query:      r.URL.RawQuery,
		ClientAddr: s.Client.Of(r),
		RequestID:  rid,
		Body:       body,
	}
	for name, values := range r.Header {
		lname := strings.ToLower(name)
		for _, v := range values {
			req.Headers = append(req.Headers, abi.Header{Name: lname, Value: v})
		}
	}
	if r.Host != "" {
		req.Headers = append(req.Headers, abi.Header{Name: "host", Value: r.Host})
	}
	// The request's deadline, not its connection, bounds the function: a
	// client that hangs up mid-decision must not stop it between reserving
	// and settling. The decision finishes, settles and is retained, so
	// resending the same Idempotency-Key replays it (spec §3.1, §7 rule 3).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.Timeout)
	defer cancel()
	note := &causeNote{Context: ctx}
	resp, err := fn.Handle(note, &req)
	if err != nil {
		return s.failure(ctx, rid, route, err), route, err.Error()
	}
	return resp, route, note.String()
}

// failure turns a function failure into a platform error. The instance that
// failed has already been discarded by the pool.
func (s *Server) failure(ctx context.Context, rid string, route *routes.Route, err error) abi.Response {
	if errors.Is(err, runtime.ErrOverloaded) {
		// Nothing ran, and the request's own line (a warning) names the
		// cause: under overload a second line per refused request would
		// only add to the load.
		return refused(route, overloaded("every instance of this function is busy; retry shortly"))
	}
	fn := route.Function
	s.Log.Error("function failed", "request_id", rid, "function", fn, "error", err.Error())
	switch {
	case errors.Is(err, runtime.ErrUnavailable):
		return refused(route, policy.Error(contract.FunctionUnavailable, "the "+fn+" function is not deployed on this host"))
	case errors.Is(err, context.DeadlineExceeded):
		return policy.Error(contract.FunctionTimeout, "the function did not finish before its deadline")
	}
	return policy.Error(contract.InternalError, "the function failed; the request id identifies it in the logs")
}

// refused is the host's answer resp to a request none of whose function
// ran: on a route that charges, it says that nothing was (X-Service-Credits:
// 0, spec §4.8), since a missing header means "unknown". A function that
// failed after it started (a timeout, a crash) may have reserved: its answer
// leaves the header out.
func refused(route *routes.Route, resp abi.Response) abi.Response {
	if route.Charges {
		resp.Headers.Set(policy.HServiceCredits, "0")
	}
	return resp
}

// tooLarge is the answer to a body over the route's cap of maxBody bytes.
func tooLarge(maxBody int64) abi.Response {
	return policy.Error(contract.BodyTooLarge, "the request body exceeds "+strconv.FormatInt(maxBody, 10)+" bytes")
}

// overloaded is the answer to a request refused before anything of it ran.
func overloaded(msg string) abi.Response {
	resp := policy.Error(contract.Overloaded, msg)
	resp.Headers.Set(policy.HRetryAfter, "1")
	return resp
}

// write sends resp. The platform owns Cache-Control (spec §1.4) and adds the
// request id unless the function set one (a replay keeps its original id).
func write(w http.ResponseWriter, r *http.Request, rid string, resp *abi.Response) {
	h := w.Header()
	for _, f := range resp.Headers {
		h[canonical(f.Name)] = append(h[canonical(f.Name)], f.Value)
	}
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if h.Get("X-Request-Id") == "" {
		h.Set("X-Request-Id", rid)
	}
	status := resp.Status
	if status < 100 || status > 999 {
		status = 500
	}
	w.WriteHeader(status)
	if r.Method != "HEAD" {
		w.Write(resp.Body)
	}
}

// spelled keeps the spec's spelling of headers whose Go canonical form
// differs (X-RateLimit-*); HTTP treats both alike, people read the spec's.
var spelled = map[string]string{
	"x-ratelimit-limit":              "X-RateLimit-Limit",
	"x-ratelimit-remaining":          "X-RateLimit-Remaining",
	"x-ratelimit-reset":              "X-RateLimit-Reset",
	"x-upstream-ratelimit-limit":     "X-Upstream-RateLimit-Limit",
	"x-upstream-ratelimit-remaining": "X-Upstream-RateLimit-Remaining",
	"x-upstream-ratelimit-reset":     "X-Upstream-RateLimit-Reset",
}

func canonical(name string) string {
	if s, ok := spelled[name]; ok {
		return s
	}
	return http.CanonicalHeaderKey(name)
}

// readBody reads at most maxBody+1 bytes of r's body within BodyTimeout.
// The deadline must not outlive the body: net/http watches for the client
// hanging up once the body ends, and a read deadline passing then would
// cancel the request while its function runs. net/http lifts it itself
// when it starts watching; it is lifted here as well so that this holds
// whatever the server's version (TestBodyTimeoutDoesNotCutALongDecision).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, maxBody int64) ([]byte, error) {
	if s.BodyTimeout <= 0 || r.ContentLength == 0 {
		return io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(s.BodyTimeout)) != nil {
		return io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err == nil {
		_ = rc.SetReadDeadline(time.Time{})
	}
	return body, err
}
