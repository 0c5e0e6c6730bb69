package playground_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/consoletest"
	"decisiongateway/testkit/sqldtest"
)

func TestMain(m *testing.M) { consoletest.Main(m) }

const origin = consoletest.Origin

// precise carries numbers a float64 cannot hold; they must reach the
// upstream exactly as sent.
const precise = `{"model":"model-x","state":{"p":0.1000000000000000055511151231257827,"n":12345678901234567890},"questions":{"q":{"type":"noul"},"c":{"type":"choice","criteria":{"a":"A","b":"B"}}}}`

func play(h *consoletest.Host, cookie, body string, headers ...string) consoletest.Reply {
	return h.Do("POST", "/api/service/playground", body, append([]string{"Cookie", cookie, "Origin", origin, "Content-Type", "application/json"}, headers...)...)
}

func api(h *consoletest.Host, key, body string, headers ...string) consoletest.Reply {
	return h.Do("POST", "/v1/service", body, append([]string{"Authorization", "Bearer " + key, "Content-Type", "application/json"}, headers...)...)
}

// The playground spends the account's credits and rate capacity exactly as
// the API does, records its requests for usage, and forwards the body's
// numbers unchanged.
func TestPlaygroundAccountingMatchesTheAPI(t *testing.T) {
	for _, b := range sqldtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			h := consoletest.Start(t, b.URL, map[string]string{"SERVICE_RATE_LIMIT": "4"})
			for attempt := 0; attempt < 3; attempt++ {
				minute := time.Now().Unix() / 60
				cookie := h.SignIn("player" + strconv.Itoa(attempt) + "@example.com")
				acct := h.Account(cookie)
				key := h.Do("POST", "/api/service/keys", `{"name":"k"}`, "Cookie", cookie, "Origin", origin).JSON()["secret"].(string)
				before := len(h.Received())

				p1 := play(h, cookie, precise)
				a1 := api(h, key, precise)
				p2 := play(h, cookie, precise)
				a2 := api(h, key, precise)
				p3 := play(h, cookie, precise)
				if time.Now().Unix()/60 != minute {
					continue // the rate window turned during the sequence
				}
				for i, r := range []consoletest.Reply{p1, a1, p2, a2} {
					if r.Status != 200 || r.Header.Get("X-Service-Credits") != "2" || r.Header.Get("X-Request-Id") == "" {
						t.Fatalf("call %d: %s %v", i+1, r, r.Header)
					}
					if got := r.Header.Get("X-RateLimit-Remaining"); got != strconv.Itoa(3-i) {
						t.Errorf("call %d: X-RateLimit-Remaining %s, want %d (one counter for API and playground)", i+1, got, 3-i)
					}
				}
				if p3.Status != 429 || p3.Code() != "rate_limit_exceeded" {
					t.Fatalf("5th attempt with a limit of 4: %s", p3)
				}
				got := h.Received()[before:]
				if len(got) != 4 {
					t.Fatalf("%d upstream calls", len(got))
				}
				for _, g := range got {
					if !strings.Contains(string(g.Body), "0.1000000000000000055511151231257827") || !strings.Contains(string(g.Body), "12345678901234567890") {
						t.Fatalf("upstream received %s", g.Body)
					}
				}
				if bal := h.Balance(acct); bal != 100-4*2 {
					t.Fatalf("balance %d", bal)
				}
				rows := h.Rows("SELECT source, key_id IS NULL, state, charged FROM requests WHERE account_id = ? ORDER BY created_at, rowid", abi.String(acct))
				want := []string{"playground", "api", "playground", "api"}
				if len(rows) != 4 {
					t.Fatalf("%d request rows", len(rows))
				}
				for i, r := range rows {
					if r[0].AsString() != want[i] || r[1].AsInt() != map[bool]int64{true: 1, false: 0}[want[i] == "playground"] || r[2].AsString() != "succeeded" || r[3].AsInt() != 2 {
						t.Errorf("request %d: %v", i, r)
					}
				}
				// Usage shows them, newest first, with the new balance.
				u := h.Do("GET", "/api/service/usage", "", "Cookie", cookie).JSON()
				reqs := u["requests"].([]any)
				if u["balance"].(interface{ String() string }).String() != "92" || len(reqs) != 4 || reqs[0].(map[string]any)["id"] != p2.Header.Get("X-Request-Id") && reqs[0].(map[string]any)["id"] != a2.Header.Get("X-Request-Id") {
					t.Fatalf("usage %v", u)
				}
				h.CheckInvariant()
				return
			}
			t.Fatal("every attempt straddled a minute boundary")
		})
	}
}

// Invalid bodies get the same answer from the playground as from the API,
// before any credit or upstream is touched.
func TestPlaygroundValidatesLikeTheAPI(t *testing.T) {
	h := consoletest.Start(t, "", nil)
	cookie := h.SignIn("validate@example.com")
	key := h.Do("POST", "/api/service/keys", `{"name":"k"}`, "Cookie", cookie, "Origin", origin).JSON()["secret"].(string)
	bodies := []string{
		`{"state":null,"questions":{"q":{"type":"noul"}},"state":1}`,
		`{"state":null,"questions":{}}`,
		`{"state":1e400,"questions":{"q":{"type":"noul"}}}`,
		`{"questions":{"q":{"type":"boolean"}},"state":null}`,
		`[`,
	}
	for _, body := range bodies {
		p, a := play(h, cookie, body), api(h, key, body)
		if p.Status != a.Status || p.Code() != a.Code() || p.Status != 400 {
			t.Errorf("%s: playground %s, api %s", body, p, a)
		}
	}
	p := h.Do("POST", "/api/service/playground", precise, "Cookie", cookie, "Origin", origin)
	a := h.Do("POST", "/v1/service", precise, "Authorization", "Bearer "+key)
	if p.Status != 415 || p.Code() != a.Code() {
		t.Errorf("no Content-Type: playground %s, api %s", p, a)
	}
	big := `{"state":"` + strings.Repeat("x", 65536) + `","questions":{"q":{"type":"noul"}}}`
	if p := play(h, cookie, big); p.Status != 413 {
		t.Errorf("oversize: %s", p)
	}
	if len(h.Received()) != 0 || h.Balance(h.Account(cookie)) != 100 {
		t.Fatal("an invalid request reached the upstream or cost credits")
	}
}

func TestPlaygroundRefusesWhenCreditsRunOut(t *testing.T) {
	h := consoletest.Start(t, "", map[string]string{"SERVICE_WELCOME_CREDITS": "0"})
	cookie := h.SignIn("broke@example.com")
	key := h.Do("POST", "/api/service/keys", `{"name":"k"}`, "Cookie", cookie, "Origin", origin).JSON()["secret"].(string)
	p, a := play(h, cookie, precise), api(h, key, precise)
	if p.Status != a.Status || p.Code() != a.Code() || p.Code() != "insufficient_credits" {
		t.Fatalf("playground %s, api %s", p, a)
	}
	if len(h.Received()) != 0 {
		t.Fatal("reached the upstream without credits")
	}
	h.CheckInvariant()
}
