package console

import (
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"
)

func TestAssetsCarryNoStoreAndCSP(t *testing.T) {
	h := Handler()
	for path, typ := range map[string]string{"/": "text/html", "/console.js": "text/javascript", "/json.js": "text/javascript",
		"/answers.js": "text/javascript", "/chart.js": "text/javascript", "/snippets.js": "text/javascript", "/console.css": "text/css"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), typ) {
			t.Errorf("%s: %d %q", path, rec.Code, rec.Header().Get("Content-Type"))
		}
		if rec.Header().Get("Cache-Control") != "no-store" || !strings.Contains(rec.Header().Get("Content-Security-Policy"), "script-src 'self'") ||
			!strings.Contains(rec.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("%s: headers %v", path, rec.Header())
		}
	}
}

func TestUnknownPathIsPlatformNotFound(t *testing.T) {
	for _, path := range []string{"/nope", "/static/index.html", "/../go.mod", "/console.go"} {
		rec := httptest.NewRecorder()
		Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != 404 || rec.Header().Get("X-Service-Error-Code") != "not_found" || rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d %v", path, rec.Code, rec.Header())
		}
	}
}

// The page must work under its own CSP: no inline script, style or
// event-handler attribute.
func TestPageHasNothingInline(t *testing.T) {
	page, _ := files.ReadFile("static/index.html")
	for _, bad := range []string{"<script>", "style=", " onclick=", " onload=", "<style"} {
		if strings.Contains(string(page), bad) {
			t.Errorf("index.html contains %q", bad)
		}
	}
}

// The CSP allows only what the page uses: images are the data: favicon
// alone (no image file is served), and every form is handled by script,
// so none may navigate: a page whose script failed to load must not send
// a typed address to the server in a URL (GET /?email=…).
func TestCSPAllowsOnlyWhatThePageUses(t *testing.T) {
	got := map[string]string{}
	for _, d := range strings.Split(ContentSecurityPolicy, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		got[name] = value
	}
	for name, want := range map[string]string{"img-src": "data:", "form-action": "'none'", "script-src": "'self'", "style-src": "'self'", "connect-src": "'self'"} {
		if got[name] != want {
			t.Errorf("%s %q, want %q", name, got[name], want)
		}
	}
	entries, _ := files.ReadDir("static")
	for _, e := range entries {
		if _, known := types[path.Ext(e.Name())]; !known {
			t.Errorf("static/%s is not a type the handler serves", e.Name())
		}
	}
}
