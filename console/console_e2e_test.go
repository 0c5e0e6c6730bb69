package console_test

import (
	"strings"
	"testing"

	"decisiongateway/shared/keys"
	"decisiongateway/testkit/consoletest"
)

func TestMain(m *testing.M) { consoletest.Main(m) }

func TestHostServesTheConsoleWithNoStoreAndCSP(t *testing.T) {
	h := consoletest.Start(t, "", nil)
	for _, path := range []string{"/", "/console.js", "/json.js", "/console.css"} {
		r := h.Do("GET", path, "")
		if r.Status != 200 || r.Header.Get("Cache-Control") != "no-store" || !strings.Contains(r.Header.Get("Content-Security-Policy"), "default-src 'none'") || r.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s: %d %v", path, r.Status, r.Header)
		}
	}
	if r := h.Do("GET", "/nope", ""); r.Status != 404 || r.Code() != "not_found" {
		t.Errorf("unknown path: %s", r)
	}
	if r := h.Do("POST", "/", ""); r.Status != 404 {
		t.Errorf("POST /: %s", r)
	}
}

// The public configuration stays public (no session, and a session or a
// key changes nothing) and names no credential, mail service or ledger.
func TestConfigStaysPublicAndCredentialFree(t *testing.T) {
	h := consoletest.Start(t, "", nil)
	cookie := h.SignIn("config@example.com")
	plain := h.Do("GET", "/api/service/config", "")
	for _, hdr := range [][]string{{"Cookie", cookie}, {"Authorization", "Bearer " + keys.New(keys.APIKey, keys.NewAccountID())}} {
		if r := h.Do("GET", "/api/service/config", "", hdr...); r.Status != 200 || string(r.Body) != string(plain.Body) {
			t.Errorf("with %s: %s", hdr[0], r)
		}
	}
	if plain.Status != 200 || plain.Header.Get("Set-Cookie") != "" {
		t.Fatalf("config: %s", plain)
	}
	for _, secret := range []string{consoletest.MailKey, consoletest.UpstreamKey, "/send", "127.0.0.1", "file:", "dgs_", "dg_session"} {
		if strings.Contains(string(plain.Body), secret) {
			t.Errorf("config exposes %q: %s", secret, plain.Body)
		}
	}
}
