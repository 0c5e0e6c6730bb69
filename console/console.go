// Package console is the browser console's static assets (sign-in, API
// keys, usage, playground), embedded so the wazero host serves them with no
// files beside it, and kept as plain files under static/ so a Workers
// deployment can publish the same folder as static assets.
package console

import (
	"embed"
	"net/http"
	"path"
	"strings"

	"decisiongateway/shared/contract"
	"decisiongateway/shared/policy"
)

//go:embed static
var files embed.FS

// ContentSecurityPolicy allows the console's own scripts, styles and API
// calls and nothing else: no inline script or style (all server data is
// written as text, so an injected string cannot run), no image but the
// data: favicon, no framing (clickjacking of the Revoke button), no form
// navigation (script handles every form; without it, the sign-in form
// must not put the typed address in a URL).
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src data:; " +
	"connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"

var types = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
}

// Handler serves the console: / is the page, /<file> its assets. Every
// answer carries Cache-Control: no-store (a deployment's console always
// matches its API) and the security headers above; an unknown path is the
// platform's 404 not_found, as for any unrouted request.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
		if name == "" {
			name = "index.html"
		}
		data, err := files.ReadFile("static/" + name)
		typ, known := types[path.Ext(name)]
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		if err != nil || !known {
			resp := policy.Error(contract.NotFound, "no such route")
			for _, f := range resp.Headers {
				h.Set(f.Name, f.Value)
			}
			w.WriteHeader(resp.Status)
			w.Write(resp.Body)
			return
		}
		h.Set("Content-Type", typ)
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		w.WriteHeader(200)
		if r.Method != http.MethodHead {
			w.Write(data)
		}
	})
}
