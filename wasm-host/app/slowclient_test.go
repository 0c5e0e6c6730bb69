package app_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"decisiongateway/testkit/hosttest"
)

const slowDecision = `{"state":"a ripe red apple","questions":{"fruit":{"type":"choice","criteria":{"apple":"an apple","pear":"a pear"}}}}`

// testDeadline bounds what the test itself waits for; the host's own
// timeouts are set far shorter through its settings.
const testDeadline = 60 * time.Second

// decisionHost is a host with one instance per function, short client
// timeouts, a fake vendor that answers every decision, and an account.
func decisionHost(t *testing.T) (*hosttest.Host, *hosttest.Recorder, string) {
	t.Helper()
	vendor := hosttest.NewRecorder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		out, _ := json.Marshal(map[string]any{"model": "m", "answers": hosttest.Answers(body), "usage": map[string]int{"input_tokens": 1, "output_tokens": 1}})
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	})
	h := hosttest.Start(t, map[string]string{
		"UPSTREAM_KIND": "vendor", "UPSTREAM_URL": vendor.URL + "/v1",
		"GATEWAY_POOL_SIZE": "1", "GATEWAY_BODY_TIMEOUT": "2s", "GATEWAY_READ_HEADER_TIMEOUT": "2s",
		"GATEWAY_MAX_HEADER_BYTES": "8192",
	})
	_, key := h.NewAccount("slow@example.com", 100)
	return h, vendor, key
}

func dial(t *testing.T, h *hosttest.Host) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(testDeadline))
	return c
}

// readToClose reads what the host sends until it closes the connection,
// failing if it has not within the test's deadline.
func readToClose(t *testing.T, c net.Conn) string {
	t.Helper()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("connection still open (%v) after reading %q", err, got)
	}
	return string(got)
}

func decide(t *testing.T, h *hosttest.Host, key string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", h.URL+"/v1/service", strings.NewReader(slowDecision))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: testDeadline}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func decideRequests(h *hosttest.Host) int64 {
	var n int64
	for _, f := range h.App.Releases.Metrics() {
		if f.Function == "decide" {
			for _, v := range f.Versions {
				n += v.Requests
			}
		}
	}
	return n
}

// A client that sends half its body and stalls is answered 408
// body_timeout and disconnected once GATEWAY_BODY_TIMEOUT passes, and no
// function ran for it. Meanwhile the host serves others, a decision on
// the only instance of decide included: the body is read whole before an
// instance is taken.
func TestHalfABodyIsCutOffWithoutRunningAFunction(t *testing.T) {
	h, vendor, key := decisionHost(t)
	slow := dial(t, h)
	head := "POST /v1/service HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer " + key +
		"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(slowDecision)) + "\r\n\r\n"
	if _, err := io.WriteString(slow, head+slowDecision[:len(slowDecision)/2]); err != nil {
		t.Fatal(err)
	}

	if status := decide(t, h, key); status != 200 {
		t.Fatalf("a decision while a client stalls: %d", status)
	}
	if resp, err := http.Get(h.URL + "/api/service/config"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("config while a client stalls: %v %v", resp, err)
	}

	got := readToClose(t, slow)
	if !strings.HasPrefix(got, "HTTP/1.1 408 ") || !strings.Contains(got, `"body_timeout"`) || !strings.Contains(got, "X-Service-Error-Source: platform") {
		t.Errorf("stalled client got %q", got)
	}
	if n := len(vendor.Seen()); n != 1 {
		t.Errorf("the upstream was called %d times, want 1 (the other client's)", n)
	}
	if n := decideRequests(h); n != 1 {
		t.Errorf("decide ran %d times, want 1 (the other client's)", n)
	}
	if n := h.Rows(`SELECT count(*) FROM requests`)[0][0].AsInt(); n != 1 {
		t.Errorf("%d decision attempts recorded, want 1", n)
	}
}

// A client that never finishes its headers (slowloris) is disconnected
// once GATEWAY_READ_HEADER_TIMEOUT passes, without an answer and without a
// function running; others are served meanwhile.
func TestStalledHeadersAreCutOff(t *testing.T) {
	h, vendor, key := decisionHost(t)
	slow := dial(t, h)
	io.WriteString(slow, "POST /v1/service HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer "+key+"\r\nX-Slow: 1")
	if status := decide(t, h, key); status != 200 {
		t.Fatalf("a decision while a client stalls: %d", status)
	}
	if got := readToClose(t, slow); got != "" {
		t.Errorf("stalled headers answered %q", got)
	}
	if n := decideRequests(h); n != 1 || len(vendor.Seen()) != 1 {
		t.Errorf("decide ran %d times, upstream called %d times; want 1 and 1", n, len(vendor.Seen()))
	}
}

// Headers over GATEWAY_MAX_HEADER_BYTES are refused with 431 before any
// function runs.
func TestOversizedHeadersAreRefused(t *testing.T) {
	h, _, key := decisionHost(t)
	c := dial(t, h)
	io.WriteString(c, "GET /v1/models HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer "+key+"\r\nX-Pad: "+strings.Repeat("a", 16<<10)+"\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("status %d", resp.StatusCode)
	}
	for _, f := range h.App.Releases.Metrics() {
		for _, v := range f.Versions {
			if v.Requests != 0 {
				t.Errorf("%s ran %d times", f.Function, v.Requests)
			}
		}
	}
}

// The body deadline ends with the body: a decision whose upstream takes
// longer than GATEWAY_BODY_TIMEOUT still answers its client.
func TestBodyTimeoutDoesNotCutALongDecision(t *testing.T) {
	h, vendor, key := decisionHost(t)
	answer := func(w http.ResponseWriter, r *http.Request, body []byte) {
		time.Sleep(3 * time.Second) // past the host's 2 s body timeout
		out, _ := json.Marshal(map[string]any{"model": "m", "answers": hosttest.Answers(body)})
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	}
	vendor.Handle(answer)
	if status := decide(t, h, key); status != 200 {
		t.Fatalf("a decision longer than the body timeout: %d", status)
	}
}
