//go:build linux

package wranglercompat_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"decisiongateway/testkit/testenv"
)

// answerVendorBadly plays a vendor that fails: it hangs until the caller
// gives up, answers 500, or answers a body that is no decision, as the
// state asks; otherwise it answers as answerVendor.
func answerVendorBadly(w http.ResponseWriter, r *http.Request, body []byte) {
	switch {
	case bytes.Contains(body, []byte("hang-upstream")):
		<-r.Context().Done()
	case bytes.Contains(body, []byte("vendor-500")):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"type":"server_error","message":"down"}}`)
	case bytes.Contains(body, []byte("vendor-garbage")):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"model":"m","answers":`)
	default:
		answerVendor(w, r, body)
	}
}

// TestFailuresAndDeadlinesAgreeOnBothHosts: with a short request deadline,
// an upstream that never answers, one that fails and one that answers
// garbage get the same answers on both hosts, and each refunds what it
// reserved; a path spelled with percent-escapes reaches the same route on
// both.
func TestFailuresAndDeadlinesAgreeOnBothHosts(t *testing.T) {
	p := startPairWith(t, "vendor", "/v1", answerVendorBadly, func(_ int, env map[string]string) {
		env["GATEWAY_REQUEST_TIMEOUT"] = "4s"
	})
	key := p.each(func(i int) string { return p.admin(i, "key", "unlucky@example.test") })
	withKey := func(extra ...string) func(i int) []string {
		return func(i int) []string { return append(bearer(key[i]), extra...) }
	}
	before := p.balances("unlucky@example.test")
	// Both sides wait out the hanging upstream's deadline (4 s each): the
	// loop starts with room for all of it in one rate window.
	testenv.RoomInWindow(t, time.Minute, 20*time.Second)
	for _, state := range []string{"hang-upstream", "vendor-500", "vendor-garbage"} {
		a := p.both("POST", "/v1/service", strings.Replace(decisionBody, "a red apple", state, 1), withKey("Idempotency-Key", state))
		p.same(state, a, true, decisionHeaders...)
		if a[0].status < 500 {
			t.Errorf("%s: %d %s", state, a[0].status, a[0].body)
		}
		p.same(state+", sent again", p.both("POST", "/v1/service", strings.Replace(decisionBody, "a red apple", state, 1), withKey("Idempotency-Key", state)), true, decisionHeaders...)
	}
	if after := p.balances("unlucky@example.test"); after != before {
		t.Errorf("balances %v after failed decisions, want %v (refunded)", after, before)
	}

	for _, path := range []string{"/api/service/con%66ig", "/api/service%2Fconfig", "/api/service/config%2F"} {
		p.same("GET "+path, p.both("GET", path, "", nil), false, consoleHeaders...)
	}
	p.same("a decision at /v1/%73ervice", p.both("POST", "/v1/%73ervice", decisionBody, withKey()), false, decisionHeaders...)
}
