package app_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"decisiongateway/testkit/hosttest"
)

// A host opens its connection to the upstream while it starts, and its
// first decision goes out on that connection: the upstream accepted one
// before any decision and no other for it (egress.Client.Warm).
func TestFirstDecisionUsesTheConnectionOpenedAtStart(t *testing.T) {
	var accepted, requests atomic.Int64
	vendor := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		body, _ := io.ReadAll(r.Body)
		out, _ := json.Marshal(map[string]any{"model": "m", "answers": hosttest.Answers(body), "usage": map[string]int{"input_tokens": 1, "output_tokens": 1}})
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	}))
	vendor.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			accepted.Add(1)
		}
	}
	vendor.Start()
	t.Cleanup(vendor.Close)
	h := hosttest.Start(t, map[string]string{"UPSTREAM_KIND": "vendor", "UPSTREAM_URL": vendor.URL + "/v1"})
	for deadline := time.Now().Add(10 * time.Second); accepted.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the host opened no connection to the upstream while starting")
		}
	}
	_, key := h.NewAccount("warm@example.com", 100)
	if status := decide(t, h, key); status != 200 {
		t.Fatalf("decision: %d", status)
	}
	if requests.Load() != 1 || accepted.Load() != 1 {
		t.Fatalf("%d requests over %d connections, want one over the connection opened at start", requests.Load(), accepted.Load())
	}
	h.CheckInvariant()
}
