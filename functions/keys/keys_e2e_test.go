package keys_test

import (
	"strings"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/accounts"
	"decisiongateway/shared/keys"
	"decisiongateway/testkit/consoletest"
	"decisiongateway/testkit/sqldtest"
)

func TestMain(m *testing.M) { consoletest.Main(m) }

const origin = consoletest.Origin

func create(h *consoletest.Host, cookie, name string) consoletest.Reply {
	return h.Do("POST", "/api/service/keys", `{"name":"`+name+`"}`, "Cookie", cookie, "Origin", origin, "Content-Type", "application/json")
}

const decision = `{"state":"a red apple","questions":{"fruit":{"type":"choice","criteria":{"apple":"an apple","pear":"a pear"}}}}`

func decide(h *consoletest.Host, key string) consoletest.Reply {
	return h.Do("POST", "/v1/service", decision, "Authorization", "Bearer "+key, "Content-Type", "application/json")
}

func TestCreatedSecretIsShownOnceAndListedByPrefix(t *testing.T) {
	h := consoletest.Start(t, "", nil)
	cookie := h.SignIn("owner@example.com")
	r := create(h, cookie, "  production  ")
	k := r.JSON()
	secret, _ := k["secret"].(string)
	acct, ok := keys.Parse(keys.APIKey, secret)
	if r.Status != 201 || !ok || acct != h.Account(cookie) || k["name"] != "production" || k["prefix"] != keys.DisplayPrefix(secret) || k["id"] == "" {
		t.Fatalf("create: %s", r)
	}
	list := h.Do("GET", "/api/service/keys", "", "Cookie", cookie)
	items, _ := list.JSON()["keys"].([]any)
	if list.Status != 200 || len(items) != 1 || strings.Contains(string(list.Body), secret) || strings.Contains(string(list.Body), `"secret"`) {
		t.Fatalf("list: %s", list)
	}
	item := items[0].(map[string]any)
	if item["id"] != k["id"] || item["name"] != "production" || item["prefix"] != k["prefix"] {
		t.Fatalf("item %v", item)
	}
	// The ledger holds the hash, never the secret.
	if n := h.Rows("SELECT COUNT(*) FROM api_keys WHERE secret_hash = ?", abi.String(keys.Hash(secret)))[0][0].AsInt(); n != 1 {
		t.Fatal("hash not stored")
	}
	if n := h.Rows("SELECT COUNT(*) FROM api_keys WHERE secret_hash = ? OR name = ? OR prefix = ?", abi.String(secret), abi.String(secret), abi.String(secret))[0][0].AsInt(); n != 0 {
		t.Fatal("secret stored in clear")
	}
	// More keys grant no more credits.
	create(h, cookie, "second")
	if b := h.Balance(acct); b != 100 {
		t.Fatalf("balance %d", b)
	}
	for body, code := range map[string]string{`{"name":""}`: "invalid_key_name", `{"name":"a\nb"}`: "invalid_key_name",
		`{"name":"` + strings.Repeat("n", 65) + `"}`: "invalid_key_name", `{}`: "invalid_request", `{"name":1}`: "invalid_request", `nope`: "invalid_request"} {
		if r := h.Do("POST", "/api/service/keys", body, "Cookie", cookie, "Origin", origin); r.Status != 400 || r.Code() != code {
			t.Errorf("%s: %s", body, r)
		}
	}
}

// A Bearer key never substitutes for a session, even a valid key of the
// same account, and even alongside a valid session cookie.
func TestSessionRoutesRefuseBearer(t *testing.T) {
	h := consoletest.Start(t, "", nil)
	cookie := h.SignIn("bearer@example.com")
	secret := create(h, cookie, "k").JSON()["secret"].(string)
	routes := [][2]string{{"GET", "/api/service/keys"}, {"POST", "/api/service/keys"}, {"DELETE", "/api/service/keys/key_x"},
		{"GET", "/api/service/usage"}, {"POST", "/api/service/playground"}}
	for _, rt := range routes {
		for _, withCookie := range []bool{false, true} {
			hdr := []string{"Authorization", "Bearer " + secret, "Origin", origin, "Content-Type", "application/json"}
			if withCookie {
				hdr = append(hdr, "Cookie", cookie)
			}
			r := h.Do(rt[0], rt[1], `{"name":"x"}`, hdr...)
			if r.Status != 401 || r.Code() != "bearer_not_accepted" || !strings.Contains(string(r.Body), "Authorization") {
				t.Errorf("%s %s (cookie %v): %s", rt[0], rt[1], withCookie, r)
			}
		}
		for _, c := range []string{"", "dg_session=garbage", "dg_session=" + keys.New(keys.Session, h.Account(cookie))} {
			hdr := []string{"Origin", origin, "Content-Type", "application/json"}
			if c != "" {
				hdr = append(hdr, "Cookie", c)
			}
			if r := h.Do(rt[0], rt[1], `{"name":"x"}`, hdr...); r.Status != 401 || r.Code() != "session_required" {
				t.Errorf("%s %s with cookie %q: %s", rt[0], rt[1], c, r)
			}
		}
	}
	if n := len(keysOf(h, cookie)); n != 1 {
		t.Fatalf("%d keys after refused requests", n)
	}
}

func TestKeyWritesNeedTheExactOrigin(t *testing.T) {
	h := consoletest.Start(t, "", nil)
	cookie := h.SignIn("origin@example.com")
	id := create(h, cookie, "k").JSON()["id"].(string)
	bad := [][]string{
		nil, {"Origin", ""}, {"Origin", "https://console.example.evil"}, {"Origin", "https://console.example/"},
		{"Origin", "https://console.example:443"}, {"Origin", "http://console.example"}, {"Origin", "HTTPS://CONSOLE.EXAMPLE"},
		{"Origin", "https://evil.console.example"}, {"Origin", "null"}, {"Origin", origin, "Origin", "https://evil.example"},
	}
	for _, o := range bad {
		hdr := append([]string{"Cookie", cookie}, o...)
		if r := h.Do("POST", "/api/service/keys", `{"name":"x"}`, hdr...); r.Status != 403 || r.Code() != "origin_not_allowed" {
			t.Errorf("POST with %q: %s", o, r)
		}
		if r := h.Do("DELETE", "/api/service/keys/"+id, "", hdr...); r.Status != 403 || r.Code() != "origin_not_allowed" {
			t.Errorf("DELETE with %q: %s", o, r)
		}
		if r := h.Do("POST", "/api/service/playground", decision, append(hdr, "Content-Type", "application/json")...); r.Status != 403 || r.Code() != "origin_not_allowed" {
			t.Errorf("playground with %q: %s", o, r)
		}
	}
	if n := len(keysOf(h, cookie)); n != 1 {
		t.Fatalf("%d keys: a refused write changed something", n)
	}
	// Reading needs no Origin.
	if r := h.Do("GET", "/api/service/keys", "", "Cookie", cookie); r.Status != 200 {
		t.Fatalf("GET: %s", r)
	}
}

func keysOf(h *consoletest.Host, cookie string) []any {
	items, _ := h.Do("GET", "/api/service/keys", "", "Cookie", cookie).JSON()["keys"].([]any)
	return items
}

func TestTwentyFirstActiveKeyIsRefused(t *testing.T) {
	for _, b := range sqldtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			h := consoletest.Start(t, b.URL, nil)
			cookie := h.SignIn("many@example.com")
			acct := h.Account(cookie)
			// Nineteen keys made through the same batches in earlier
			// minutes (the API allows 10 a minute), one through the API.
			store := h.Store()
			clock := time.Now().Unix() - 3600
			store.Now = func() int64 { return clock }
			for i := 0; i < 19; i++ {
				if i%10 == 9 {
					clock += 60
				}
				if _, _, err := store.CreateKey(acct, "bulk"); err != nil {
					t.Fatal(err)
				}
			}
			if r := create(h, cookie, "twentieth"); r.Status != 201 {
				t.Fatalf("20th: %s", r)
			}
			r := create(h, cookie, "twenty-first")
			if r.Status != 409 || r.Code() != "key_limit_reached" {
				t.Fatalf("21st: %s", r)
			}
			items := keysOf(h, cookie)
			if len(items) != 20 {
				t.Fatalf("%d keys listed", len(items))
			}
			id := items[0].(map[string]any)["id"].(string)
			if r := h.Do("DELETE", "/api/service/keys/"+id, "", "Cookie", cookie, "Origin", origin); r.Status != 200 {
				t.Fatalf("revoke: %s", r)
			}
			if r := create(h, cookie, "after a revocation"); r.Status != 201 {
				t.Fatalf("after a revocation: %s", r)
			}
		})
	}
}

// The eleventh creation in one minute is refused. Creating eleven keys
// takes far less than a minute, but a run that happens to straddle a
// minute boundary counts in two windows; such a run is repeated.
func TestEleventhCreationInAMinuteIsRefused(t *testing.T) {
	for _, b := range sqldtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			h := consoletest.Start(t, b.URL, nil)
			for attempt := 0; attempt < 3; attempt++ {
				cookie := h.SignIn("burst" + string(rune('a'+attempt)) + "@example.com")
				start := time.Now().Unix() / 60
				var last consoletest.Reply
				for i := 0; i < accounts.KeyCreatesPerMin+1; i++ {
					last = create(h, cookie, "k")
					if i < accounts.KeyCreatesPerMin && last.Status != 201 {
						t.Fatalf("creation %d: %s", i+1, last)
					}
				}
				if time.Now().Unix()/60 != start {
					continue // straddled a minute boundary
				}
				if last.Status != 429 || last.Code() != "key_creation_rate_limited" || last.Header.Get("Retry-After") == "" {
					t.Fatalf("11th creation: %s", last)
				}
				if n := len(keysOf(h, cookie)); n != 10 {
					t.Fatalf("%d keys", n)
				}
				return
			}
			t.Fatal("every attempt straddled a minute boundary")
		})
	}
}

func TestRevokedKeyStopsAuthenticatingAtOnce(t *testing.T) {
	for _, b := range sqldtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			h := consoletest.Start(t, b.URL, nil)
			cookie := h.SignIn("revoker@example.com")
			k := create(h, cookie, "short-lived").JSON()
			secret, id := k["secret"].(string), k["id"].(string)
			if r := decide(h, secret); r.Status != 200 {
				t.Fatalf("decision with a live key: %s", r)
			}
			r := h.Do("DELETE", "/api/service/keys/"+id, "", "Cookie", cookie, "Origin", origin)
			if r.Status != 200 || r.JSON()["revoked"] != true {
				t.Fatalf("revoke: %s", r)
			}
			if r := decide(h, secret); r.Status != 401 {
				t.Fatalf("decision with the revoked key: %s", r)
			}
			if n := len(keysOf(h, cookie)); n != 0 {
				t.Fatalf("revoked key still listed")
			}
			if r := h.Do("DELETE", "/api/service/keys/"+id, "", "Cookie", cookie, "Origin", origin); r.Status != 404 || r.Code() != "key_not_found" {
				t.Fatalf("second revoke: %s", r)
			}
			h.CheckInvariant()
		})
	}
}

func TestAnotherAccountsKeyIsNotFound(t *testing.T) {
	h := consoletest.Start(t, "", nil)
	alice, mallory := h.SignIn("alice@example.com"), h.SignIn("mallory@example.com")
	k := create(h, alice, "alice's").JSON()
	id, secret := k["id"].(string), k["secret"].(string)
	unknown := h.Do("DELETE", "/api/service/keys/key_doesnotexist", "", "Cookie", mallory, "Origin", origin)
	r := h.Do("DELETE", "/api/service/keys/"+id, "", "Cookie", mallory, "Origin", origin)
	if r.Status != 404 || r.Code() != "key_not_found" || string(r.Body) != string(unknown.Body) {
		t.Fatalf("another account's key: %s (unknown key: %s)", r, unknown)
	}
	if len(keysOf(h, mallory)) != 0 || len(keysOf(h, alice)) != 1 {
		t.Fatal("listings leak or lost a key")
	}
	if r := decide(h, secret); r.Status != 200 {
		t.Fatalf("alice's key after mallory's attempt: %s", r)
	}
}
