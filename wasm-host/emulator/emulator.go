// Package emulator is the upstream `gateway serve --dev` runs when no real
// provider is at hand: one loopback HTTP server that speaks all three
// upstream protocols, so `make run` answers decisions on a fresh machine
// with no account anywhere.
//
//	/vendor/v1/service, /vendor/v1/models   the vendor HTTP API (UPSTREAM_URL …/vendor/v1)
//	/edge/run/{model}                       Workers AI REST, the edge binding (UPSTREAM_URL …/edge)
//	/router/chat/completions, /router/models Chat Completions (UPSTREAM_URL …/router)
//
// Answers come from a lexical scorer (scorer.go): deterministic, and no
// model. Everything it says is labelled as an emulator: resolved models are
// named emulator/…, model lists say so, and every response carries
// X-Emulator: decision-gateway. The gateway's public configuration reports
// upstream.emulator: true (GATEWAY_EMULATOR=1).
package emulator

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"decisiongateway/shared/jsonw"
)

// Header marks every emulator response.
const (
	Header      = "X-Emulator"
	HeaderValue = "decision-gateway"
)

// maxBody bounds a request the emulator reads. Router prompts carry a JSON
// schema with every option, so they are larger than decision bodies.
const maxBody = 8 << 20

// Emulator is a running emulator.
type Emulator struct {
	// URL is the server's root, http://127.0.0.1:PORT.
	URL string
	srv *http.Server
}

// Start serves the emulator on a free loopback port until ctx ends or Close
// is called.
func Start(ctx context.Context, log *slog.Logger) (*Emulator, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e := &Emulator{
		URL: "http://" + ln.Addr().String(),
		srv: &http.Server{Handler: Handler(log), ReadHeaderTimeout: 10 * time.Second},
	}
	go func() {
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("upstream emulator stopped", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		e.Close()
	}()
	return e, nil
}

// Close stops the server.
func (e *Emulator) Close() error { return e.srv.Close() }

// BaseURL is the UPSTREAM_URL that points a kind at the emulator.
func (e *Emulator) BaseURL(kind string) string { return BaseURL(e.URL, kind) }

// BaseURL is the UPSTREAM_URL of kind for an emulator served at root.
func BaseURL(root, kind string) string {
	switch kind {
	case "edge":
		return root + "/edge"
	case "router":
		return root + "/router"
	}
	return root + "/vendor/v1"
}

// Handler is the emulator's HTTP handler (tests serve it themselves).
func Handler(log *slog.Logger) http.Handler {
	h := &handler{log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /vendor/v1/service", h.vendorService)
	mux.HandleFunc("GET /vendor/v1/models", h.vendorModels)
	mux.HandleFunc("POST /edge/run/{model...}", h.edgeRun)
	mux.HandleFunc("POST /router/chat/completions", h.routerChat)
	mux.HandleFunc("GET /router/models", h.routerModels)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(Header, HeaderValue)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "Decision Gateway upstream emulator (not a model: a deterministic lexical scorer)\n"+
			"  vendor: POST /vendor/v1/service, GET /vendor/v1/models\n"+
			"  edge:   POST /edge/run/{model}\n"+
			"  router: POST /router/chat/completions, GET /router/models\n")
	})
	return mux
}

type handler struct {
	log *slog.Logger
	seq atomic.Int64
}

// requestID numbers the emulator's answers, as a provider's tracking id.
func (h *handler) requestID() string { return "emu_" + strconv.FormatInt(h.seq.Add(1), 10) }

// read returns the request body, or writes 413 and returns nil.
func read(w http.ResponseWriter, r *http.Request) []byte {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody("request_too_large", "the request body is too large"))
		return nil
	}
	return b
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set(Header, HeaderValue)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// errorBody is the vendor and router error shape:
// {"error":{"type":…,"message":…}}.
func errorBody(typ, msg string) []byte {
	var w jsonw.Writer
	w.Open('{')
	w.Key("error")
	w.Open('{')
	w.FieldString("type", typ)
	w.FieldString("message", "emulator: "+msg)
	w.Close('}')
	w.Close('}')
	return w.B
}

// resolved names the model that "answered": the requested name under
// emulator/, so no answer can be mistaken for a real model's.
func resolved(model string) string {
	if model == "" {
		model = "model-latest"
	}
	if strings.HasPrefix(model, "emulator/") {
		return model
	}
	return "emulator/" + model
}

// countWords is the emulator's token count: words, deterministically.
func countWords(b []byte) int64 {
	return int64(len(strings.FieldsFunc(string(b), func(r rune) bool {
		return r == ' ' || r == '\n' || r == '\t' || r == '"' || r == ',' || r == ':' || r == '{' || r == '}' || r == '[' || r == ']'
	})))
}

func itoa(i int) string { return strconv.Itoa(i) }

// number writes a float as a JSON number.
func number(w *jsonw.Writer, f float64) {
	w.Raw(strconv.AppendFloat(nil, f, 'f', -1, 64))
}
