package egress

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"decisiongateway/shared/abi"
)

// echoAuth answers with the Authorization header it received, reversed:
// an answer holding the credential itself, in any letter case, would never
// reach the guest (TestAnswersEchoingTheCredentialAreDropped).
func echoAuth() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(reversed(r.Header.Get("Authorization"))))
	}))
}

func reversed(s string) string {
	b := []byte(s)
	slices.Reverse(b)
	return string(b)
}

// Each credential reaches its own origin only: the upstream key never goes
// to the mail service and the mail key never to the upstream, although both
// origins are allowed destinations.
func TestEachCredentialIsBoundToItsOrigin(t *testing.T) {
	up, mail := echoAuth(), echoAuth()
	defer up.Close()
	defer mail.Close()
	c := New([]string{Origin(up.URL), Origin(mail.URL)}, map[string]Credential{
		"upstream": {Token: "sk-up", Origin: Origin(up.URL)},
		"mail":     {Token: "mk-mail", Origin: Origin(mail.URL)},
		"unset":    {Token: "", Origin: Origin(mail.URL)},
	})
	cases := []struct {
		url, cred, want, errKind string
	}{
		{up.URL, "upstream", reversed("Bearer sk-up"), ""},
		{mail.URL, "mail", reversed("Bearer mk-mail"), ""},
		{mail.URL, "upstream", "", abi.FetchErrDenied},
		{up.URL, "mail", "", abi.FetchErrDenied},
		{up.URL, "nosuch", "", abi.FetchErrDenied},
		{mail.URL, "", "", ""},
		{mail.URL, "unset", "", ""}, // a credential with no token adds no header
	}
	for _, tc := range cases {
		res := c.Fetch(context.Background(), &abi.FetchRequest{
			Method: "POST", URL: tc.url + "/x", Credential: tc.cred,
			Headers: abi.Headers{{Name: "authorization", Value: "Bearer guest-made"}},
		})
		if res.ErrKind != tc.errKind || string(res.Body) != tc.want {
			t.Errorf("%s with %q: got %q %q, want %q %q", tc.url, tc.cred, res.ErrKind, res.Body, tc.errKind, tc.want)
		}
	}
}

func TestCredentialWithoutOriginIsNeverSent(t *testing.T) {
	srv := echoAuth()
	defer srv.Close()
	c := New([]string{Origin(srv.URL)}, map[string]Credential{"mail": {Token: "mk", Origin: ""}})
	if res := c.Fetch(context.Background(), &abi.FetchRequest{URL: srv.URL, Credential: "mail"}); res.ErrKind != abi.FetchErrDenied {
		t.Fatalf("got %+v", res)
	}
}

// An answer to a request that carried a credential, holding that
// credential anywhere (success or error body, a header value, a redirect,
// escaped as JSON or a URL would), is dropped whole: the guest gets the
// credential_leak kind, no status, no header and no byte of the body.
// Answers without it, and requests that carried no credential, pass.
func TestAnswersEchoingTheCredentialAreDropped(t *testing.T) {
	// uEscape writes the characters of s that are in chars as JSON \uXXXX
	// escapes, in upper-case hex.
	uEscape := func(s, chars string) string {
		var b strings.Builder
		for _, r := range s {
			if strings.ContainsRune(chars, r) {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	const key = "sk-live/echo+me=="
	var answer func(w http.ResponseWriter)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answer(w) }))
	defer srv.Close()
	c := New([]string{Origin(srv.URL)}, map[string]Credential{"upstream": {Token: key, Origin: Origin(srv.URL)}})
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter)
		leak   bool
	}{
		{"success body", func(w http.ResponseWriter) { w.Write([]byte(`{"model":"m","debug":"Bearer ` + key + `"}`)) }, true},
		{"error body", func(w http.ResponseWriter) { w.WriteHeader(401); w.Write([]byte(`{"error":"bad key ` + key + `"}`)) }, true},
		{"header value", func(w http.ResponseWriter) { w.Header().Set("X-Request-Id", "req-"+key); w.Write([]byte(`{}`)) }, true},
		{"redirect", func(w http.ResponseWriter) { w.Header().Set("Location", "/again?key="+key); w.WriteHeader(302) }, true},
		{"JSON-escaped", func(w http.ResponseWriter) { w.Write([]byte(`{"k":"` + strings.ReplaceAll(key, "/", `\/`) + `"}`)) }, true},
		{"percent-encoded", func(w http.ResponseWriter) { w.Write([]byte("key=" + url.QueryEscape(key))) }, true},
		{"upper case", func(w http.ResponseWriter) {
			w.Header().Set("X-Vendor-Request-Id", strings.ToUpper("Bearer "+key))
			w.Write([]byte(`{}`))
		}, true},
		{"mixed case in the body", func(w http.ResponseWriter) { w.Write([]byte(`{"k":"` + strings.ToUpper(key[:4]) + key[4:] + `"}`)) }, true},
		{"JSON \\u-escaped", func(w http.ResponseWriter) { w.Write([]byte(`{"k":"` + uEscape(key, "-/+=") + `"}`)) }, true},
		{"JSON \\u-escaped whole", func(w http.ResponseWriter) { w.Write([]byte(`{"k":"` + uEscape(key, key) + `"}`)) }, true},
		{"JSON-escaped twice", func(w http.ResponseWriter) {
			w.Write([]byte(`{"inner":"{\\"k\\":\\"` + strings.ReplaceAll(uEscape(key, "-"), `\`, `\\`) + `\\"}"}`))
		}, true},
		{"clean with escapes", func(w http.ResponseWriter) {
			w.Write([]byte(`{"model":"m","note":"a\nb \u00e9 \ud83d\ude00 \/ \\ \"q\" \u12"}`))
		}, false},
		{"clean", func(w http.ResponseWriter) { w.Header().Set("X-Request-Id", "req-1"); w.Write([]byte(`{"model":"m"}`)) }, false},
	}
	for _, tc := range cases {
		answer = tc.answer
		res := c.Fetch(context.Background(), &abi.FetchRequest{Method: "POST", URL: srv.URL + "/v1/service", Credential: "upstream"})
		if tc.leak {
			if res.ErrKind != abi.FetchErrCredentialLeak || res.Status != 0 || len(res.Headers) != 0 || len(res.Body) != 0 || strings.Contains(res.ErrMsg, key) {
				t.Errorf("%s: %+v", tc.name, res)
			}
		} else if res.ErrKind != "" || res.Status != 200 {
			t.Errorf("%s: %+v", tc.name, res)
		}
	}
	// The same echo to a request that carried no credential gave nothing
	// away: it is the guest's own data.
	answer = cases[0].answer
	if res := c.Fetch(context.Background(), &abi.FetchRequest{URL: srv.URL}); res.ErrKind != "" || res.Status != 200 {
		t.Errorf("no credential: %+v", res)
	}
	// The model binding (the edge kind) goes through the same check.
	if res := c.RunAI(context.Background(), srv.URL, &abi.AIRequest{Model: "vendor/model", Input: []byte(`{}`)}); res.ErrKind != abi.FetchErrCredentialLeak || len(res.Output) != 0 {
		t.Errorf("ai: %+v", res)
	}
}
