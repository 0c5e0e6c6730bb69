// Package routes matches requests against the route table, which is data
// in shared/contract: read by the wazero host and printed by `gateway
// routes` for the Workers configuration generator, so the two hosts never
// keep their own copies.
package routes

import (
	"slices"
	"strings"

	"decisiongateway/shared/contract"
)

// Route maps one method and path pattern to a function (contract.Route).
type Route = contract.Route

// Table is every route the gateway serves: the shared contract's table.
var Table = contract.Routes

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

// Functions lists the functions table's routes run, each once, in the
// order of their first route: the order a host loads their modules in, the
// decision's first.
func Functions(table []Route) []string {
	var out []string
	for _, r := range table {
		if !slices.Contains(out, r.Function) {
			out = append(out, r.Function)
		}
	}
	return out
}
