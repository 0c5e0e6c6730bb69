package observability_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"decisiongateway/testkit/hosttest"
)

// Every 502 and 504 is logged as an error with its code and its cause (the
// failed upstream call, or why the function stopped), and the operator's
// upstream key appears nowhere in the log, even when the upstream echoes it.
func TestBadGatewayAndTimeoutAreLoggedWithTheirCause(t *testing.T) {
	var mode atomic.Value
	vendor := hosttest.NewRecorder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		switch mode.Load() {
		case "500":
			w.WriteHeader(500)
			w.Write([]byte(`{"error":"internal"}`))
		case "echo":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"error":"bad key ` + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + `"}`))
		case "hang":
			<-r.Context().Done() // until the gateway gives up on it
		}
	})
	h := start(t, "file:"+t.TempDir()+"/ledger.db", vendor, "GATEWAY_REQUEST_TIMEOUT", "3s")
	_, key := h.NewAccount("logged@example.com", 100)
	for _, c := range []struct {
		mode, cause string
		status      int
	}{
		{"500", "answered HTTP 500", 502},
		{"echo", "credential_leak", 502},
		{"hang", "timeout", 504},
	} {
		mode.Store(c.mode)
		r := send(t, h, "POST", "/v1/service", key, decision)
		if r.status != c.status {
			t.Errorf("%s: status %d, want %d", c.mode, r.status, c.status)
			continue
		}
		line := logLine(t, h.Logs(), r.header.Get("X-Request-Id"))
		if line == nil {
			t.Errorf("%s: no log line for request %s", c.mode, r.header.Get("X-Request-Id"))
			continue
		}
		cause, _ := line["cause"].(string)
		if line["level"] != "ERROR" || line["code"] != r.header.Get("X-Service-Error-Code") || !strings.Contains(cause, c.cause) {
			t.Errorf("%s: logged %v, want level ERROR, code %q and a cause with %q", c.mode, line, r.header.Get("X-Service-Error-Code"), c.cause)
		}
	}
	if seen := vendor.Seen(); len(seen) != 3 || seen[1].Header.Get("Authorization") != "Bearer "+upstreamKey {
		t.Fatalf("the vendor saw %d requests; the key was sent as %q", len(seen), seen[1].Header.Get("Authorization"))
	}
	if strings.Contains(h.Logs(), upstreamKey) {
		t.Errorf("the upstream key is in the log:\n%s", h.Logs())
	}
}

// logLine finds the request line of request id rid in a JSON log.
func logLine(t *testing.T, logs, rid string) map[string]any {
	for _, l := range strings.Split(logs, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" && m["request_id"] == rid {
			return m
		}
	}
	return nil
}
