package egress

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"decisiongateway/shared/abi"
)

// echoAuth answers with the Authorization header it received.
func echoAuth() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(r.Header.Get("Authorization")))
	}))
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
		{up.URL, "upstream", "Bearer sk-up", ""},
		{mail.URL, "mail", "Bearer mk-mail", ""},
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
