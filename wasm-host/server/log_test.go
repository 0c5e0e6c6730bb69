package server

import (
	"bytes"
	"context"
	"encoding/json"
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
