// Package routes is the route table: which function module serves which
// method and path. It is data, read by the wazero host and printed by
// `gateway routes` for the Workers configuration generator, so the two hosts
// never keep their own copies.
package routes

import "strings"

// Route maps one method and path pattern to a function. A pattern segment
// starting with ':' matches any one non-empty segment.
type Route struct {
	Method   string `json:"method"`
	Pattern  string `json:"pattern"`
	Function string `json:"function"`
	// MaxBody is the largest request body the host reads for this route;
	// a larger one is refused before any function runs.
	MaxBody int64 `json:"maxBody"`
}

// Table is every route the gateway serves.
// A route whose module is not built answers 503 function_unavailable.
var Table = []Route{
	{"POST", "/v1/service", "decide", DecisionBodyLimit},
	{"GET", "/v1/models", "models", 0},
	{"GET", "/api/service/config", "config", 0},
	{"GET", "/api/service/keys", "keys", 0},
	{"POST", "/api/service/keys", "keys", 4096},
	{"DELETE", "/api/service/keys/:id", "keys", 0},
	{"GET", "/api/service/usage", "usage", 0},
	{"POST", "/api/service/playground", "playground", DecisionBodyLimit},
	{"POST", "/api/service/auth/signin", "auth", 4096},
	{"GET", "/api/service/auth/verify", "auth", 0},
	{"POST", "/api/service/auth/signout", "auth", 0},
	{"GET", "/api/service/auth/session", "auth", 0},
}

// DecisionBodyLimit is the raw body limit of decision requests (spec §8).
// The host refuses a larger body with 413 body_too_large before any
// function runs, so it costs nothing.
const DecisionBodyLimit = 65536

// Match finds the route for method and path. When the path matches some
// route but not the method, it returns nil and the methods that would match,
// for a 405 with Allow.
func Match(table []Route, method, path string) (*Route, []string) {
	var allow []string
	for i := range table {
		r := &table[i]
		if !matchPath(r.Pattern, path) {
			continue
		}
		if r.Method == method || (method == "HEAD" && r.Method == "GET") {
			return r, nil
		}
		allow = append(allow, r.Method)
	}
	return nil, allow
}

// Param returns the path segment at the position of :name in pattern.
func Param(pattern, path, name string) string {
	ps, qs := strings.Split(pattern, "/"), strings.Split(path, "/")
	for i, p := range ps {
		if p == ":"+name && i < len(qs) {
			return qs[i]
		}
	}
	return ""
}

func matchPath(pattern, path string) bool {
	for {
		pi, qi := strings.IndexByte(pattern, '/'), strings.IndexByte(path, '/')
		ps, qs := pattern, path
		if pi >= 0 {
			ps = pattern[:pi]
		}
		if qi >= 0 {
			qs = path[:qi]
		}
		if !(ps == qs || (strings.HasPrefix(ps, ":") && qs != "")) {
			return false
		}
		if pi < 0 || qi < 0 {
			return pi < 0 && qi < 0
		}
		pattern, path = pattern[pi+1:], path[qi+1:]
	}
}
