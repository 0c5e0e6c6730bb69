package decide_test

import (
	"bytes"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/keys"
	"decisiongateway/shared/keys/keystest"
	"decisiongateway/testkit/hosttest"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestExplicitModelForwardsOriginalBytesAndAnswersByteForByte(t *testing.T) {
	backends(t, func(t *testing.T, ledger string) {
		g := startGateway(t, ledger, nil)
		acct, key := g.NewAccount(randomEmail(), 100)
		body := "{ \"questions\" : {\"fruit\":{\"type\":\"choice\",\"criteria\":{\"apple\":\"an apple\",\"pear\":\"a pear\"},\"x-ext\":[1,2]}},\n\"state\":{\"n\":12345678901234567890,\"tiny\":1e-400},\"model\":\"model-x\",\"extension\":true}"
		sent := time.Now().Unix()
		r := g.post(key, body)
		answered := time.Now().Unix()
		if r.Status != 200 {
			t.Fatalf("status %d %s", r.Status, r.Body)
		}
		calls := g.vendor.Seen()
		if len(calls) != 1 || calls[0].Path != "/v1/service" || string(calls[0].Body) != body {
			t.Fatalf("upstream got %+v", calls)
		}
		if got := calls[0].Header.Get("Authorization"); got != "Bearer "+operatorKey {
			t.Errorf("upstream Authorization %q", got)
		}
		// The success body is the vendor's text, unchanged.
		var answer map[string]any
		if json.Unmarshal(r.Body, &answer) != nil || answer["ext"] != "kept" || answer["billing"] != nil || answer["request_id"] != nil {
			t.Errorf("body %s", r.Body)
		}
		want := map[string]string{
			"X-Service-Credits":              "1",
			"X-Service-Response-Mode":        "vendor-native",
			"X-Upstream-Request-Id":          "vrid-1",
			"X-Vendor-Request-Id":            "vrid-1",
			"X-Upstream-Ratelimit-Remaining": "99",
			"X-Ratelimit-Limit":              "120",
			"X-Ratelimit-Remaining":          "119",
			"Cache-Control":                  "no-store",
		}
		for h, v := range want {
			if r.Header.Get(h) != v {
				t.Errorf("%s = %q, want %q", h, r.Header.Get(h), v)
			}
		}
		for _, h := range []string{"Set-Cookie", "X-Vendor-Internal", "Request-Id", "X-Service-Error-Code"} {
			if r.Header.Get(h) != "" {
				t.Errorf("%s forwarded: %q", h, r.Header.Get(h))
			}
		}
		// The reset ends the minute the request was counted in, at some
		// moment between sending it and its answer (a minute may turn then).
		if reset, _ := strconv.ParseInt(r.Header.Get("X-Ratelimit-Reset"), 10, 64); reset <= sent || reset > answered+60 {
			t.Errorf("X-RateLimit-Reset %q", r.Header.Get("X-Ratelimit-Reset"))
		}
		if g.Balance(acct) != 99 {
			t.Errorf("balance %d", g.Balance(acct))
		}
		g.CheckInvariant()
	})
}

func TestOmittedModelIsInsertedWithoutReserialising(t *testing.T) {
	g := startGateway(t, "", map[string]string{"SERVICE_DEFAULT_MODEL": "model-2026"})
	_, key := g.NewAccount(randomEmail(), 10)
	body := `{"state":[12345678901234567890123,1e-400,0.1000000000000000055511151231257827],"questions":{"ok":{"type":"noul"}},"ext":{"a":1.50}}`
	if r := g.post(key, body); r.Status != 200 {
		t.Fatalf("status %d %s", r.Status, r.Body)
	}
	got := string(g.vendor.Seen()[0].Body)
	if want := `{"model":"model-2026",` + body[1:]; got != want {
		t.Fatalf("upstream got\n%s\nwant\n%s", got, want)
	}
}

func TestValidationFailuresCostNothingAndReachNoUpstream(t *testing.T) {
	g := startGateway(t, "", nil)
	acct, key := g.NewAccount(randomEmail(), 50)
	cases := []struct{ name, body, code string }{
		{"duplicate key after escapes", `{"state":null,"questions":{"a":{"type":"noul"},"\u0061":{"type":"noul"}}}`, "duplicate_key"},
		{"boolean type", `{"state":null,"questions":{"a":{"type":"boolean"}}}`, ""},
		{"no questions", `{"state":null,"questions":{}}`, ""},
		{"missing state", `{"questions":{"a":{"type":"noul"}}}`, ""},
		{"number out of range", `{"state":1e400,"questions":{"a":{"type":"noul"}}}`, "number_out_of_range"},
		{"too deep", `{"state":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `,"questions":{"a":{"type":"noul"}}}`, ""},
		{"one score level", `{"state":null,"questions":{"a":{"type":"score","criteria":["x"]}}}`, ""},
		{"not json", `{"state":`, ""},
	}
	for _, c := range cases {
		r := g.post(key, c.body)
		if r.Status < 400 || r.Status >= 500 || r.Header.Get("X-Service-Error-Source") != "platform" || r.code() == "" {
			t.Errorf("%s: %d %q %s", c.name, r.Status, r.code(), r.Body)
		}
		if c.code != "" && r.code() != c.code {
			t.Errorf("%s: code %q, want %q", c.name, r.code(), c.code)
		}
		if r.Header.Get("X-Service-Credits") != "0" {
			t.Errorf("%s: X-Service-Credits %q", c.name, r.Header.Get("X-Service-Credits"))
		}
	}
	// Content type is required; an oversize body is refused by the host.
	req, _ := http.NewRequest("POST", g.URL+"/v1/service", strings.NewReader(simpleRequest))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "text/plain")
	if resp, _ := http.DefaultClient.Do(req); resp.StatusCode != 415 {
		t.Errorf("text/plain: %d", resp.StatusCode)
	}
	big := `{"state":"` + strings.Repeat("x", 65536) + `","questions":{"a":{"type":"noul"}}}`
	if r := g.post(key, big); r.Status != 413 || r.code() != "body_too_large" || r.Header.Get("X-Service-Credits") != "0" {
		t.Errorf("oversize: %d %q, X-Service-Credits %q", r.Status, r.code(), r.Header.Get("X-Service-Credits"))
	}
	if n := len(g.vendor.Seen()); n != 0 {
		t.Errorf("upstream called %d times", n)
	}
	if g.Balance(acct) != 50 {
		t.Errorf("balance %d", g.Balance(acct))
	}
	g.CheckInvariant()
}

func TestKeysThatCannotAuthenticate(t *testing.T) {
	g := startGateway(t, "", nil)
	acct, key := g.NewAccount(randomEmail(), 10)
	g.exec(`UPDATE api_keys SET revoked_at = 1 WHERE account_id = ?`, str(acct))
	otherAcct, other := g.NewAccount(randomEmail(), 10)
	for name, k := range map[string]string{
		"revoked":                key,
		"malformed":              keystest.BadChecksum(other), // refused without a lookup
		"unknown, of no account": keys.New(keys.APIKey, keys.NewAccountID()),
		"unknown, of an account": keys.New(keys.APIKey, otherAcct),
		"missing":                "",
	} {
		r := g.post(k, simpleRequest)
		if r.Status != 401 || (r.code() != "invalid_api_key" && r.code() != "missing_api_key") {
			t.Errorf("%s: %d %q", name, r.Status, r.code())
		}
	}
	if len(g.vendor.Seen()) != 0 {
		t.Error("upstream called")
	}
}

func TestInsufficientCreditsRefusedBeforeUpstream(t *testing.T) {
	g := startGateway(t, "", nil)
	acct, key := g.NewAccount(randomEmail(), 1)
	two := `{"state":"s","questions":{"a":{"type":"noul"},"b":{"type":"noul"}}}` // costs 2
	r := g.post(key, two, "Idempotency-Key", "k1")
	if r.Status != 402 || r.code() != "insufficient_credits" {
		t.Fatalf("%d %q", r.Status, r.code())
	}
	if len(g.vendor.Seen()) != 0 || g.Balance(acct) != 1 {
		t.Fatal("charged or called")
	}
	// The key was not consumed by the refused attempt.
	g.exec(`UPDATE accounts SET balance = balance + 5 WHERE id = ?`, str(acct))
	g.exec(`INSERT INTO credit_entries (account_id, delta, kind, created_at) VALUES (?, 5, 'grant', 0)`, str(acct))
	if r := g.post(key, two, "Idempotency-Key", "k1"); r.Status != 200 || r.Header.Get("X-Service-Credits") != "2" {
		t.Fatalf("after top-up: %d %s", r.Status, r.Body)
	}
	g.CheckInvariant()
}

// A request is priced on its meaning, not on the canonical form's
// spelling of its numbers: 1e20, written out as 21 digits there, counts
// its own 4 bytes, so a body costs no more than its bytes would.
func TestPriceCountsNumbersAtTheirShortest(t *testing.T) {
	g := startGateway(t, "", nil)
	acct, key := g.NewAccount(randomEmail(), 30)
	numbers := func(n int, num string) string {
		return `{"model":"m","questions":{"a":{"type":"noul"},"b":{"type":"noul"}},"state":[` + num + strings.Repeat(","+num, n-1) + `]}`
	}
	cost := func(body string) int { return 2 * ((len(body) + 4095) / 4096) }
	// 60,077 bytes: the spec's formula on the body's own bytes is 2 × 15,
	// the whole balance (on the canonical form's 264,077 it was 130).
	body := numbers(12000, "1e20")
	r := g.post(key, body)
	if r.Status != 200 || r.Header.Get("X-Service-Credits") != strconv.Itoa(cost(body)) || g.Balance(acct) != 0 {
		t.Fatalf("%d credits %q, want %d; balance %d: %s", r.Status, r.Header.Get("X-Service-Credits"), cost(body), g.Balance(acct), r.Body)
	}
	// Written out (55,077 bytes) the same numbers cost what 1e20 costs:
	// the price is of the value, not of its spelling.
	g.exec(`UPDATE accounts SET balance = balance + 8 WHERE id = ?`, str(acct))
	g.exec(`INSERT INTO credit_entries (account_id, delta, kind, created_at) VALUES (?, 8, 'grant', 0)`, str(acct))
	long, short := numbers(2500, "100000000000000000000"), numbers(2500, "1e20")
	if r := g.post(key, long); r.Status != 200 || r.Header.Get("X-Service-Credits") != strconv.Itoa(cost(short)) || cost(short) != 8 {
		t.Fatalf("%d credits %q, want %d", r.Status, r.Header.Get("X-Service-Credits"), cost(short))
	}
	if g.Balance(acct) != 0 {
		t.Errorf("balance %d", g.Balance(acct))
	}
	g.CheckInvariant()
}

// The minute window could roll over mid-test; then the run is repeated on a
// fresh account.
func TestAccountRateLimitCountsReplaysAndSharesAcrossKeys(t *testing.T) {
	g := startGateway(t, "", map[string]string{"SERVICE_RATE_LIMIT": "3"})
	for attempt := 0; attempt < 3; attempt++ {
		minute, calls := time.Now().Unix()/60, len(g.vendor.Seen())
		acct, key := g.NewAccount(randomEmail(), 100)
		second := g.addKey(acct)
		g.post(key, simpleRequest, "Idempotency-Key", "same")
		g.post(key, simpleRequest, "Idempotency-Key", "same") // a replay still counts
		third := g.post(second, simpleRequest)
		r := g.post(key, simpleRequest)
		if time.Now().Unix()/60 != minute {
			continue
		}
		if third.Status != 200 || third.Header.Get("X-Ratelimit-Remaining") != "0" {
			t.Fatalf("third: %d remaining %q", third.Status, third.Header.Get("X-Ratelimit-Remaining"))
		}
		if r.Status != 429 || r.code() != "rate_limit_exceeded" {
			t.Fatalf("fourth: %d %q", r.Status, r.code())
		}
		if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
			t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
		}
		if r.Header.Get("X-Ratelimit-Remaining") != "" {
			t.Error("rate headers on a refused attempt")
		}
		if n := len(g.vendor.Seen()) - calls; n != 2 {
			t.Errorf("upstream calls %d, want 2", n)
		}
		return
	}
	t.Fatal("the minute rolled over in every run")
}

func TestAuthenticationAttemptsLimitedPerClientAddress(t *testing.T) {
	g := startGateway(t, "", nil)
	_, key := g.NewAccount(randomEmail(), 10)
	// This minute's window and the next are full, so the request finds its
	// address limited even when a minute ends while the test runs.
	for _, at := range []int64{time.Now().Unix(), time.Now().Unix() + 60} {
		g.exec(`INSERT INTO rate_windows (scope, window_start, count)
VALUES ('auth:' || ?, ? / 60 * 60, 600) ON CONFLICT (scope, window_start) DO UPDATE SET count = 600`, str(hashOfLoopback), abi.Int64(at))
	}
	if r := g.post(key, simpleRequest); r.Status != 429 || r.code() != "auth_rate_limited" {
		t.Fatalf("%d %q %s", r.Status, r.code(), r.Body)
	}
}

func TestUpstreamAnswersMappedAndRefunded(t *testing.T) {
	cases := []struct {
		name    string
		respond func(w http.ResponseWriter)
		status  int
		source  string
		code    string
		check   func(t *testing.T, r reply)
	}{
		{"json error kept", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			w.Write([]byte(`{"error":{"type":"invalid_request","message":"vendor says no"}}`))
		}, 400, "upstream", "upstream_rejected_request", func(t *testing.T, r reply) {
			if string(r.Body) != `{"error":{"type":"invalid_request","message":"vendor says no"}}` {
				t.Errorf("body %s", r.Body)
			}
		}},
		{"busy keeps retry-after", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "Wed, 21 Oct 2026 07:28:00 GMT")
			w.WriteHeader(429)
			w.Write([]byte(`{"error":"busy"}`))
		}, 429, "upstream", "provider_busy", func(t *testing.T, r reply) {
			if r.Header.Get("Retry-After") != "Wed, 21 Oct 2026 07:28:00 GMT" {
				t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
			}
		}},
		{"non-json error replaced", func(w http.ResponseWriter) {
			w.WriteHeader(500)
			w.Write([]byte("<html>oops</html>"))
		}, 502, "platform", "upstream_invalid_response", nil},
		{"redirect not followed", func(w http.ResponseWriter) {
			w.Header().Set("Location", "http://127.0.0.1:1/elsewhere")
			w.WriteHeader(302)
		}, 502, "platform", "upstream_invalid_response", func(t *testing.T, r reply) {
			if r.Header.Get("Location") != "" {
				t.Error("Location forwarded")
			}
		}},
		{"invalid answer replaced", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"model":"m","answers":{"fruit":{"type":"choice","choice":"banana","probabilities":{"apple":0.5,"pear":0.5},"confidence":1}}}`))
		}, 502, "platform", "invalid_upstream_answer", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := startGateway(t, "", nil)
			acct, key := g.NewAccount(randomEmail(), 10)
			g.vendor.Handle(func(w http.ResponseWriter, _ *http.Request, _ []byte) { c.respond(w) })
			r := g.post(key, simpleRequest, "Idempotency-Key", "k")
			if r.Status != c.status || r.Header.Get("X-Service-Error-Source") != c.source || r.code() != c.code {
				t.Fatalf("%d %q %q %s", r.Status, r.Header.Get("X-Service-Error-Source"), r.code(), r.Body)
			}
			if r.Header.Get("X-Service-Credits") != "0" || g.Balance(acct) != 10 {
				t.Errorf("credits %q, balance %d: not refunded", r.Header.Get("X-Service-Credits"), g.Balance(acct))
			}
			if c.check != nil {
				c.check(t, r)
			}
			// The failed attempt is recorded: the key cannot be reused.
			if again := g.post(key, simpleRequest, "Idempotency-Key", "k"); again.Status != 409 || again.code() != "idempotency_failed" {
				t.Errorf("reuse: %d %q", again.Status, again.code())
			}
			g.CheckInvariant()
		})
	}
}

func TestUpstreamTimeoutIsAPlatformErrorAndRefunded(t *testing.T) {
	g := startGateway(t, "", map[string]string{"GATEWAY_REQUEST_TIMEOUT": "2s"})
	acct, key := g.NewAccount(randomEmail(), 10)
	g.vendor.Handle(func(w http.ResponseWriter, r *http.Request, body []byte) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
	})
	r := g.post(key, simpleRequest)
	if r.Status != 504 || r.code() != "upstream_timeout" || r.Header.Get("X-Service-Credits") != "0" || g.Balance(acct) != 10 {
		t.Fatalf("%d %q credits %q balance %d", r.Status, r.code(), r.Header.Get("X-Service-Credits"), g.Balance(acct))
	}
	g.CheckInvariant()
}

func TestOperatorKeyNeverReachesTheCaller(t *testing.T) {
	g := startGateway(t, "", nil)
	_, key := g.NewAccount(randomEmail(), 10)
	g.vendor.Handle(func(w http.ResponseWriter, r *http.Request, _ []byte) {
		// A misbehaving vendor echoes the credential it received.
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Authorization", r.Header.Get("Authorization"))
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		w.WriteHeader(401)
		w.Write([]byte(`{"error":"bad key"}`))
	})
	r := g.post(key, simpleRequest)
	var all bytes.Buffer
	r.Header.Write(&all)
	if strings.Contains(all.String(), operatorKey) {
		t.Fatalf("operator key in response headers:\n%s", all.String())
	}
	if got := g.vendor.Seen()[0].Header.Get("Authorization"); strings.Contains(got, key) {
		t.Fatal("the caller's key reached the upstream")
	}
}

// TestMalformedKeysCountAsAuthenticationAttempts: a malformed key is an
// authentication attempt (spec §8), so after the address's limit even a
// valid key from it is refused, on the decision and model-listing routes.
// The minute window could roll over mid-test; then the run is repeated.
func TestMalformedKeysCountAsAuthenticationAttempts(t *testing.T) {
	g := startGateway(t, "", map[string]string{"SERVICE_AUTH_RATE_LIMIT": "3"})
	_, key := g.NewAccount(randomEmail(), 10)
	for attempt := 0; attempt < 3; attempt++ {
		g.exec(`DELETE FROM rate_windows`)
		minute := time.Now().Unix() / 60
		var got []string
		for _, auth := range []string{"Bearer dg_not-a-key", "Basic abc", "Bearer dg_" + strings.Repeat("x", 40)} {
			got = append(got, strconv.Itoa(g.post("", simpleRequest, "Authorization", auth).Status))
		}
		valid := g.post(key, simpleRequest)
		models := g.send("GET", "/v1/models", key, "")
		if time.Now().Unix()/60 != minute {
			continue
		}
		if strings.Join(got, ",") != "401,401,401" {
			t.Fatalf("malformed keys within the limit: %v", got)
		}
		if valid.Status != 429 || valid.code() != "auth_rate_limited" || valid.Header.Get("Retry-After") == "" {
			t.Fatalf("valid key after three malformed ones: %d %q", valid.Status, valid.code())
		}
		if models.Status != 429 || models.code() != "auth_rate_limited" {
			t.Fatalf("models after the limit: %d %q", models.Status, models.code())
		}
		if r := g.post("", simpleRequest); r.Status != 401 || r.code() != "missing_api_key" {
			t.Fatalf("no Authorization header is no attempt: %d %q", r.Status, r.code())
		}
		return
	}
	t.Fatal("the minute rolled over in every run")
}

// TestResolvedModelIsRecorded: a success records the model the vendor's
// answer named beside the effective model (spec §9.5), on both settlement
// paths (with and without an Idempotency-Key); an answer naming something
// that is no model name (here 4,000 characters, with a control character)
// is still delivered, but the ledger keeps no resolved model for it rather
// than whatever the upstream wrote.
func TestResolvedModelIsRecorded(t *testing.T) {
	g := startGateway(t, "", nil)
	acct, key := g.NewAccount(randomEmail(), 10)
	noModel := `{"state":"a red apple","questions":{"fruit":{"type":"choice","criteria":{"apple":"an apple","pear":"a pear"}}}}`
	for _, headers := range [][]string{nil, {"Idempotency-Key", "resolved-1"}} {
		if r := g.post(key, noModel, headers...); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	huge := strings.Repeat("m", 4000) + "\n"
	g.vendor.Handle(func(w http.ResponseWriter, _ *http.Request, body []byte) {
		out, _ := json.Marshal(map[string]any{"model": huge, "answers": hosttest.Answers(body)})
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	})
	for _, headers := range [][]string{nil, {"Idempotency-Key", "resolved-2"}} {
		if r := g.post(key, noModel, headers...); r.Status != 200 || !strings.Contains(string(r.Body), strings.Repeat("m", 4000)) {
			t.Fatalf("%d %.200s", r.Status, r.Body)
		}
	}
	rows := g.exec(`SELECT model, resolved_model FROM requests WHERE account_id = ? ORDER BY created_at, rowid`, str(acct))
	if len(rows) != 4 {
		t.Fatalf("%d requests", len(rows))
	}
	for i, r := range rows {
		want := abi.String("vendor-resolved-1")
		if i >= 2 {
			want = abi.NullValue()
		}
		if r[0].AsString() != "model-latest" || r[1].Kind != want.Kind || r[1].AsString() != want.AsString() {
			t.Errorf("request %d: model %q resolved %v (%.40q), want model-latest and %v", i, r[0].AsString(), r[1].Kind, r[1].AsString(), want.AsString())
		}
	}
}
