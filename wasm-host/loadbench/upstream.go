package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"time"

	"decisiongateway/wasm-host/emulator"
)

// vendorPath is where the gateway calls its vendor upstream
// ({UPSTREAM_URL}/service with UPSTREAM_URL = fake + "/v1"), and where the
// proxy forwards the client's POST /v1/service unchanged.
const vendorPath = "/v1/service"

// fakeUpstream is the vendor API both sides call. Its answers are computed
// once per payload by the project's emulator (so they are valid answers the
// gateway accepts) and then served as stored bytes after a delay, so the
// upstream's own CPU is negligible next to what is measured.
type fakeUpstream struct {
	URL     string // root; the vendor base URL is URL + "/v1"
	answers map[string][]byte
	latency atomic.Int64 // time.Duration before each answer
	busy    atomic.Int64 // requests being answered now
	served  atomic.Int64
	unknown atomic.Int64 // bodies with no payload marker
	srv     *http.Server
}

// startUpstream precomputes the answers and serves them on a free loopback
// port.
func startUpstream(payloads []payload) (*fakeUpstream, error) {
	u := &fakeUpstream{answers: map[string][]byte{}}
	emu := emulator.Handler(slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, p := range payloads {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/vendor/v1/service", bytes.NewReader(p.Body))
		req.Header.Set("Content-Type", "application/json")
		emu.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			return nil, fmt.Errorf("emulator refused payload %s: %d %s", p.Name, rec.Code, rec.Body.String())
		}
		u.answers[p.Name] = rec.Body.Bytes()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u.URL = "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+vendorPath, u.service)
	u.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: discardLog()}
	go u.srv.Serve(ln)
	return u, nil
}

// service answers one decision with the payload's stored answer after the
// configured latency. A body without a marker gets a 400, which both sides
// would count as an error.
func (u *fakeUpstream) service(w http.ResponseWriter, r *http.Request) {
	u.busy.Add(1)
	defer u.busy.Add(-1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	answer, ok := u.answers[payloadName(body)]
	if !ok {
		u.unknown.Add(1)
		http.Error(w, `{"error":{"type":"invalid_request_error","message":"loadbench: unknown payload"}}`, http.StatusBadRequest)
		return
	}
	if d := time.Duration(u.latency.Load()); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	n := u.served.Add(1)
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["X-Vendor-Request-Id"] = []string{"lb_" + strconv.FormatInt(n, 10)}
	w.Write(answer)
}

// setLatency sets the delay of every answer from now on.
func (u *fakeUpstream) setLatency(d time.Duration) { u.latency.Store(int64(d)) }

// waitIdle waits until no request is being answered (what a cut run left
// behind has drained) or max passes; it reports whether it is idle.
func (u *fakeUpstream) waitIdle(max time.Duration) bool {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		if u.busy.Load() == 0 {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return u.busy.Load() == 0
}

func (u *fakeUpstream) close() { u.srv.Close() }
