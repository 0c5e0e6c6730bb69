package usage_test

import (
	"strconv"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/keys"
	"decisiongateway/testkit/consoletest"
	"decisiongateway/testkit/sqldtest"
)

func TestMain(m *testing.M) { consoletest.Main(m) }

func day(unix int64) string { return time.Unix(unix, 0).UTC().Format("2006-01-02") }

// insertRequest adds one finished decision attempt to the ledger.
func insertRequest(h *consoletest.Host, acct string, created int64, state string, charged int64) string {
	id := keys.NewID("req_")
	status := abi.Int64(200)
	code := abi.NullValue()
	if state == "failed" {
		status, code = abi.Int64(502), abi.String("upstream_error")
	}
	h.Rows(`INSERT INTO requests (id, account_id, key_id, source, model, questions, cost, charged, state, status, error_code, lease_until, created_at, finished_at)
VALUES (?, ?, NULL, 'playground', 'm', 2, 2, ?, ?, ?, ?, 0, ?, ?)`,
		abi.String(id), abi.String(acct), abi.Int64(charged), abi.String(state), status, code, abi.Int64(created), abi.Int64(created+1))
	return id
}

// The window is the latest 30 UTC days, today included: a request at the
// start of the first day counts, one a day earlier does not; the latest 50
// requests of the window are listed newest first; other accounts' requests
// never appear.
func TestUsageWindows(t *testing.T) {
	for _, b := range sqldtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			h := consoletest.Start(t, b.URL, nil)
			cookie := h.SignIn("usage@example.com")
			other := h.Account(h.SignIn("other@example.com"))
			acct := h.Account(cookie)
			for attempt := 0; ; attempt++ {
				now := time.Now().Unix()
				today := now - now%86400
				first := today - 29*86400
				h.Rows("DELETE FROM requests")
				insertRequest(h, acct, first, "succeeded", 2)      // first second of the window
				insertRequest(h, acct, first-1, "succeeded", 2)    // a second before it
				insertRequest(h, acct, first+86400*3, "failed", 0) // a failure, refunded
				insertRequest(h, other, now, "succeeded", 2)
				var newest []string
				for i := 0; i < 55; i++ {
					newest = append(newest, insertRequest(h, acct, today+int64(i)%((now-today)+1), "succeeded", 2))
				}
				r := h.Do("GET", "/api/service/usage", "", "Cookie", cookie)
				if time.Now().Unix()/86400 != now/86400 && attempt == 0 {
					continue // midnight UTC passed: the window moved
				}
				u := r.JSON()
				if r.Status != 200 || u["balance"].(interface{ String() string }).String() != "100" {
					t.Fatalf("usage: %s", r)
				}
				w := u["window"].(map[string]any)
				if w["from"] != day(first) || w["to"] != day(today) || w["days"].(interface{ String() string }).String() != "30" {
					t.Fatalf("window %v", w)
				}
				days := u["days"].([]any)
				if len(days) != 30 {
					t.Fatalf("%d days", len(days))
				}
				num := func(m map[string]any, k string) string { return m[k].(interface{ String() string }).String() }
				d0, d3, d29 := days[0].(map[string]any), days[3].(map[string]any), days[29].(map[string]any)
				if d0["date"] != day(first) || num(d0, "requests") != "1" || num(d0, "credits") != "2" || num(d0, "succeeded") != "1" {
					t.Errorf("first day %v", d0)
				}
				if num(d3, "requests") != "1" || num(d3, "failed") != "1" || num(d3, "credits") != "0" {
					t.Errorf("day 4 %v", d3)
				}
				if d29["date"] != day(today) || num(d29, "requests") != "55" || num(d29, "credits") != "110" || num(d29, "questions") != "110" {
					t.Errorf("today %v", d29)
				}
				for i, d := range days {
					if dd := d.(map[string]any); dd["date"] != day(first+int64(i)*86400) {
						t.Errorf("day %d is %v", i, dd["date"])
					}
				}
				reqs := u["requests"].([]any)
				if len(reqs) != 50 {
					t.Fatalf("%d requests listed", len(reqs))
				}
				last := int64(1 << 62)
				for _, q := range reqs {
					m := q.(map[string]any)
					created, _ := strconv.ParseInt(num(m, "createdAt"), 10, 64)
					if created > last || created < today {
						t.Fatalf("requests not newest first within today: %v", reqs)
					}
					last = created
					for _, k := range []string{"id", "finishedAt", "source", "keyId", "model", "questions", "state", "status", "errorCode", "cost", "charged", "inputTokens", "outputTokens"} {
						if _, ok := m[k]; !ok {
							t.Fatalf("request lacks %s: %v", k, m)
						}
					}
				}
				return
			}
		})
	}
}

// TestUsageRecordsTheResolvedModel: a request's record keeps both the
// effective model it was sent with and the model the upstream says it
// resolved (spec §9.5: an alias may resolve differently over time; record
// the returned model), with and without an Idempotency-Key, whose
// settlements are written apart; an attempt with no answer has none.
func TestUsageRecordsTheResolvedModel(t *testing.T) {
	for _, b := range sqldtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			h := consoletest.Start(t, b.URL, nil)
			cookie := h.SignIn("resolved@example.com")
			acct := h.Account(cookie)
			key := h.Do("POST", "/api/service/keys", `{"name":"k"}`, "Cookie", cookie, "Origin", consoletest.Origin).JSON()["secret"].(string)
			body := `{"state":"s","questions":{"q":{"type":"noul"}}}`
			for _, extra := range [][]string{nil, {"Idempotency-Key", "resolved-1"}} {
				r := h.Do("POST", "/v1/service", body, append([]string{"Authorization", "Bearer " + key, "Content-Type", "application/json"}, extra...)...)
				if r.Status != 200 {
					t.Fatalf("decision: %s", r)
				}
			}
			failed := insertRequest(h, acct, time.Now().Unix(), "failed", 0)
			u := h.Do("GET", "/api/service/usage", "", "Cookie", cookie).JSON()
			reqs := u["requests"].([]any)
			if len(reqs) != 3 {
				t.Fatalf("%d requests", len(reqs))
			}
			for _, x := range reqs {
				r := x.(map[string]any)
				want := any("vendor-model-1")
				if r["id"] == failed {
					want = nil
				} else if r["model"] != "model-latest" {
					t.Errorf("request %v: model %v, want the effective model-latest", r["id"], r["model"])
				}
				if got, ok := r["resolvedModel"]; !ok || got != want {
					t.Errorf("request %v: resolvedModel %v (present %v), want %v", r["id"], got, ok, want)
				}
			}
		})
	}
}
