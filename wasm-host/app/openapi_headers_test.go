package app_test

import (
	"net/http"
	"strings"
	"testing"

	"decisiongateway/shared/keys"
	"decisiongateway/testkit/hosttest"
	"decisiongateway/wasm-host/openapi/check"
)

// Every header an answer carries is described by the document's response
// for it: a client reading schema/openapi.json learns of each header it
// can meet (the upstream's tracking and rate-limit headers on the model
// listing, WWW-Authenticate on a refused key, the document's CORS header,
// the sign-in redirect's Referrer-Policy).
func TestEveryHeaderOfAnAnswerIsDescribed(t *testing.T) {
	vendor := hosttest.NewRecorder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Vendor-Request-Id", "vr-1")
		w.Header().Set("X-RateLimit-Limit", "1000")
		w.Header().Set("X-RateLimit-Remaining", "999")
		w.Header().Set("X-RateLimit-Reset", "30")
		if strings.HasSuffix(r.URL.Path, "/models") && r.Header.Get("X-Test-Busy") == "" {
			w.Write([]byte(`{"models":[{"name":"model-x","description":"x","release_date":"2026-09-18"}]}`))
			return
		}
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":{"type":"overloaded"}}`))
	})
	h := hosttest.Start(t, map[string]string{"UPSTREAM_KIND": "vendor", "UPSTREAM_URL": vendor.URL + "/v1", "UPSTREAM_API_KEY": "sk-operator-headers"})
	_, key := h.NewAccount(keys.NewAccountID()+"@headers.test", 10)
	v, err := check.Served()
	if err != nil {
		t.Fatal(err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, path, auth string) {
		t.Helper()
		req, _ := http.NewRequest(method, h.URL+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if extra := v.Undescribed(method, req.URL.Path, resp.StatusCode, resp.Header); len(extra) > 0 {
			t.Errorf("%s %s → %d: schema/openapi.json does not describe %v", method, path, resp.StatusCode, extra)
		}
	}
	send("GET", "/v1/models", "Bearer "+key)
	vendor.Handle(func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Vendor-Request-Id", "vr-2")
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":{"type":"overloaded"}}`))
	})
	send("GET", "/v1/models", "Bearer "+key) // the upstream's error, forwarded
	send("GET", "/v1/models", "")
	send("GET", "/v1/models", "Bearer dgk_nope")
	send("GET", "/openapi.json", "")
	send("GET", "/api/service/auth/verify?token=dgl_nope", "")
}
