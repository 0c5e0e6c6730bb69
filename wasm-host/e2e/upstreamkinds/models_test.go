package upstreamkinds_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"decisiongateway/shared/keys/keystest"
)

// vendorModels is a vendor list in its own shape, extension fields and
// formatting included: it must come back unchanged.
const vendorModels = `{"models": [{"name":"model-2026-01-15","description":"Fixed release","release_date":"2026-01-15","context":{"max_questions":32}}],
 "has_more": false}`

// noDecisionTouched checks that a listing left no decision record and no
// credit movement behind (spec §4.2 rule 1).
func noDecisionTouched(t *testing.T, g *gateway, acct string, balance int64) {
	t.Helper()
	if n := g.count(`SELECT COUNT(*) FROM requests`); n != 0 {
		t.Errorf("%d decision records after listing models", n)
	}
	if n := g.count(`SELECT COUNT(*) FROM credit_entries WHERE kind IN ('reserve','refund')`); n != 0 {
		t.Errorf("%d credit entries after listing models", n)
	}
	if b := g.Balance(acct); b != balance {
		t.Errorf("balance %d, want %d", b, balance)
	}
}

func TestModelsVendorBodyUnchangedInShape(t *testing.T) {
	v := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		writeJSON(w, 200, vendorModels, "X-Request-Id", "vendor-list-1", "Set-Cookie", "v=1")
	})
	g := startGateway(t, "vendor", v.URL+"/v1")
	acct, key := g.account(10)
	r := g.models(key)
	if r.Status != 200 || string(r.Body) != vendorModels {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r.Header.Get("X-Upstream-Request-Id") != "vendor-list-1" || r.Header.Get("Set-Cookie") != "" || r.Header.Get("X-RateLimit-Limit") != "60" {
		t.Errorf("headers %v", r.Header)
	}
	reqs := v.Seen()
	if len(reqs) != 1 || reqs[0].Method != "GET" || reqs[0].Path != "/v1/models" || reqs[0].Header.Get("Authorization") != "Bearer "+operatorKey {
		t.Errorf("vendor received %+v", reqs)
	}
	noDecisionTouched(t, g, acct, 10)

	// A vendor JSON error keeps its status and body, marked as upstream.
	v.Handle(func(w http.ResponseWriter, r *http.Request, _ []byte) {
		writeJSON(w, 401, `{"error":{"type":"authentication_error"}}`)
	})
	r = g.models(key)
	if r.Status != 401 || r.source() != "upstream" || r.code() != "upstream_auth_failed" || string(r.Body) != `{"error":{"type":"authentication_error"}}` {
		t.Errorf("%d %s %s %s", r.Status, r.code(), r.source(), r.Body)
	}
}

// TestModelsVendorAnswersClassifiedLikeDecisions: what the vendor answers
// the listing is classified as its answers to a decision are (spec §4.8,
// §7): a redirect is not forwarded, even with a JSON body (its status would
// reach the caller without its Location); a busy vendor without a JSON body
// is provider_busy at its own status with its Retry-After; a 2xx that is
// not JSON by its content type is not passed on as a list.
func TestModelsVendorAnswersClassifiedLikeDecisions(t *testing.T) {
	for _, tc := range []struct {
		name           string
		answer         func(w http.ResponseWriter)
		status         int
		code, source   string
		retryAfter     string
		bodyIsUpstream bool
	}{
		{"redirect with a JSON body", func(w http.ResponseWriter) {
			writeJSON(w, 302, vendorModels, "Location", "https://elsewhere.example/v1/models")
		}, 502, "upstream_invalid_response", "platform", "", false},
		{"busy without JSON", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(503)
			w.Write([]byte("<h1>overloaded</h1>"))
		}, 503, "provider_busy", "platform", "7", false},
		{"rate limited without JSON", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(429)
		}, 429, "provider_busy", "platform", "3", false},
		{"a list that is not JSON by its type", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(vendorModels))
		}, 502, "upstream_invalid_response", "platform", "", false},
		{"a JSON error", func(w http.ResponseWriter) {
			writeJSON(w, 503, `{"error":{"type":"overloaded"}}`, "Retry-After", "5")
		}, 503, "provider_busy", "upstream", "5", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) { tc.answer(w) })
			g := startGateway(t, "vendor", v.URL+"/v1")
			acct, key := g.account(10)
			r := g.models(key)
			if r.Status != tc.status || r.code() != tc.code || r.source() != tc.source {
				t.Fatalf("%d %s (%s) %v %s, want %d %s (%s)", r.Status, r.code(), r.source(), r.Header, r.Body, tc.status, tc.code, tc.source)
			}
			if r.Header.Get("Location") != "" || r.Header.Get("Retry-After") != tc.retryAfter {
				t.Errorf("Location %q Retry-After %q, want %q", r.Header.Get("Location"), r.Header.Get("Retry-After"), tc.retryAfter)
			}
			if got := string(r.Body) == `{"error":{"type":"overloaded"}}`; got != tc.bodyIsUpstream {
				t.Errorf("body %s", r.Body)
			}
			noDecisionTouched(t, g, acct, 10)
		})
	}
}

func TestModelsEdgeIsThePlatformCatalog(t *testing.T) {
	b := newBinding(t)
	g := startGateway(t, "edge", b.URL)
	acct, key := g.account(10)
	r := g.models(key)
	got := r.json(t)
	models, _ := got["models"].([]any)
	if r.Status != 200 || len(models) != 1 || path(models, 0, "name") != "vendor/model" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if len(b.Seen()) != 0 {
		t.Errorf("the catalog called the binding: %+v", b.Seen())
	}
	noDecisionTouched(t, g, acct, 10)
}

func TestModelsRouterNotSupported(t *testing.T) {
	rt := newRouter(t)
	g := startGateway(t, "router", rt.URL)
	acct, key := g.account(10)
	r := g.models(key)
	if r.Status != 501 || r.code() != "model_listing_not_supported" || r.source() != "platform" {
		t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
	}
	if len(rt.Seen()) != 0 {
		t.Errorf("the router was called")
	}
	noDecisionTouched(t, g, acct, 10)
}

func TestModelsWithoutUpstream(t *testing.T) {
	g := startGateway(t, "", "")
	acct, key := g.account(10)
	if r := g.models(key); r.Status != 503 || r.code() != "upstream_not_configured" {
		t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
	}
	noDecisionTouched(t, g, acct, 10)
}

func TestModelsNeedsAPlatformKey(t *testing.T) {
	b := newBinding(t)
	g := startGateway(t, "edge", b.URL)
	acct, key := g.account(10)
	for _, tc := range []struct{ auth, code string }{
		{"", "missing_api_key"},
		{"not-a-key", "invalid_api_key"},
		{keystest.BadChecksum(key), "invalid_api_key"}, // checksum fails
	} {
		if r := g.models(tc.auth); r.Status != 401 || r.code() != tc.code {
			t.Errorf("key %q: %d %s", tc.auth, r.Status, r.code())
		}
	}
	g.exec(`UPDATE api_keys SET revoked_at = 1 WHERE account_id = ?`, strArg(acct))
	if r := g.models(key); r.Status != 401 || r.code() != "invalid_api_key" {
		t.Errorf("revoked key: %d %s", r.Status, r.code())
	}
}

func TestModelsHaveTheirOwnRateCounter(t *testing.T) {
	b := newBinding(t)
	g := startGateway(t, "edge", b.URL)
	acct, key := g.account(100)
	// A decision first: it must not spend the listing window.
	if r := g.decide(key, decision); r.Status != 200 || r.Header.Get("X-RateLimit-Remaining") != "119" {
		t.Fatalf("decision: %d remaining %q %s", r.Status, r.Header.Get("X-RateLimit-Remaining"), r.Body)
	}
	// 60 listings pass and the 61st is refused, all in one window; if the
	// minute turns over mid-run, the answers are not judged and the run is
	// repeated.
	for attempt := 0; ; attempt++ {
		if attempt == 3 {
			t.Fatal("the minute rolled over in every run")
		}
		if attempt > 0 {
			g.exec(`DELETE FROM rate_windows WHERE scope = ?`, strArg("models:"+acct))
		}
		minute := time.Now().Unix() / 60
		var listed []reply
		for range 61 {
			listed = append(listed, g.models(key))
		}
		if time.Now().Unix()/60 != minute {
			continue
		}
		for i, r := range listed[:60] {
			if r.Status != 200 || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(59-i) {
				t.Fatalf("listing %d: %d remaining %q %s", i+1, r.Status, r.Header.Get("X-RateLimit-Remaining"), r.Body)
			}
		}
		if last := listed[60]; last.Status != 429 || last.code() != "rate_limit_exceeded" || last.Header.Get("Retry-After") == "" {
			t.Fatalf("61st listing: %d %v %s", last.Status, last.Header, last.Body)
		}
		break
	}
	// The decision window is untouched by 61 listings, and listing spent
	// no credits and made no decision record.
	r := g.decide(key, decision)
	if rem, _ := strconv.Atoi(r.Header.Get("X-RateLimit-Remaining")); r.Status != 200 || rem < 118 {
		t.Errorf("decision after 61 listings: %d remaining %q %s", r.Status, r.Header.Get("X-RateLimit-Remaining"), r.Body)
	}
	if n := g.count(`SELECT COUNT(*) FROM requests`); n != 2 {
		t.Errorf("%d decision records, want the two decisions", n)
	}
}
