//go:build linux

package wranglercompat_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"decisiongateway/testkit/testenv"
)

// mailKey is MAIL_API_KEY on both hosts: the mail endpoint's credential,
// which no answer and no log may hold.
const mailKey = "mk-parity-mail-credential-7f3a9c"

// answerMail plays the mail endpoint (schema/mail.md): it takes every
// mail, except that a mail to an address holding "echo-mail" is answered
// with the credential it came with.
func answerMail(w http.ResponseWriter, r *http.Request, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	if bytes.Contains(body, []byte("echo-mail")) {
		io.WriteString(w, `{"id":"`+r.Header.Get("Authorization")+`"}`)
		return
	}
	w.WriteHeader(202)
	io.WriteString(w, `{"id":"mail-1"}`)
}

// Headers a console answer carries that must agree between the hosts.
var consoleHeaders = []string{
	"Content-Type", "X-Service-Error-Source", "X-Service-Error-Code", "Retry-After", "X-Function-Version",
	"Location", "Referrer-Policy", "X-Service-Credits", "Allow",
}

var (
	tokenInMail  = regexp.MustCompile(`#signin=([A-Za-z0-9_]+)`)
	cookieSecret = regexp.MustCompile(`^([a-z_]+)=[^;]*`)
)

// TestConsoleFlowsAgreeOnBothHosts runs the console's side of the service
// on both hosts, each with its own sqld, fake vendor and fake mail
// endpoint: sign-in by mail (Origin check, the mail and its credential, a
// mail endpoint that echoes the credential), the link's legacy GET form,
// spending the link (the session cookie's attributes), the session, usage,
// the playground and its Origin check, the shared rate limit, a decision
// whose idempotency key is still pending, and sign-out. Every answer must be
// the same on both hosts, and no log may hold a credential, a link's token
// or a session's secret.
func TestConsoleFlowsAgreeOnBothHosts(t *testing.T) {
	hold := make(chan struct{})
	var mail [2]*recorder
	p := startPairWith(t, "vendor", "/v1", func(w http.ResponseWriter, r *http.Request, body []byte) {
		if bytes.Contains(body, []byte("slow-upstream")) {
			<-hold
		}
		answerVendor(w, r, body)
	}, func(i int, env map[string]string) {
		mail[i] = newRecorder(t, answerMail)
		env["MAIL_URL"] = mail[i].srv.URL + "/send"
		env["MAIL_API_KEY"] = mailKey
		env["SERVICE_RATE_LIMIT"] = "4"
	})
	browser := func(extra ...string) func(int) []string {
		return func(int) []string {
			return append([]string{"Origin", consoleOrigin, "Content-Type", "application/json"}, extra...)
		}
	}
	perSide := func(method, path string, body func(i int) string, header func(i int) []string) [2]answer {
		var out [2]answer
		for i := range out {
			out[i] = p.do(i, method, path, body(i), header(i)...)
		}
		return out
	}

	// Sign-in by mail.
	p.same("sign-in from another origin", p.both("POST", "/api/service/auth/signin", `{"email":"newcomer@example.test"}`, func(int) []string {
		return []string{"Origin", "https://evil.example", "Content-Type", "application/json"}
	}), true, consoleHeaders...)
	p.same("sign-in", p.both("POST", "/api/service/auth/signin", `{"email":"Newcomer@Example.test","nonce":"0123456789abcdef0123"}`, browser()), true, consoleHeaders...)
	var token [2]string
	var mails [2][]byte
	for i, m := range mail {
		got := m.seen()
		if len(got) != 1 || got[0].path != "/send" || got[0].header.Get("Authorization") != "Bearer "+mailKey {
			t.Fatalf("%s: mail endpoint got %d mails %+v", p.sides[i].name, len(got), got)
		}
		tm := tokenInMail.FindSubmatch(got[0].body)
		if tm == nil {
			t.Fatalf("%s: no link in the mail %s", p.sides[i].name, got[0].body)
		}
		token[i] = string(tm[1])
		mails[i] = bytes.ReplaceAll(got[0].body, tm[1], []byte("TOKEN"))
	}
	if !bytes.Equal(mails[0], mails[1]) {
		t.Errorf("the mails differ:\n%s\n%s", mails[0], mails[1])
	}
	echo := p.both("POST", "/api/service/auth/signin", `{"email":"echo-mail@example.test"}`, browser())
	p.same("a mail endpoint that echoes its credential", echo, true, consoleHeaders...)
	if echo[0].status != 502 || leakedSecret(echo[0], mailKey) || leakedSecret(echo[1], mailKey) {
		t.Errorf("mail echo: %d %v %s", echo[0].status, echo[0].header, echo[0].body)
	}

	// The link's earlier form is a redirect to the console, spending nothing.
	p.same("legacy link, not a token", p.both("GET", "/api/service/auth/verify?token=nonsense", "", nil), false, consoleHeaders...)
	var legacy [2]answer
	for i := range legacy {
		legacy[i] = p.do(i, "GET", "/api/service/auth/verify?token="+token[i], "")
		legacy[i].header.Set("Location", strings.Replace(legacy[i].header.Get("Location"), token[i], "TOKEN", 1))
	}
	p.same("legacy link", legacy, false, consoleHeaders...)

	// The console spends the link: a session cookie.
	verify := func(i int) string { return `{"token":"` + token[i] + `"}` }
	verified := perSide("POST", "/api/service/auth/verify", verify, browser())
	var cookie [2]string
	var setCookie [2]string
	for i, a := range verified {
		var v struct {
			Account struct{ ID string }
		}
		json.Unmarshal(a.body, &v)
		verified[i].body = bytes.ReplaceAll(a.body, []byte(v.Account.ID), []byte("ID"))
		sc := a.header.Get("Set-Cookie")
		cookie[i] = strings.SplitN(sc, ";", 2)[0]
		setCookie[i] = cookieSecret.ReplaceAllString(sc, "$1=SECRET")
	}
	p.same("verify", verified, true, consoleHeaders...)
	if verified[0].status != 200 || setCookie[0] != setCookie[1] || !strings.Contains(setCookie[0], "HttpOnly") || !strings.Contains(setCookie[0], "Secure") || !strings.Contains(setCookie[0], "SameSite=Lax") {
		t.Errorf("session cookie: %d %q, %q", verified[0].status, setCookie[0], setCookie[1])
	}
	p.same("a link spent twice", perSide("POST", "/api/service/auth/verify", verify, browser()), true, consoleHeaders...)
	withCookie := func(extra ...string) func(i int) []string {
		return func(i int) []string { return append([]string{"Cookie", cookie[i]}, extra...) }
	}
	session := p.both("GET", "/api/service/auth/session", "", withCookie())
	for i, a := range session {
		if a.status != 200 || !bytes.Contains(a.body, []byte(`"signedIn":true`)) {
			t.Errorf("%s: session %d %s", p.sides[i].name, a.status, a.body)
		}
	}
	p.same("session with an API key", p.both("GET", "/api/service/auth/session", "", withCookie("Authorization", "Bearer "+newUnknownKey())), true, consoleHeaders...)

	// Usage and the playground, and the rate limit they share. Its window
	// is the clock's minute: a side whose decisions straddled a minute
	// boundary would be charged more before its 429, so the section starts
	// in a minute with room for it on both sides.
	testenv.RoomInWindow(t, time.Minute, 20*time.Second)
	p.same("usage", p.both("GET", "/api/service/usage", "", withCookie()), true, consoleHeaders...)
	p.same("playground from another origin", p.both("POST", "/api/service/playground", decisionBody, withCookie("Origin", "https://evil.example", "Content-Type", "application/json")), true, decisionHeaders...)
	played := p.both("POST", "/api/service/playground", decisionBody, withCookie("Origin", consoleOrigin, "Content-Type", "application/json"))
	p.same("playground", played, false, decisionHeaders...)
	if played[0].status != 200 {
		t.Errorf("playground: %d %s", played[0].status, played[0].body)
	}
	usage := p.both("GET", "/api/service/usage", "", withCookie())
	for i, a := range usage {
		usage[i].body = withoutRequestIDs(t, a.body) // each host's own ids and clock
	}
	p.same("usage after a decision", usage, true, consoleHeaders...)
	var limited [2]answer
	for i := range limited {
		for n := 0; n < 10 && limited[i].status != 429; n++ {
			limited[i] = p.do(i, "POST", "/api/service/playground", decisionBody, withCookie("Origin", consoleOrigin, "Content-Type", "application/json")(i)...)
		}
		if limited[i].header.Get("Retry-After") == "" {
			t.Errorf("%s: rate limited without Retry-After: %d %v", p.sides[i].name, limited[i].status, limited[i].header)
		}
		limited[i].header.Del("Retry-After") // the seconds left of the window, by each host's clock
	}
	p.same("rate limited", limited, true, append(decisionHeaders, "X-RateLimit-Limit", "X-RateLimit-Remaining")...)
	if b := p.balances("newcomer@example.test"); b[0] != b[1] {
		t.Errorf("balance %d on the wazero host, %d on Workers", b[0], b[1])
	}

	// A decision still running when its key is sent again: both count in
	// its account's window, on each side in one minute.
	key := p.each(func(i int) string { return p.admin(i, "key", "patient@example.test") })
	testenv.RoomInWindow(t, time.Minute, pairRoom)
	slow := strings.Replace(decisionBody, "a red apple", "slow-upstream", 1)
	var pending, done [2]answer
	for i := range pending {
		header := append(bearer(key[i]), "Idempotency-Key", "slow-1")
		first := make(chan answer, 1)
		calls := len(p.sides[i].upstream.seen())
		go func() { first <- p.do(i, "POST", "/v1/service", slow, header...) }()
		for len(p.sides[i].upstream.seen()) == calls {
			time.Sleep(10 * time.Millisecond) // the first request is on its upstream call once the vendor has it
		}
		pending[i] = p.do(i, "POST", "/v1/service", slow, header...)
		hold <- struct{}{}
		done[i] = <-first
	}
	p.same("a key still pending", pending, true, decisionHeaders...)
	p.same("the decision that was pending", done, false, decisionHeaders...)

	// Sign-out ends the session and clears the cookie.
	out := p.both("POST", "/api/service/auth/signout", "", withCookie("Origin", consoleOrigin))
	p.same("sign-out", out, true, append(consoleHeaders, "Set-Cookie")...)
	p.same("session after sign-out", p.both("GET", "/api/service/auth/session", "", withCookie()), true, consoleHeaders...)
	p.same("keys after sign-out", p.both("GET", "/api/service/keys", "", withCookie()), true, consoleHeaders...)

	for i, s := range p.sides {
		// Each host logs why the echoed mail was not sent.
		text := logHolding(t, s.server, echo[i].header.Get("X-Request-Id"))
		for _, secret := range []string{mailKey, upstreamKey, token[i], strings.SplitN(cookie[i], "=", 2)[1], key[i]} {
			if strings.Contains(text, secret) {
				t.Errorf("%s: a secret (%.12s…) reached the log:\n%s", s.name, secret, text)
			}
		}
	}
}

func leakedSecret(a answer, secret string) bool {
	if bytes.Contains(a.body, []byte(secret)) {
		return true
	}
	for name, values := range a.header {
		for _, v := range values {
			if strings.Contains(name+v, secret) {
				return true
			}
		}
	}
	return false
}

// withoutRequestIDs is a usage answer without what differs between two
// hosts by nature: its requests' ids and times.
func withoutRequestIDs(t *testing.T, body []byte) []byte {
	var u map[string]any
	if err := json.Unmarshal(body, &u); err != nil {
		t.Fatalf("usage: %v: %s", err, body)
	}
	reqs, _ := u["requests"].([]any)
	for _, r := range reqs {
		if m, ok := r.(map[string]any); ok {
			delete(m, "id")
			delete(m, "createdAt")
			delete(m, "finishedAt")
		}
	}
	out, _ := json.Marshal(u)
	return out
}
