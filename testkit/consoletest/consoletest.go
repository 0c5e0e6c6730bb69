// Package consoletest runs the real host (TinyGo modules on wazero, a real
// ledger) for the end-to-end tests of the console routes, with fakes only
// for what lives outside: a mail service that records what it is sent and
// a vendor upstream that records what it receives.
package consoletest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"decisiongateway/shared/keys"
	"decisiongateway/testkit/hosttest"
	"decisiongateway/wasm-host/devmail"
)

// Origin is the console origin the tests configure (SERVICE_ORIGIN). https,
// so the session cookie must carry Secure.
const Origin = "https://console.example"

// MailKey is the mail service's credential (MAIL_API_KEY).
const MailKey = "mk-mail-51f0"

// UpstreamKey is the operator's upstream credential.
const UpstreamKey = "sk-operator-77aa"

// Mail is one message the fake mail service received.
type Mail struct {
	Authorization string
	From, To      string
	Subject, Text string
	HTML          string
}

// Received is one request the fake vendor received.
type Received struct {
	Path string
	Body []byte
}

// Host is a running gateway with its fakes.
type Host struct {
	*hosttest.Host
	t testing.TB

	mu       sync.Mutex
	mails    []Mail
	received []Received
	// mailStatus is what the mail service answers (see SetMailStatus).
	mailStatus int
}

// SetMailStatus makes the fake mail service answer status (202 at start).
func (h *Host) SetMailStatus(status int) {
	h.mu.Lock()
	h.mailStatus = status
	h.mu.Unlock()
}

var sharedCache struct {
	once sync.Once
	dir  string
}

// Start runs a host on ledgerURL ("" for a fresh embedded file) with the
// fakes wired in; env overrides settings.
func Start(t testing.TB, ledgerURL string, env map[string]string) *Host {
	t.Helper()
	h := &Host{t: t, mailStatus: 202}
	mail := httptest.NewServer(http.HandlerFunc(h.serveMail))
	t.Cleanup(mail.Close)
	vendor := httptest.NewServer(http.HandlerFunc(h.serveVendor))
	t.Cleanup(vendor.Close)
	// One compilation cache for every host of the test binary: each host
	// would otherwise compile every module again.
	sharedCache.once.Do(func() { sharedCache.dir, _ = os.MkdirTemp("", "dg-console-cache-") })
	e := map[string]string{
		"SERVICE_ORIGIN": Origin, "MAIL_URL": mail.URL + "/send", "MAIL_API_KEY": MailKey,
		"UPSTREAM_KIND": "vendor", "UPSTREAM_URL": vendor.URL + "/v1", "UPSTREAM_API_KEY": UpstreamKey,
		"SERVICE_WELCOME_CREDITS": "100", "GATEWAY_DATA_DIR": sharedCache.dir,
	}
	if ledgerURL != "" {
		e["LIBSQL_URL"] = ledgerURL
	}
	for k, v := range env {
		e[k] = v
	}
	h.Host = hosttest.Start(t, e)
	return h
}

func (h *Host) serveMail(w http.ResponseWriter, r *http.Request) {
	var m Mail
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, "bad mail", 400)
		return
	}
	m.Authorization = r.Header.Get("Authorization")
	h.mu.Lock()
	h.mails = append(h.mails, m)
	status := h.mailStatus
	h.mu.Unlock()
	w.WriteHeader(status)
}

// Mails returns the messages received so far.
func (h *Host) Mails() []Mail {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Mail(nil), h.mails...)
}

// LastLink returns the sign-in link of the newest mail to address.
func (h *Host) LastLink(address string) string {
	h.t.Helper()
	ms := h.Mails()
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].To == address {
			if l := devmail.LinkPattern.FindString(ms[i].Text); l != "" {
				return l
			}
		}
	}
	h.t.Fatalf("no sign-in mail to %s", address)
	return ""
}

// Reply is an answer of the gateway.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// Code is the platform error code of the reply ("" for none).
func (r Reply) Code() string { return r.Header.Get("X-Service-Error-Code") }

// JSON decodes the body into a generic value.
func (r Reply) JSON() map[string]any {
	var v map[string]any
	d := json.NewDecoder(bytes.NewReader(r.Body))
	d.UseNumber()
	d.Decode(&v)
	return v
}

func (r Reply) String() string { return fmt.Sprintf("%d %s %s", r.Status, r.Code(), r.Body) }

// Do sends a request; headers are name, value pairs ("Cookie", …). The
// client does not follow redirects.
func (h *Host) Do(method, path, body string, headers ...string) Reply {
	h.t.Helper()
	req, err := http.NewRequest(method, h.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	client := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return Reply{resp.StatusCode, resp.Header, data}
}

// Link does what the console does with a sign-in link (the console with
// the token in its fragment): spends the token with POST
// /api/service/auth/verify under the exact Origin.
func (h *Host) Link(link string) Reply {
	h.t.Helper()
	page, token, _ := strings.Cut(link, "#signin=")
	token, _, _ = strings.Cut(token, "&") // the console's nonce, if any
	// The console's page is the link's origin and "/": its Origin header.
	return h.Do("POST", "/api/service/auth/verify", `{"token":"`+token+`"}`, "Origin", strings.TrimSuffix(page, "/"), "Content-Type", "application/json")
}

// SignIn signs address in through the real flow (POST, mail, link) and
// returns the Cookie header value "dg_session=…".
func (h *Host) SignIn(address string) string {
	h.t.Helper()
	if r := h.Do("POST", "/api/service/auth/signin", `{"email":"`+address+`"}`, "Origin", Origin, "Content-Type", "application/json"); r.Status != 202 {
		h.t.Fatalf("sign-in request: %s", r)
	}
	r := h.Link(h.LastLink(address))
	for _, c := range r.Header.Values("Set-Cookie") {
		if v, _, _ := strings.Cut(c, ";"); strings.HasPrefix(v, keys.SessionCookie+"=") {
			return v
		}
	}
	h.t.Fatalf("link opened without a session cookie: %s %v", r, r.Header)
	return ""
}

// Account returns the id of the account of a session cookie.
func (h *Host) Account(cookie string) string {
	a, _ := keys.Parse(keys.Session, strings.TrimPrefix(cookie, keys.SessionCookie+"="))
	return a
}

// Received returns the bodies the vendor received.
func (h *Host) Received() []Received {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Received(nil), h.received...)
}

// serveVendor answers a valid decision for any request (hosttest.Answers).
func (h *Host) serveVendor(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.received = append(h.received, Received{Path: r.URL.Path, Body: body})
	h.mu.Unlock()
	answers := hosttest.Answers(body)
	out, _ := json.Marshal(map[string]any{"model": "vendor-model-1", "answers": answers, "usage": map[string]int{"input_tokens": 10, "output_tokens": 3}})
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// Main runs a test binary's tests, then removes the shared compilation
// cache. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if sharedCache.dir != "" {
		os.RemoveAll(sharedCache.dir)
	}
	os.Exit(code)
}
