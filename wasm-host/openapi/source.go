package openapi

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"decisiongateway/wasm-host/routes"
)

// Source is the contract data the document is generated from: the route
// table and the error codes. It has the shape of shared/contract's Routes
// and Errors, so taking it from there is a change of FromMain alone.
type Source struct {
	Routes []Route
	Errors []ErrorCode
}

// Route is one row of the route table.
type Route struct {
	Method, Pattern, Function string
	Auth                      Auth
	MaxBody                   int64
}

// Auth is the credential a route asks for.
type Auth string

// The route credentials (shared/contract.Auth).
const (
	Public  Auth = "public"
	APIKey  Auth = "api_key"
	Session Auth = "session"
)

// ErrorCode is one platform error code.
type ErrorCode struct {
	Code string
	// Status is the HTTP status the platform answers it with; 0 when it is
	// only ever sent with the upstream's status.
	Status int
	// Forwarded: the code also classifies an upstream's error, which keeps
	// the upstream's status and body (spec §7 rule 1).
	Forwarded bool
	Meaning   string
}

// routeAuth says which credential each route takes, by path prefix: the
// wazero route table of main does not say it (shared/contract will).
var routeAuth = []struct {
	prefix string
	auth   Auth
}{
	{"/v1/", APIKey},
	{"/api/service/config", Public},
	{"/api/service/auth/signin", Public},
	{"/api/service/auth/verify", Public},
	{"/api/service/", Session},
}

// FromMain builds the source from the wazero host's route table and the
// code tables of schema/errors.md (its text, passed by the caller).
func FromMain(errorsMD []byte) (Source, error) {
	var src Source
	for _, r := range routes.Table {
		route := Route{Method: r.Method, Pattern: r.Pattern, Function: r.Function, MaxBody: r.MaxBody}
		for _, a := range routeAuth {
			if strings.HasPrefix(r.Pattern, a.prefix) {
				route.Auth = a.auth
				break
			}
		}
		if route.Auth == "" {
			return src, fmt.Errorf("no credential known for %s %s", r.Method, r.Pattern)
		}
		src.Routes = append(src.Routes, route)
	}
	errs, err := parseErrorTables(errorsMD)
	src.Errors = errs
	return src, err
}

var codeCell = regexp.MustCompile("^`([a-z_]+)`$")

// parseErrorTables reads every Markdown table of schema/errors.md that has
// a status and a code column. A code in several tables keeps its first
// numeric status; it is forwarded when any row gives it the upstream's
// status or an upstream source.
func parseErrorTables(md []byte) ([]ErrorCode, error) {
	var out []ErrorCode
	index := map[string]int{}
	var header []string
	sc := bufio.NewScanner(bytes.NewReader(md))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			header = nil
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if header == nil {
			header = cells
			continue
		}
		col := func(name string) string {
			for i, h := range header {
				if h == name && i < len(cells) {
					return cells[i]
				}
			}
			return ""
		}
		m := codeCell.FindStringSubmatch(col("code"))
		if m == nil {
			continue // the separator row, or "(as the decision path)"
		}
		status, forwarded := 0, strings.Contains(col("source"), "upstream")
		if s := col("status"); s == "upstream" {
			forwarded = true
		} else if n, err := strconv.Atoi(s); err == nil {
			status = n
		} else {
			return nil, fmt.Errorf("errors.md: code %s has status %q", m[1], s)
		}
		i, seen := index[m[1]]
		if !seen {
			index[m[1]] = len(out)
			out = append(out, ErrorCode{Code: m[1], Meaning: firstSentence(col("rule"))})
			i = len(out) - 1
		}
		if out[i].Status == 0 {
			out[i].Status = status
		}
		out[i].Forwarded = out[i].Forwarded || forwarded
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("errors.md: no error codes found")
	}
	return out, sc.Err()
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	return strings.ReplaceAll(s, "`", "")
}
