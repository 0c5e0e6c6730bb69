package app_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"decisiongateway/schema"
	"decisiongateway/shared/keys"
	"decisiongateway/testkit/hosttest"
)

// An upstream's JSON error keeps its status and is classified by it (spec
// §7 rule 1): the document describes each code at the statuses it really
// comes with, and no forwarded code at a status it never comes with
// (provider_busy at 401, upstream_timeout at 402, …). Every upstream
// status from 400 to 599 is tried.
func TestForwardedErrorCodesAreDescribedAtTheirStatusesOnly(t *testing.T) {
	var status atomic.Int64
	vendor := hosttest.NewRecorder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(status.Load()))
		w.Write([]byte(`{"error":{"message":"the upstream's words"}}`))
	})
	h := hosttest.Start(t, map[string]string{"UPSTREAM_KIND": "vendor", "UPSTREAM_URL": vendor.URL + "/v1",
		"UPSTREAM_API_KEY": "sk-operator-forwarded", "SERVICE_RATE_LIMIT": "1000", "SERVICE_MODELS_RATE_LIMIT": "1000"})
	_, key := h.NewAccount(keys.NewAccountID()+"@forwarded.test", 5)

	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Headers map[string]struct {
					Schema struct {
						Enum []string `json:"enum"`
					} `json:"schema"`
				} `json:"headers"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(schema.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	forwarded := []string{"provider_busy", "upstream_rejected_request", "upstream_auth_failed", "upstream_not_found", "upstream_timeout", "upstream_error"}
	for _, route := range []struct{ method, path, body string }{
		{"POST", "/v1/service", `{"state":"x","questions":{"q":{"type":"noul"}}}`},
		{"GET", "/v1/models", ""},
	} {
		responses := doc.Paths[route.path][strings.ToLower(route.method)].Responses
		described := func(status string) []string { return responses[status].Headers["X-Service-Error-Code"].Schema.Enum }
		seen := map[string][]string{} // response key → forwarded codes answered under it
		for s := 400; s < 600; s++ {
			status.Store(int64(s))
			req, _ := http.NewRequest(route.method, h.URL+route.path, strings.NewReader(route.body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			code := resp.Header.Get("X-Service-Error-Code")
			if resp.StatusCode != s || resp.Header.Get("X-Service-Error-Source") != "upstream" {
				t.Fatalf("%s %s, upstream %d: answered %d %s (%s)", route.method, route.path, s, resp.StatusCode, code, resp.Header.Get("X-Service-Error-Source"))
			}
			k := strconv.Itoa(s)
			if _, listed := responses[k]; !listed {
				k = strconv.Itoa(s/100) + "XX"
			}
			if !slices.Contains(described(k), code) {
				t.Errorf("%s %s: upstream %d answered %s, which the document's %s response does not list (%v)", route.method, route.path, s, code, k, described(k))
			}
			if !slices.Contains(seen[k], code) {
				seen[k] = append(seen[k], code)
			}
		}
		for k := range responses {
			for _, c := range described(k) {
				if slices.Contains(forwarded, c) && !slices.Contains(seen[k], c) && !(k == "502" && c == "upstream_error") && !(k == "504" && c == "upstream_timeout") {
					t.Errorf("%s %s: the %s response lists %s, which no upstream status answers there (seen %v)", route.method, route.path, k, c, seen[k])
				}
			}
		}
	}
}
