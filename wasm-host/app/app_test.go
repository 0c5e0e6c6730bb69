package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"decisiongateway/testkit/hosttest"
	"decisiongateway/testkit/sqldtest"
)

func startHost(t *testing.T, ledgerURL string, env map[string]string) *httptest.Server {
	t.Helper()
	env["LIBSQL_URL"] = ledgerURL
	return hosttest.Start(t, env).Server
}

var requestIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

func get(t *testing.T, method, url string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	data, _ := io.ReadAll(resp.Body)
	if len(data) > 0 {
		if err := json.Unmarshal(data, &body); err != nil {
			t.Fatalf("body %q: %v", data, err)
		}
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("%s %s: Cache-Control %q", method, url, resp.Header.Get("Cache-Control"))
	}
	if !requestIDPattern.MatchString(resp.Header.Get("X-Request-Id")) {
		t.Errorf("%s %s: X-Request-Id %q", method, url, resp.Header.Get("X-Request-Id"))
	}
	return resp, body
}

func TestConfigEndToEnd(t *testing.T) {
	for _, b := range sqldtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			srv := startHost(t, b.URL, map[string]string{
				"UPSTREAM_KIND": "vendor", "UPSTREAM_URL": "http://127.0.0.1:9/v1",
				"UPSTREAM_API_KEY": "sk-operator-secret", "SERVICE_WELCOME_CREDITS": "25",
				"SERVICE_DOCS_URL": "https://docs.example/decisions",
			})
			resp, body := get(t, "GET", srv.URL+"/api/service/config")
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			limits, _ := body["limits"].(map[string]any)
			want := map[string]any{"bytes": 65536.0, "questions": 32.0, "choiceOptions": 255.0, "scoreLevels": 10.0, "depth": 32.0}
			for k, v := range want {
				if limits[k] != v {
					t.Errorf("limits.%s = %v, want %v", k, limits[k], v)
				}
			}
			for k, v := range map[string]any{
				"contract": "vendor-2026-09-18", "status": "ready", "ready": true, "defaultModel": "model-latest",
				"welcomeCredits": 25.0, "docsUrl": "https://docs.example/decisions", "billingAvailable": true,
			} {
				if body[k] != v {
					t.Errorf("%s = %v, want %v", k, body[k], v)
				}
			}
			if up, _ := body["upstream"].(map[string]any); up["kind"] != "vendor" || up["responseMode"] != "vendor-native" {
				t.Errorf("upstream = %v", body["upstream"])
			}
		})
	}
}

func TestConfigNamesNoCredential(t *testing.T) {
	srv := startHost(t, "file:"+filepath.Join(t.TempDir(), "l.db"), map[string]string{
		"UPSTREAM_KIND": "vendor", "UPSTREAM_URL": "http://upstream.internal:9/v1", "UPSTREAM_API_KEY": "sk-operator-secret",
	})
	resp, err := http.Get(srv.URL + "/api/service/config")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, secret := range []string{"sk-operator-secret", "upstream.internal", "file:", "l.db"} {
		if strings.Contains(string(data), secret) {
			t.Errorf("config exposes %q: %s", secret, data)
		}
	}
}

func TestConfigWithoutUpstreamIsNotReady(t *testing.T) {
	srv := startHost(t, "file:"+filepath.Join(t.TempDir(), "l.db"), map[string]string{})
	_, body := get(t, "GET", srv.URL+"/api/service/config")
	if body["ready"] != false || body["status"] != "no_upstream" {
		t.Fatalf("body %v", body)
	}
}

func TestUnknownRouteAndWrongMethodArePlatformErrors(t *testing.T) {
	srv := startHost(t, "file:"+filepath.Join(t.TempDir(), "l.db"), map[string]string{})
	cases := []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/nope", 404, "not_found"},
		{"GET", "/api/service/config/extra", 404, "not_found"},
		{"POST", "/api/service/config", 405, "method_not_allowed"},
		{"DELETE", "/api/service/config", 405, "method_not_allowed"},
	}
	for _, c := range cases {
		resp, body := get(t, c.method, srv.URL+c.path)
		if resp.StatusCode != c.status || resp.Header.Get("X-Service-Error-Source") != "platform" || resp.Header.Get("X-Service-Error-Code") != c.code {
			t.Errorf("%s %s: %d %q %q", c.method, c.path, resp.StatusCode, resp.Header.Get("X-Service-Error-Source"), resp.Header.Get("X-Service-Error-Code"))
		}
		if e, _ := body["error"].(map[string]any); e["code"] != c.code {
			t.Errorf("%s %s: body %v", c.method, c.path, body)
		}
		if c.status == 405 && resp.Header.Get("Allow") != "GET" {
			t.Errorf("Allow = %q", resp.Header.Get("Allow"))
		}
	}
}

// A fresh host loads the decision module first and the others once it has
// answered a call: its first decision does not share the CPU with compiles
// of modules it does not use (startup.go).
func TestOtherModulesLoadAfterTheFirstAnswer(t *testing.T) {
	h := hosttest.Start(t, map[string]string{})
	fns := h.App.Functions
	waitFor := func(what string, ok func() bool) time.Time {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within a minute", what)
			}
		}
		return time.Now()
	}
	loaded := waitFor("decide loaded", fns["decide"].Loaded)
	early := map[string]bool{}
	for name, f := range fns {
		if name != "decide" && f.Loaded() {
			early[name] = true
		}
	}
	// Only meaningful well inside the one second warming waits for.
	if time.Since(loaded) < 500*time.Millisecond && len(early) > 0 {
		t.Fatalf("loaded before any answer: %v", early)
	}
	if resp, _ := get(t, "GET", h.URL+"/api/service/config"); resp.StatusCode != 200 {
		t.Fatalf("config: %d", resp.StatusCode)
	}
	waitFor("every module loaded", func() bool {
		for _, f := range fns {
			if !f.Loaded() {
				return false
			}
		}
		return true
	})
}

// A host whose console is served over https tells browsers to use https
// only (Strict-Transport-Security) on every answer; on an http origin
// (development) it does not.
func TestHTTPSOriginSendsStrictTransportSecurity(t *testing.T) {
	for origin, want := range map[string]string{"https://console.example": "max-age=31536000", "http://127.0.0.1:8787": ""} {
		h := hosttest.Start(t, map[string]string{"SERVICE_ORIGIN": origin})
		for _, path := range []string{"/", "/api/service/config", "/healthz", "/v1/nosuch"} {
			resp, err := http.Get(h.Server.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.Header.Get("Strict-Transport-Security"); got != want {
				t.Errorf("%s %s: Strict-Transport-Security %q, want %q", origin, path, got, want)
			}
		}
	}
}
