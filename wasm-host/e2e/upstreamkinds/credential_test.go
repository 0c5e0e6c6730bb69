package upstreamkinds_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"decisiongateway/testkit/hosttest"
)

// echo is how an upstream hands the operator's key back: in its success
// body, its error body, or a header of either.
type echo struct {
	name   string
	handle func(w http.ResponseWriter, r *http.Request, body []byte)
}

// vendorEchoes answer the vendor protocol: a valid answer with the key in
// an extension field (passed through byte for byte without the check), an
// error whose message quotes it, and a valid answer whose request id is it.
func vendorEchoes() []echo {
	answer := func(body []byte, extra map[string]any) string {
		m := map[string]any{"model": "vendor-model", "answers": hosttest.Answers(body)}
		for k, v := range extra {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	return []echo{
		{"success body", func(w http.ResponseWriter, r *http.Request, body []byte) {
			writeJSON(w, 200, answer(body, map[string]any{"debug": map[string]any{"authorization": r.Header.Get("Authorization")}}))
		}},
		{"error body", func(w http.ResponseWriter, r *http.Request, body []byte) {
			writeJSON(w, 401, `{"error":{"type":"authentication_error","message":"invalid key `+operatorKey+`"}}`)
		}},
		{"header", func(w http.ResponseWriter, r *http.Request, body []byte) {
			writeJSON(w, 200, answer(body, nil), "X-Request-Id", operatorKey)
		}},
		{"success body, \\u-escaped", func(w http.ResponseWriter, r *http.Request, body []byte) {
			writeJSON(w, 200, strings.TrimSuffix(answer(body, nil), "}")+`,"debug":"`+uEscaped(operatorKey)+`"}`)
		}},
		{"header, upper case", func(w http.ResponseWriter, r *http.Request, body []byte) {
			writeJSON(w, 200, answer(body, nil), "X-Vendor-Request-Id", strings.ToUpper(r.Header.Get("Authorization")))
		}},
		{"error body, \\u-escaped", func(w http.ResponseWriter, r *http.Request, body []byte) {
			writeJSON(w, 400, `{"error":{"type":"invalid_request_error","message":"key `+uEscaped(operatorKey)+`"}}`)
		}},
	}
}

// uEscaped writes s as the inside of a JSON string whose every character is
// a \uXXXX escape: the same string to any JSON parser, none of its bytes
// as sent.
func uEscaped(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// routerEchoes answer Chat Completions: the key as the resolved model (which
// the adapter reports as the answer's model), in an error, in a header.
func routerEchoes(t *testing.T) []echo {
	var reply map[string]any
	decodeInto(t, []byte(completion(t)), &reply)
	reply["model"] = operatorKey
	withKey, _ := json.Marshal(reply)
	return []echo{
		{"success body", func(w http.ResponseWriter, r *http.Request, _ []byte) { writeJSON(w, 200, string(withKey)) }},
		{"success body, \\u-escaped", func(w http.ResponseWriter, r *http.Request, _ []byte) {
			writeJSON(w, 200, strings.Replace(string(withKey), operatorKey, uEscaped(operatorKey), 1))
		}},
		{"error body", func(w http.ResponseWriter, r *http.Request, _ []byte) {
			writeJSON(w, 400, `{"error":{"message":"no such key: `+operatorKey+`","code":400}}`)
		}},
		{"header", func(w http.ResponseWriter, r *http.Request, _ []byte) {
			writeJSON(w, 200, completion(t), "X-Request-Id", "req-"+operatorKey)
		}},
	}
}

// edgeEchoes answer the Workers AI REST shape the wazero host's model
// binding speaks: the key as the model, in an error, in a header.
func edgeEchoes() []echo {
	return []echo{
		{"success body", func(w http.ResponseWriter, r *http.Request, _ []byte) {
			writeJSON(w, 200, strings.Replace(bindingResult, "vendor/model-2026-01-15", operatorKey, 1))
		}},
		{"success body, \\u-escaped", func(w http.ResponseWriter, r *http.Request, _ []byte) {
			writeJSON(w, 200, strings.Replace(bindingResult, "vendor/model-2026-01-15", uEscaped(operatorKey), 1))
		}},
		{"error body", func(w http.ResponseWriter, r *http.Request, _ []byte) {
			writeJSON(w, 400, `{"result":null,"success":false,"errors":[{"code":10000,"message":"bad token `+operatorKey+`"}],"messages":[]}`)
		}},
		{"header", func(w http.ResponseWriter, r *http.Request, _ []byte) {
			writeJSON(w, 200, bindingResult, "Cf-Ray", operatorKey)
		}},
	}
}

// leaks reports where in a reply the operator's key appears, if anywhere,
// in any letter case: as sent, or in the body's JSON strings as a client's
// parser decodes them.
func leaks(r reply) string {
	var decoded any
	has := func(s string) bool { return strings.Contains(strings.ToLower(s), strings.ToLower(operatorKey)) }
	if has(string(r.Body)) || json.Unmarshal(r.Body, &decoded) == nil && has(fmt.Sprint(decoded)) {
		return "body"
	}
	for name, values := range r.Header {
		for _, v := range values {
			if has(name) || has(v) {
				return "header " + name
			}
		}
	}
	return ""
}

// An upstream that answers with the operator's credential (UPSTREAM_API_KEY)
// in a success body, an error body or a header, on every upstream kind,
// never gets it to the caller or a log: the answer is replaced by a
// platform 5xx and the reservation refunded.
func TestUpstreamEchoingTheOperatorKeyNeverReachesTheCaller(t *testing.T) {
	kinds := []struct {
		kind, path string
		echoes     []echo
	}{
		{"vendor", "/v1", vendorEchoes()},
		{"router", "/api/v1", routerEchoes(t)},
		{"edge", "/ai", edgeEchoes()},
	}
	for _, k := range kinds {
		for _, e := range k.echoes {
			t.Run(k.kind+"/"+e.name, func(t *testing.T) {
				up := newFake(t, e.handle)
				g := startGateway(t, k.kind, up.URL+k.path)
				acct, key := g.account(100)
				r := g.decide(key, withModel("m-1"))
				if where := leaks(r); where != "" {
					t.Fatalf("the operator key reached the caller in the %s: %d %v %s", where, r.Status, r.Header, r.Body)
				}
				if r.Status != 502 || r.source() != "platform" || r.code() != "upstream_response_unsafe" {
					t.Errorf("want a platform 502 upstream_response_unsafe, got %d %q %q %s", r.Status, r.source(), r.code(), r.Body)
				}
				if len(up.Seen()) != 1 {
					t.Errorf("upstream called %d times", len(up.Seen()))
				}
				if got := g.Balance(acct); got != 100 {
					t.Errorf("balance %d after a replaced answer, want 100 (refunded)", got)
				}
				if strings.Contains(g.Logs(), operatorKey) {
					t.Errorf("the operator key reached the log:\n%s", g.Logs())
				}
				g.CheckInvariant()
			})
		}
	}
}

// The vendor's model list is the other answer a caller receives from the
// upstream: an echo there is replaced the same way.
func TestModelListEchoingTheOperatorKeyNeverReachesTheCaller(t *testing.T) {
	for _, e := range []echo{
		{"success body", func(w http.ResponseWriter, r *http.Request, _ []byte) {
			writeJSON(w, 200, `{"models":[{"name":"m-1","description":"`+r.Header.Get("Authorization")+`","release_date":"2026-01-01"}]}`)
		}},
		{"error body", func(w http.ResponseWriter, r *http.Request, _ []byte) {
			writeJSON(w, 403, `{"error":{"message":"key `+operatorKey+` may not list models"}}`)
		}},
		{"header", func(w http.ResponseWriter, r *http.Request, _ []byte) {
			writeJSON(w, 200, `{"models":[]}`, "X-Vendor-Request-Id", operatorKey)
		}},
	} {
		t.Run(e.name, func(t *testing.T) {
			up := newFake(t, e.handle)
			g := startGateway(t, "vendor", up.URL+"/v1")
			_, key := g.account(0)
			r := g.models(key)
			if where := leaks(r); where != "" {
				t.Fatalf("the operator key reached the caller in the %s: %d %v %s", where, r.Status, r.Header, r.Body)
			}
			if r.Status != 502 || r.source() != "platform" || r.code() != "upstream_response_unsafe" {
				t.Errorf("want a platform 502 upstream_response_unsafe, got %d %q %q %s", r.Status, r.source(), r.code(), r.Body)
			}
			if strings.Contains(g.Logs(), operatorKey) {
				t.Errorf("the operator key reached the log:\n%s", g.Logs())
			}
		})
	}
}
