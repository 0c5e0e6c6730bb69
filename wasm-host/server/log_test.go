package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/policy"
	"decisiongateway/wasm-host/hostconfig"
	"decisiongateway/wasm-host/routes"
	"decisiongateway/wasm-host/runtime"
)

// noting answers with status after noting a cause, as the host's fetch
// does when an outbound call fails.
type noting struct {
	status int
	cause  string
}

func (n noting) Handle(ctx context.Context, _ *abi.Request) (abi.Response, error) {
	if n.cause != "" {
		NoteCause(ctx, n.cause)
	}
	if n.status == 200 {
		return abi.Response{Status: 200}, nil
	}
	return policy.ErrorAs(n.status, contract.UpstreamError, "the upstream failed"), nil
}

// GATEWAY_LOG_LEVEL=warn keeps the answers the gateway failed to give and
// drops the rest; a 502 is an error carrying its code and noted cause.
func TestLogLevelsAndCauses(t *testing.T) {
	level, err := hostconfig.LogLevel("WARN")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		status int
		cause  string
		want   string // level logged, "" for none
	}{{200, "", ""}, {503, "", "WARN"}, {502, "upstream POST http://u/v1/x: answered HTTP 500 after 3ms", "ERROR"}, {504, "", "ERROR"}} {
		var logs bytes.Buffer
		s := &Server{Routes: routes.Table, Functions: map[string]Handler{"config": noting{c.status, c.cause}}, Timeout: time.Minute,
			Log: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: level}))}
		s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/service/config", nil))
		if c.want == "" {
			if logs.Len() != 0 {
				t.Errorf("%d at warn: logged %s", c.status, logs.String())
			}
			continue
		}
		var line map[string]any
		if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
			t.Fatalf("%d: %v in %q", c.status, err, logs.String())
		}
		if line["level"] != c.want || line["code"] != "upstream_error" || line["cause"] != c.cause || line["status"] != float64(c.status) {
			t.Errorf("%d: logged %v", c.status, line)
		}
	}
	for _, bad := range []string{"loud", "3", "info+2"} {
		if _, err := hostconfig.LogLevel(bad); err == nil || !strings.Contains(err.Error(), "GATEWAY_LOG_LEVEL") {
			t.Errorf("LogLevel(%q): %v", bad, err)
		}
	}
}

// limited answers as a function refusing a request does: a 4xx with its
// error code.
type limited struct{}

func (limited) Handle(context.Context, *abi.Request) (abi.Response, error) {
	return policy.Error(contract.RateLimitExceeded, "the window is exhausted"), nil
}

// At info, a refused request's line names its error code (no cause: the
// gateway did not fail); a success's line has none.
func TestRequestLineNamesTheErrorCodeOfARefusal(t *testing.T) {
	for _, c := range []struct {
		h    Handler
		code any
	}{{limited{}, "rate_limit_exceeded"}, {noting{200, ""}, nil}} {
		var logs bytes.Buffer
		s := &Server{Routes: routes.Table, Functions: map[string]Handler{"config": c.h}, Timeout: time.Minute,
			Log: slog.New(slog.NewJSONHandler(&logs, nil))}
		s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/service/config", nil))
		var line map[string]any
		if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
			t.Fatalf("%v in %q", err, logs.String())
		}
		if line["level"] != "INFO" || line["code"] != c.code || line["cause"] != nil {
			t.Errorf("logged %v, want code %v", line, c.code)
		}
	}
}

// refusing fails as a pool does that found no instance in time.
type refusing struct{ err error }

func (r refusing) Handle(context.Context, *abi.Request) (abi.Response, error) {
	return abi.Response{}, r.err
}

// A request refused for overload is answered 503 overloaded with a
// Retry-After, and logged once: its request line, a warning with the cause.
func TestOverloadedIsAnsweredWithRetryAfterAndLoggedOnce(t *testing.T) {
	var logs bytes.Buffer
	err := fmt.Errorf("%w: no free instance within the queue timeout", runtime.ErrOverloaded)
	s := &Server{Routes: routes.Table, Functions: map[string]Handler{"config": refusing{err}}, Timeout: time.Minute,
		Log: slog.New(slog.NewJSONHandler(&logs, nil))}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest("GET", "/api/service/config", nil))
	if w.Code != 503 || w.Header().Get(policy.HErrorCode) != string(contract.Overloaded) || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("answered %d %v", w.Code, w.Header())
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	var line map[string]any
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &line) != nil {
		t.Fatalf("logged %q, want one request line", logs.String())
	}
	if line["level"] != "WARN" || line["msg"] != "request" || line["code"] != "overloaded" || line["cause"] != err.Error() {
		t.Fatalf("logged %v", line)
	}
}

// holding answers once release is closed, telling entered when it starts.
type holding struct{ entered, release chan struct{} }

func (h holding) Handle(context.Context, *abi.Request) (abi.Response, error) {
	h.entered <- struct{}{}
	<-h.release
	return abi.Response{Status: 200}, nil
}

// Past MaxRequests in flight a request is refused at once, without reaching
// its function; once one finishes the next is served.
func TestRequestsPastTheLimitAreRefusedAtOnce(t *testing.T) {
	h := holding{entered: make(chan struct{}, 4), release: make(chan struct{})}
	var logs bytes.Buffer
	s := &Server{Routes: routes.Table, Functions: map[string]Handler{"config": h}, Timeout: time.Minute, MaxRequests: 2,
		Log: slog.New(slog.NewJSONHandler(&logs, nil))}
	get := func() *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("GET", "/api/service/config", nil))
		return w
	}
	held := make(chan int, 2)
	for range 2 {
		go func() { held <- get().Code }()
		<-h.entered
	}
	third := make(chan *httptest.ResponseRecorder, 1)
	go func() { third <- get() }()
	select {
	case w := <-third:
		if w.Code != 503 || w.Header().Get(policy.HErrorCode) != string(contract.Overloaded) || w.Header().Get("Retry-After") != "1" {
			t.Fatalf("a third request with two in flight and a limit of 2: %d %v", w.Code, w.Header())
		}
	case <-h.entered:
		close(h.release)
		t.Fatal("a third request with two in flight and a limit of 2 reached its function")
	}
	h.release <- struct{}{}
	if code := <-held; code != 200 {
		t.Fatalf("a held request answered %d", code)
	}
	close(h.release)
	if w := get(); w.Code != 200 {
		t.Fatalf("a request once one had finished: %d", w.Code)
	}
	if code := <-held; code != 200 {
		t.Fatalf("a held request answered %d", code)
	}
	if !strings.Contains(logs.String(), `"cause":"GATEWAY_MAX_REQUESTS requests in flight"`) {
		t.Fatalf("the refusal's log line names no cause: %s", logs.String())
	}
}
