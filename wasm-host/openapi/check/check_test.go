package check

import (
	"net/http"
	"strings"
	"testing"
)

func answer(status int, body string, kv ...string) (int, http.Header, []byte) {
	h := http.Header{"Cache-Control": {"no-store"}, "X-Request-Id": {"0123456789abcdef0123456789abcdef"}, "Content-Type": {"application/json; charset=utf-8"}}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return status, h, []byte(body)
}

// Answers that break the document are caught, each for its own reason,
// and the same answers made right pass.
func TestResponsesAreHeldToTheDocument(t *testing.T) {
	v, err := Served()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, method, path string
		status             int
		body               string
		headers            []string
		ok                 bool
	}{
		{"session answer", "GET", "/api/service/auth/session", 200, `{"signedIn":false}`, nil, true},
		{"body without a required member", "GET", "/api/service/auth/session", 200, `{}`, nil, false},
		{"undocumented status", "GET", "/api/service/auth/session", 418, `{}`, nil, false},
		{"platform error", "GET", "/api/service/keys", 401, `{"error":{"code":"session_required","message":"sign in"}}`,
			[]string{"X-Service-Error-Source", "platform", "X-Service-Error-Code", "session_required"}, true},
		{"code under another status", "GET", "/api/service/keys", 401, `{"error":{"code":"key_not_found","message":"x"}}`,
			[]string{"X-Service-Error-Source", "platform", "X-Service-Error-Code", "key_not_found"}, false},
		{"error without its code header", "GET", "/api/service/keys", 401, `{"error":{"code":"session_required","message":"sign in"}}`,
			[]string{"X-Service-Error-Source", "platform"}, false},
		{"decision with a bad answer", "POST", "/v1/service", 200, `{"model":"m","answers":{"q":{"type":"noul","noul":1.5}}}`, nil, false},
		{"decision", "POST", "/v1/service", 200, `{"model":"m","answers":{"q":{"type":"noul","noul":0.5}}}`,
			[]string{"X-Service-Credits", "1", "X-Service-Response-Mode", "vendor-native"}, true},
		{"decision with a bad mode", "POST", "/v1/service", 200, `{"model":"m","answers":{}}`,
			[]string{"X-Service-Response-Mode", "vendor-nativ"}, false},
		{"forwarded upstream error", "POST", "/v1/service", 422, `{"type":"error","error":{"type":"invalid_request_error"}}`,
			[]string{"X-Service-Error-Source", "upstream", "X-Service-Error-Code", "upstream_rejected_request"}, true},
		{"a console page", "GET", "/", 200, `<html>`, nil, true},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, "http://gateway.test"+c.path, strings.NewReader(""))
		status, h, body := answer(c.status, c.body, c.headers...)
		err := v.Response(req, status, h, body)
		if (err == nil) != c.ok {
			t.Errorf("%s: ok=%v, error %v", c.name, c.ok, err)
		}
	}
}
