//go:build linux

package wranglercompat_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"decisiongateway/shared/contract"
	"decisiongateway/shared/policy"
	"decisiongateway/testkit/sqldtest"
	"decisiongateway/testkit/testenv"
)

// upstreamKey is given to both hosts as UPSTREAM_API_KEY. It must never
// appear in an answer: modules cannot read it, only the host's fetch adds it.
const upstreamKey = "sk-e2e-secret-must-not-leak"

// requestIDPattern is the format of X-Request-Id on both hosts.
var requestIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// e2eSettings are the deployment settings both hosts get. Every value differs
// from its default, so a setting one host ignored shows up in the body.
func e2eSettings(ledgerURL string) map[string]string {
	return map[string]string{
		"LIBSQL_URL":              ledgerURL,
		"UPSTREAM_KIND":           "vendor",
		"UPSTREAM_URL":            "http://127.0.0.1:9/v1", // never called by config
		"UPSTREAM_API_KEY":        upstreamKey,
		"SERVICE_DEFAULT_MODEL":   "e2e-model",
		"SERVICE_RATE_LIMIT":      "77",
		"SERVICE_WELCOME_CREDITS": "5",
		"SERVICE_DOCS_URL":        "https://docs.example.test/api",
	}
}

// wantConfig is the body GET /api/service/config must carry for
// e2eSettings with a reachable ledger, built from the Go constants the
// module itself uses.
func wantConfig() map[string]any {
	return map[string]any{
		"contract":     policy.Contract,
		"status":       "ready",
		"ready":        true,
		"defaultModel": "e2e-model",
		"upstream": map[string]any{
			"kind":         "vendor",
			"responseMode": "vendor-native",
			"emulator":     false,
		},
		"welcomeCredits":     float64(5),
		"billingAvailable":   true,
		"docsUrl":            "https://docs.example.test/api",
		"rateLimitPerMinute": float64(77),
		"limits": map[string]any{
			"bytes":         float64(policy.MaxBodyBytes),
			"questions":     float64(policy.MaxQuestions),
			"choiceOptions": float64(policy.MaxChoiceOptions),
			"scoreLevels":   float64(policy.MaxScoreLevels),
			"depth":         float64(policy.MaxDepth),
		},
	}
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, method, url string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return answer{resp.StatusCode, resp.Header, body}
}

// checkPlatformHeaders asserts what every response carries on every host.
func checkPlatformHeaders(t *testing.T, host string, a answer) {
	t.Helper()
	if got := a.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("%s: Cache-Control = %q, want no-store", host, got)
	}
	if got := a.header.Get("X-Request-Id"); !requestIDPattern.MatchString(got) {
		t.Errorf("%s: X-Request-Id = %q, want 32 lower-case hex digits", host, got)
	}
	if got := a.header.Get("Content-Type"); got != policy.JSONType {
		t.Errorf("%s: Content-Type = %q, want %q", host, got, policy.JSONType)
	}
	if got := a.header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options = %q, want nosniff", host, got)
	}
	if bytes.Contains(a.body, []byte(upstreamKey)) || strings.Contains(a.header.Get("Authorization"), upstreamKey) {
		t.Errorf("%s: the upstream key leaked into an answer", host)
	}
}

// checkPlatformError asserts a platform error answer: status, the error
// headers and the {"error":{"code","message"}} body.
func checkPlatformError(t *testing.T, host string, a answer, status int, code string) {
	t.Helper()
	checkPlatformHeaders(t, host, a)
	if a.status != status {
		t.Errorf("%s: status %d, want %d (body %s)", host, a.status, status, a.body)
	}
	if got := a.header.Get("X-Service-Error-Source"); got != policy.SourcePlatform {
		t.Errorf("%s: X-Service-Error-Source = %q, want platform", host, got)
	}
	if got := a.header.Get("X-Service-Error-Code"); got != code {
		t.Errorf("%s: X-Service-Error-Code = %q, want %q", host, got, code)
	}
	var body struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(a.body, &body); err != nil {
		t.Errorf("%s: error body %q is not JSON: %v", host, a.body, err)
	} else if body.Error.Code != code || body.Error.Message == "" {
		t.Errorf("%s: error body %s, want code %q and a message", host, a.body, code)
	}
}

// TestWorkerdServesConfigLikeWazeroHost runs the same config.wasm under both
// hosts, with the same settings against the same sqld, and checks that a
// client cannot tell them apart: same status and byte-identical body for
// GET /api/service/config (which reaches the ledger through a suspended
// import on workerd, so JSPI is exercised), the same platform errors for an
// unknown path and a wrong method, and the headers every response carries.
func TestWorkerdServesConfigLikeWazeroHost(t *testing.T) {
	testenv.Binary(t) // fail before the slow start when the reference is missing
	nodeBin(t)
	ledger := sqldtest.Start(t)
	settings := e2eSettings(ledger)

	hosts := []server{startGateway(t, settings), startWrangler(t, settings)}
	for _, h := range hosts {
		t.Logf("%s ready in %s", h.name, h.startup.Round(time.Millisecond))
	}

	t.Run("config", func(t *testing.T) {
		var answers []answer
		for _, h := range hosts {
			a := do(t, http.MethodGet, h.url+"/api/service/config")
			checkPlatformHeaders(t, h.name, a)
			if a.status != http.StatusOK {
				t.Fatalf("%s: status %d, want 200 (body %s)", h.name, a.status, a.body)
			}
			var got map[string]any
			if err := json.Unmarshal(a.body, &got); err != nil {
				t.Fatalf("%s: body %q is not JSON: %v", h.name, a.body, err)
			}
			if want := wantConfig(); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: body\n%s\nwant fields %v", h.name, a.body, want)
			}
			answers = append(answers, a)
		}
		if !bytes.Equal(answers[0].body, answers[1].body) {
			t.Errorf("bodies differ:\n%s: %s\n%s: %s", hosts[0].name, answers[0].body, hosts[1].name, answers[1].body)
		}
		// Both hosts name the module that served by the same content hash.
		v := answers[0].header.Get("X-Function-Version")
		if !strings.HasPrefix(v, "config@") || len(v) != len("config@")+12 || v != answers[1].header.Get("X-Function-Version") {
			t.Errorf("X-Function-Version: %s %q, %s %q; want the same config@<12 hex>", hosts[0].name, v, hosts[1].name, answers[1].header.Get("X-Function-Version"))
		}
		if answers[0].header.Get("X-Request-Id") == answers[1].header.Get("X-Request-Id") {
			t.Errorf("both hosts answered with request id %s", answers[0].header.Get("X-Request-Id"))
		}
	})

	errorCases := []struct {
		name, method, path string
		status             int
		code               contract.Code
	}{
		{"unknown path", http.MethodGet, "/api/service/no-such-route", http.StatusNotFound, contract.NotFound},
		{"wrong method", http.MethodPost, "/api/service/config", http.StatusMethodNotAllowed, contract.MethodNotAllowed},
	}
	for _, c := range errorCases {
		t.Run(c.name, func(t *testing.T) {
			var answers []answer
			for _, h := range hosts {
				a := do(t, c.method, h.url+c.path)
				checkPlatformError(t, h.name, a, c.status, string(c.code))
				answers = append(answers, a)
			}
			if !bytes.Equal(answers[0].body, answers[1].body) {
				t.Errorf("error bodies differ:\n%s: %s\n%s: %s", hosts[0].name, answers[0].body, hosts[1].name, answers[1].body)
			}
			if a, b := answers[0].header.Get("Allow"), answers[1].header.Get("Allow"); a != b {
				t.Errorf("Allow differs: %s %q, %s %q", hosts[0].name, a, hosts[1].name, b)
			}
			if c.status == http.StatusMethodNotAllowed && answers[0].header.Get("Allow") != "GET" {
				t.Errorf("Allow = %q, want GET", answers[0].header.Get("Allow"))
			}
		})
	}

	t.Run("HEAD is served by the GET route", func(t *testing.T) {
		for _, h := range hosts {
			a := do(t, http.MethodHead, h.url+"/api/service/config")
			checkPlatformHeaders(t, h.name, a)
			if a.status != http.StatusOK || len(a.body) != 0 {
				t.Errorf("%s: HEAD answered %d with %d body bytes, want 200 and none", h.name, a.status, len(a.body))
			}
		}
	})

	// Requests that overlap hold several instances at once, each suspended
	// in its ledger import on workerd; an instance entered twice would
	// corrupt its Go runtime and answer 500 or a wrong body.
	t.Run("concurrent requests", func(t *testing.T) {
		const n = 24
		for _, h := range hosts {
			bodies := make(chan answer, n)
			for range n {
				go func() {
					resp, err := http.Get(h.url + "/api/service/config")
					if err != nil {
						bodies <- answer{status: -1, body: []byte(err.Error())}
						return
					}
					defer resp.Body.Close()
					b, _ := io.ReadAll(resp.Body)
					bodies <- answer{status: resp.StatusCode, body: b}
				}()
			}
			want, _ := json.Marshal(wantConfig())
			for range n {
				a := <-bodies
				var got, exp any
				_ = json.Unmarshal(a.body, &got)
				_ = json.Unmarshal(want, &exp)
				if a.status != http.StatusOK || !reflect.DeepEqual(got, exp) {
					t.Errorf("%s: concurrent request answered %d %s", h.name, a.status, a.body)
				}
			}
		}
	})

	// Not an assertion: the numbers go to the log for the README.
	for _, h := range hosts {
		t.Logf("%s: GET /api/service/config median %s over 20 requests", h.name, medianLatency(t, h.url+"/api/service/config", 20))
	}
}

func medianLatency(t *testing.T, url string, n int) time.Duration {
	t.Helper()
	took := make([]time.Duration, n)
	for i := range took {
		start := time.Now()
		if a := do(t, http.MethodGet, url); a.status != http.StatusOK {
			t.Fatalf("GET %s: status %d", url, a.status)
		}
		took[i] = time.Since(start)
	}
	slices.Sort(took)
	return took[n/2].Round(10 * time.Microsecond)
}
