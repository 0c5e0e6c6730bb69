//go:build wasip1 && socket

package guest

// The socket build (schema/socket.md): the same exports as the ABI build,
// so a host hands requests in the same way, but no `gateway` imports. The
// platform seam is implemented here, inside the module, with the host's
// own Go code: the ledger executor (Hrana to sqld or Turso, on a
// WebSocket or over HTTP) and the egress client (the operator's
// credentials bound to their origins, redirects not followed, echoed
// credentials dropped), both dialling through the WasmEdge sockets
// extension. Settings and secrets come from the module's environment.
//
// An Await is resolved here, synchronously: the instance waits on its
// upstream, as a WasmEdge process serving one request would.

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/platform"
	"decisiongateway/shared/policy"
	"decisiongateway/shared/settings"
	"decisiongateway/wasm-host/egress"
	"decisiongateway/wasm-host/hostconfig"
	"decisiongateway/wasm-host/ledger"
)

// maxAwaits bounds the Awaits of one request, as the hosts do.
const maxAwaits = 8

var (
	handler platform.Handler
	env     = platform.Env{
		Ledger:    socketLedger{},
		Transport: socketTransport{},
		Model:     socketModel{},
		Config:    envConfig{},
		Logger:    &lineLogger{},
	}
)

// Serve registers the function's handler. Call it from init.
func Serve(h platform.Handler) { handler = h }

//go:wasmexport gateway_abi_version
func abiVersion() uint32 { return abi.Version }

// gateway_sockets marks a socket build: a host runs it with the sockets
// extension and its environment, and without the `gateway` imports.
//
//go:wasmexport gateway_sockets
func sockets() uint32 { return 1 }

//go:wasmexport gateway_handle
func handle(ptr, n uint32) uint64 {
	req, err := abi.DecodeRequest(inBuf[:n])
	var resp abi.Response
	if err != nil {
		resp = abi.Response{Status: 400, Body: []byte(err.Error())}
	} else if _, err := checkedSettings(); err != nil {
		resp = policy.Error(contract.Misconfigured, "this module's settings are invalid: "+err.Error())
	} else {
		started = time.Now()
		env.Logger.(*lineLogger).requestID = req.RequestID
		resp = Run(&env, handler, &req)
	}
	return respond(&resp)
}

// The settings the module reads, from its environment, checked once as a
// host checks them at start (hostconfig.Check) and in their canonical
// spelling. The wazero host hands over values it has checked already, but
// a runtime of the operator's own hands over the environment as it is:
// unchecked, SERVICE_RATE_LIMIT=abc would be read as 0 and refuse every
// decision, UPSTREAM_KIND=Edge would be no upstream. As on Workers, an
// invalid setting makes every request 503 misconfigured, naming it.
var (
	settingsOnce sync.Once
	checked      map[string]string
	checkErr     error
)

func checkedSettings() (map[string]string, error) {
	settingsOnce.Do(func() {
		checked = map[string]string{}
		for i := range contract.Settings {
			s := &contract.Settings[i]
			v := os.Getenv(s.Name)
			if !s.Module || v == "" {
				continue
			}
			got, err := hostconfig.Check(s, v)
			if err != nil {
				checkErr = err
				env.Error("invalid setting: this module serves nothing until it is fixed", "error", err.Error())
				return
			}
			checked[s.Name] = got
		}
	})
	return checked, checkErr
}

// Run serves one request to its end: every Await the handler asks for is
// made here and handed back as the Resume, as a host would.
func Run(env *platform.Env, h platform.Handler, req *abi.Request) abi.Response {
	resp := h(env, req)
	for i := 0; resp.Await != nil; i++ {
		if i == maxAwaits {
			return abi.Response{Status: 500, Body: []byte("too many awaits")}
		}
		res := env.Do(resp.Await)
		req.Resume = &res
		resp = h(env, req)
	}
	return resp
}

// started is when the current request reached the module.
var started time.Time

// deadline bounds one ledger batch: the request's deadline, which a host
// may also enforce by stopping the instance.
func deadline() (context.Context, context.CancelFunc) {
	s := settings.Read(env.Config)
	return context.WithDeadline(context.Background(), started.Add(s.RequestTimeout))
}

// upstreamDeadline bounds an outbound call: the request's deadline less the
// margin the function keeps to settle (Settings.UpstreamTimeout), counted
// from the request's start, not the call's, so that a slow reservation
// cannot push the call past the host's deadline and leave it unsettled.
func upstreamDeadline() (context.Context, context.CancelFunc) {
	s := settings.Read(env.Config)
	return context.WithDeadline(context.Background(), started.Add(s.UpstreamTimeout()))
}

// The ledger and egress client are made on first use, from the environment
// the module was started with.
var (
	ledgerOnce sync.Once
	led        *ledger.Executor
	ledErr     error

	egressOnce sync.Once
	out        *egress.Client
)

type socketLedger struct{}

func (socketLedger) Exec(b *abi.Batch) (abi.BatchResult, error) {
	ledgerOnce.Do(func() {
		ctx, cancel := deadline()
		defer cancel()
		led, ledErr = ledger.Open(ctx, os.Getenv("LIBSQL_URL"), os.Getenv("LIBSQL_AUTH_TOKEN"))
	})
	if ledErr != nil {
		return abi.BatchResult{Err: "ledger: " + ledErr.Error()}, nil
	}
	ctx, cancel := deadline()
	defer cancel()
	return led.Exec(ctx, b), nil
}

func client() *egress.Client {
	egressOnce.Do(func() {
		out = egress.ForOperator(env.Config.Get("UPSTREAM_URL"), os.Getenv("UPSTREAM_API_KEY"), env.Config.Get("MAIL_URL"), os.Getenv("MAIL_API_KEY"))
	})
	return out
}

type socketTransport struct{}

func (socketTransport) Fetch(r *abi.FetchRequest) (abi.FetchResponse, error) {
	ctx, cancel := upstreamDeadline()
	defer cancel()
	return client().Fetch(ctx, r), nil
}

type socketModel struct{}

func (socketModel) Run(r *abi.AIRequest) (abi.AIResponse, error) {
	if env.Config.Get("UPSTREAM_KIND") != settings.KindEdge {
		return abi.AIResponse{ErrKind: abi.FetchErrDenied, ErrMsg: "no model binding configured"}, nil
	}
	ctx, cancel := upstreamDeadline()
	defer cancel()
	// The base without its trailing slashes, as the wazero host holds it
	// (hostconfig), so the call goes to {base}/run/{model} on both builds.
	return client().RunAI(ctx, strings.TrimRight(env.Config.Get("UPSTREAM_URL"), "/"), r), nil
}

// envConfig reads the plain settings from the environment, checked: the
// same allow-list as the hosts' config import (contract.ModuleSettings,
// hostconfig.Exposed), so a function reads no secret in this build either.
type envConfig struct{}

func (envConfig) Get(name string) string {
	m, _ := checkedSettings()
	return m[name]
}

// lineLogger writes each record as one JSON line on stderr, with the
// request id; a host reads the lines into its own log. The secrets the
// module holds are replaced before a line leaves it.
type lineLogger struct{ requestID string }

type logLine struct {
	Level     uint8      `json:"level"`
	Message   string     `json:"msg"`
	RequestID string     `json:"request_id,omitempty"`
	Attrs     [][]string `json:"attrs,omitempty"`
}

var secretNames = []string{"UPSTREAM_API_KEY", "MAIL_API_KEY", "LIBSQL_AUTH_TOKEN"}

func (l *lineLogger) Log(rec *abi.LogRecord) {
	line := logLine{Level: rec.Level, Message: redact(rec.Message), RequestID: l.requestID}
	for _, kv := range rec.Attrs {
		line.Attrs = append(line.Attrs, []string{redact(kv.Name), redact(kv.Value)})
	}
	b, err := json.Marshal(&line)
	if err != nil {
		return
	}
	os.Stderr.WriteString(LogPrefix + string(b) + "\n")
}

// redact replaces the secrets in one text of a record. It runs before the
// line is encoded: JSON escapes some characters (<, >, &, ", \), and a
// secret holding one would no longer match in the encoded line.
func redact(s string) string {
	for _, name := range secretNames {
		if v := os.Getenv(name); len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}

// LogPrefix starts every log line the module writes, so a host tells them
// from anything else on stderr (a panic's trace).
const LogPrefix = "gateway-log "
