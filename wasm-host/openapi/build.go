// Package openapi generates the gateway's OpenAPI 3.1 document
// (schema/openapi.json) from the contract data: the route table gives the
// operations, their credentials and body limits, the error table gives
// every code its status. What the data does not hold — the body schemas
// and which codes each route can answer — is written here, once, as
// tables.
//
// Both hosts serve the committed file at GET /openapi.json (the wazero host
// embeds it through package schema; the Workers front gets it from the
// generator). A test regenerates it and fails when the committed file is
// stale: `go test ./wasm-host/openapi -update` rewrites it.
package openapi

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Version is the document's info.version: the contract snapshot it
// describes (spec §9.3).
const Version = "vendor-2026-09-18"

// op describes what the route table does not: one operation's summary,
// request, success answers and the codes it can fail with.
type op struct {
	summary, description string
	request              string   // component schema of the JSON body; "" for none
	params               []string // component parameters
	success              map[int]answer
	codes                [][]string // groups of error codes, besides hostCodes
	origin               bool       // needs Origin equal to SERVICE_ORIGIN
	upstream             bool       // may forward an upstream's error (spec §7 rule 1)
	decision             bool       // carries the decision headers of spec §4.8
	headers              []string   // header components on every answer, failures included
}

// answer is one success response.
type answer struct {
	description, schema string // schema "" : no body
	headers             []string
}

// Code groups, by the part of the platform that answers them
// (schema/errors.md).
var (
	// hostCodes can come from the host of any routed request.
	hostCodes = []string{"invalid_body", "body_timeout", "internal_error", "function_unavailable", "overloaded", "function_timeout", "misconfigured"}
	// pathless codes answer requests no operation takes.
	pathless   = []string{"not_found", "method_not_allowed"}
	validation = []string{"body_too_large", "invalid_json", "json_too_deep", "number_out_of_range", "duplicate_key",
		"body_not_object", "invalid_model", "missing_state", "invalid_state", "invalid_questions", "too_many_questions",
		"invalid_question_name", "invalid_question", "invalid_question_type", "invalid_instructions", "invalid_criteria",
		"too_many_options", "invalid_option_name", "too_many_levels"}
	apiKeyCodes  = []string{"missing_api_key", "invalid_api_key", "auth_rate_limited", "ledger_unavailable"}
	sessionCodes = []string{"bearer_not_accepted", "session_required", "ledger_unavailable"}
	originCodes  = []string{"origin_not_allowed"}
	fetchCodes   = []string{"upstream_not_configured", "upstream_timeout", "upstream_unavailable", "upstream_response_too_large",
		"upstream_response_unsafe", "upstream_invalid_response", "provider_busy", "upstream_rejected_request",
		"upstream_auth_failed", "upstream_not_found", "upstream_error"}
	decisionCodes = []string{"unsupported_media_type", "invalid_idempotency_key", "rate_limit_exceeded", "insufficient_credits",
		"request_in_progress", "idempotency_conflict", "idempotency_failed", "request_reconciliation_pending",
		"invalid_upstream_answer", "unsupported_extension_field", "unsupported_model"}
)

var decisionOK = map[int]answer{200: {"The upstream's answer, validated (spec §2.3). A replay carries X-Idempotency-Replayed: true and X-Service-Credits: 0.", "DecisionResponse", nil}}

// ops is every operation, keyed by "METHOD pattern" of the route table.
var ops = map[string]op{
	"POST /v1/service": {
		summary: "Evaluate questions against one state", request: "DecisionRequest",
		description: "Charges questions × ceil(bytes / 4096) credits, refunded on failure (spec §8). Send a new Idempotency-Key per logical operation and the same key and body to recover an uncertain result (spec §3.1).",
		params:      []string{"IdempotencyKey", "GatewayVersion"}, success: decisionOK,
		codes: [][]string{validation, apiKeyCodes, decisionCodes, fetchCodes}, upstream: true, decision: true,
	},
	"GET /v1/models": {
		summary:     "List the upstream's models",
		description: "Vendor: the upstream's list as sent; edge: the platform catalog (one model, vendor/model); router: 501. Not an allowlist (spec §4.2).",
		params:      []string{"GatewayVersion"},
		success:     map[int]answer{200: {"The model list.", "ModelList", nil}},
		codes:       [][]string{apiKeyCodes, {"rate_limit_exceeded", "model_listing_not_supported"}, fetchCodes}, upstream: true,
		headers: modelsHeaders,
	},
	"GET /api/service/config": {
		summary: "Public configuration", params: []string{"GatewayVersion"},
		success: map[int]answer{200: {"The deployment's public configuration (spec §2.8); no credentials.", "Config", nil}},
	},
	"GET /api/service/keys": {
		summary: "List the account's active keys", params: []string{"GatewayVersion"},
		success: map[int]answer{200: {"Active keys, newest first; never a secret.", "KeyList", nil}},
		codes:   [][]string{sessionCodes},
	},
	"POST /api/service/keys": {
		summary: "Create an API key", request: "KeyCreate", params: []string{"GatewayVersion"}, origin: true,
		success: map[int]answer{201: {"The new key; the only answer that holds its secret.", "CreatedKey", nil}},
		codes:   [][]string{sessionCodes, originCodes, {"body_too_large", "invalid_request", "invalid_key_name", "key_limit_reached", "key_creation_rate_limited"}},
	},
	"DELETE /api/service/keys/:id": {
		summary: "Revoke an API key", params: []string{"KeyID", "GatewayVersion"}, origin: true,
		success: map[int]answer{200: {"The key is revoked and fails authentication from the next request on.", "RevokedKey", nil}},
		codes:   [][]string{sessionCodes, originCodes, {"key_not_found"}},
	},
	"GET /api/service/usage": {
		summary: "Balance and usage of the latest 30 UTC days", params: []string{"GatewayVersion"},
		success: map[int]answer{200: {"The usage summary (schema/usage.md).", "Usage", nil}},
		codes:   [][]string{sessionCodes},
	},
	"POST /api/service/playground": {
		summary: "A decision from the console", request: "DecisionRequest", origin: true,
		description: "Answers exactly as POST /v1/service (validation, upstream, limits, rate counter, credits, headers), with the session instead of an API key.",
		params:      []string{"IdempotencyKey", "GatewayVersion"}, success: decisionOK,
		codes: [][]string{sessionCodes, originCodes, validation, decisionCodes, fetchCodes}, upstream: true, decision: true,
	},
	"POST /api/service/auth/signin": {
		summary: "Mail a single-use sign-in link", request: "SignIn", params: []string{"GatewayVersion"}, origin: true,
		description: "The same answer for every valid address, known or not (schema/console.md).",
		success:     map[int]answer{202: {"The link is sent; it is valid for expiresIn seconds.", "SignInSent", nil}},
		codes:       [][]string{originCodes, {"body_too_large", "invalid_request", "invalid_email", "signin_rate_limited", "mail_not_configured", "mail_failed", "ledger_unavailable"}},
	},
	"GET /api/service/auth/verify": {
		summary: "Open a sign-in link of the earlier form", params: []string{"SignInToken", "GatewayVersion"},
		description: "Spends nothing: a redirect to the console with the token in the fragment (/#signin=…, what mails carry now), or to /?signin=invalid for a malformed token. The console spends it with POST (schema/console.md).",
		success:     map[int]answer{303: {"To the console.", "", []string{"Location", "ReferrerPolicy"}}},
	},
	"POST /api/service/auth/verify": {
		summary: "Spend a sign-in link", request: "SignInVerify", params: []string{"GatewayVersion"}, origin: true,
		description: "What the console does with the token of the link it was opened on: signs the link's address in, once (schema/console.md).",
		success:     map[int]answer{200: {"Signed in; welcome is the credits this first verification granted (0 after it).", "SignedIn", []string{"SetCookie"}}},
		codes:       [][]string{originCodes, {"body_too_large", "invalid_request", "signin_link_invalid", "ledger_unavailable"}},
	},
	"POST /api/service/auth/signout": {
		summary: "End the session", params: []string{"GatewayVersion"}, origin: true,
		success: map[int]answer{200: {"The session is ended and the cookie cleared.", "SignedOut", []string{"SetCookie"}}},
		codes:   [][]string{originCodes, {"ledger_unavailable"}},
	},
	"GET /api/service/auth/session": {
		summary: "Who is signed in", params: []string{"GatewayVersion"},
		success: map[int]answer{200: {"signedIn false without a live session: not an error.", "SessionInfo", nil}},
		codes:   [][]string{{"bearer_not_accepted", "ledger_unavailable"}},
	},
}

// hostPaths are the host's own routes, outside the route table.
var hostPaths = map[string]op{
	"GET /healthz": {summary: "Liveness", success: map[int]answer{200: {"The host serves HTTP.", "Health", nil}}},
	"GET /readyz": {summary: "Readiness", success: map[int]answer{
		200: {"The host can serve decisions.", "Readiness", nil},
		503: {"What is not ready.", "Readiness", nil},
	}},
	"GET /openapi.json": {summary: "This document", success: map[int]answer{200: {"The OpenAPI document.", "Document", []string{"AccessControlAllowOrigin"}}}},
}

// Build returns the document for src, indented, with a final newline.
func Build(src Source) ([]byte, error) {
	codes := map[string]ErrorCode{}
	for _, e := range src.Errors {
		codes[e.Code] = e
	}
	b := builder{codes: codes}
	paths := map[string]map[string]any{}
	add := func(key string, o op, r *Route) error {
		method, pattern, _ := strings.Cut(key, " ")
		item, path := paths[openPath(pattern)], openPath(pattern)
		if item == nil {
			item = map[string]any{}
			paths[path] = item
		}
		operation, err := b.operation(method, pattern, o, r)
		item[strings.ToLower(method)] = operation
		return err
	}
	for i := range src.Routes {
		r := &src.Routes[i]
		key := r.Method + " " + r.Pattern
		o, ok := ops[key]
		if !ok {
			return nil, fmt.Errorf("route %s has no operation in wasm-host/openapi", key)
		}
		if err := add(key, o, r); err != nil {
			return nil, err
		}
	}
	for key, o := range hostPaths {
		if err := add(key, o, nil); err != nil {
			return nil, err
		}
	}
	for _, c := range pathless {
		if err := b.need(c); err != nil {
			return nil, err
		}
	}
	doc := map[string]any{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
		"info": map[string]any{
			"title":   "Decision Gateway",
			"version": Version,
			"summary": "Structured decisions behind accounts, API keys, prepaid credits, rate limits and idempotency.",
			"description": "Generated from the route table and the error codes (wasm-host/openapi); do not edit schema/openapi.json by hand. " +
				"Every platform error has the body {\"error\":{\"code\",\"message\"}} and the headers X-Service-Error-Source: platform and X-Service-Error-Code; " +
				"errors forwarded from the upstream keep its status and body and carry X-Service-Error-Source: upstream. " +
				"Classify by X-Service-Error-Code and X-Service-Error-Source, never by message text (spec §7). " +
				"x-error-codes lists every code with its status; idempotency_expired (410), named by the spec, is never sent: a key past its retention starts a new, billed operation (schema/errors.md).",
		},
		"servers": []any{map[string]any{"url": "/", "description": "The gateway's origin; the decision paths include /v1."}},
		"paths":   paths,
		"components": map[string]any{
			"securitySchemes": securitySchemes,
			"schemas":         b.schemas(src.Errors),
			"parameters":      parameters,
			"headers":         headers,
		},
		"x-error-codes": errorTable(src.Errors),
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	return append(out, '\n'), err
}

type builder struct{ codes map[string]ErrorCode }

func (b builder) need(code string) error {
	if _, ok := b.codes[code]; !ok {
		return fmt.Errorf("code %s is not in the error table", code)
	}
	return nil
}

// openPath turns a route pattern's :name segments into {name}.
func openPath(pattern string) string {
	segs := strings.Split(pattern, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, ":") {
			segs[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(segs, "/")
}

func ref(kind, name string) map[string]any {
	return map[string]any{"$ref": "#/components/" + kind + "/" + name}
}

func (b builder) operation(method, pattern string, o op, r *Route) (map[string]any, error) {
	id := strings.ToLower(method) + strings.NewReplacer("/", "_", ":", "", ".", "_").Replace(pattern)
	out := map[string]any{"operationId": strings.Trim(id, "_"), "summary": o.summary, "security": []any{}}
	if o.description != "" {
		out["description"] = o.description
	}
	var params []any
	for _, p := range o.params {
		params = append(params, ref("parameters", p))
	}
	if o.origin {
		params = append(params, ref("parameters", "Origin"))
	}
	if len(params) > 0 {
		out["parameters"] = params
	}
	if r != nil {
		out["x-function"] = r.Function
		switch r.Auth {
		case APIKey:
			out["security"] = []any{map[string]any{"apiKey": []any{}}}
		case Session:
			out["security"] = []any{map[string]any{"session": []any{}}}
		}
	}
	if o.request != "" {
		body := map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": ref("schemas", o.request)}}}
		if r != nil && r.MaxBody > 0 {
			body["x-max-body-bytes"] = r.MaxBody
		}
		out["requestBody"] = body
	}
	responses := map[string]any{}
	for status, a := range o.success {
		responses[strconv.Itoa(status)] = b.success(a, o, r != nil)
	}
	var all []string
	if r != nil {
		all = append(all, hostCodes...)
	}
	for _, g := range o.codes {
		all = append(all, g...)
	}
	byStatus := map[int][]string{}
	var forwarded []string
	for _, c := range all {
		if err := b.need(c); err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, pattern, err)
		}
		e := b.codes[c]
		if e.Status != 0 && !slices.Contains(byStatus[e.Status], c) {
			byStatus[e.Status] = append(byStatus[e.Status], c)
		}
		if e.Forwarded && o.upstream && !slices.Contains(forwarded, c) {
			forwarded = append(forwarded, c)
		}
	}
	for status, cs := range byStatus {
		if _, taken := responses[strconv.Itoa(status)]; taken {
			return nil, fmt.Errorf("%s %s: status %d is both a success and an error", method, pattern, status)
		}
		// A status may also carry an upstream's error on a route that
		// reaches the upstream, under the code of that status.
		at, err := forwardedAt(forwarded, status)
		if err != nil {
			return nil, err
		}
		f := b.failure(union(cs, at), o)
		if status == 401 && r != nil && r.Auth == APIKey {
			f["headers"].(map[string]any)[headerNames["WWWAuthenticate"]] = ref("headers", "WWWAuthenticate")
		}
		responses[strconv.Itoa(status)] = f
	}
	// The other statuses an upstream may answer with, by class.
	for _, class := range []int{4, 5} {
		var cs []string
		for status := class * 100; status < class*100+100 && len(forwarded) > 0; status++ {
			if _, listed := responses[strconv.Itoa(status)]; listed {
				continue
			}
			at, err := forwardedAt(forwarded, status)
			if err != nil {
				return nil, err
			}
			cs = union(cs, at)
		}
		if len(cs) > 0 {
			responses[strconv.Itoa(class)+"XX"] = b.failure(cs, o)
		}
	}
	out["responses"] = responses
	return out, nil
}

// forwardedStatuses are the statuses an upstream's error can be answered
// with under each forwarded code (shared/upstream's upstreamErrorCode,
// schema/errors.md); upstream_error takes every other 4xx and 5xx.
var forwardedStatuses = map[string][]int{
	"provider_busy":             {429, 503, 529},
	"upstream_rejected_request": {400, 422},
	"upstream_auth_failed":      {401, 403},
	"upstream_not_found":        {404},
	"upstream_timeout":          {408, 504},
}

// forwardedAt returns the codes of forwarded that an answer of status can
// carry.
func forwardedAt(forwarded []string, status int) ([]string, error) {
	var out []string
	for _, c := range forwarded {
		at, known := forwardedStatuses[c]
		switch {
		case c == "upstream_error":
			other := true
			for _, at := range forwardedStatuses {
				other = other && !slices.Contains(at, status)
			}
			if other {
				out = append(out, c)
			}
		case !known:
			return nil, fmt.Errorf("forwarded code %s has no statuses in forwardedStatuses", c)
		case slices.Contains(at, status):
			out = append(out, c)
		}
	}
	return out, nil
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, c := range b {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// common are the headers every answer of a routed request carries.
func common(routed bool) map[string]any {
	h := map[string]any{"X-Request-Id": ref("headers", "XRequestId"), "Cache-Control": ref("headers", "CacheControl")}
	if routed {
		h["X-Function-Version"] = ref("headers", "XFunctionVersion")
	}
	return h
}

func (b builder) success(a answer, o op, routed bool) map[string]any {
	h := common(routed)
	names := a.headers
	if o.decision {
		names = decisionHeaders
	}
	for _, n := range append(slices.Clone(names), o.headers...) {
		h[headerNames[n]] = ref("headers", n)
	}
	out := map[string]any{"description": a.description, "headers": h}
	if a.schema != "" {
		out["content"] = map[string]any{"application/json": map[string]any{"schema": ref("schemas", a.schema)}}
	}
	return out
}

func (b builder) failure(codes []string, o op) map[string]any {
	sort.Strings(codes)
	var desc []string
	for _, c := range codes {
		desc = append(desc, "`"+c+"`")
	}
	source := map[string]any{"description": "platform: a local or replaced error; upstream: the upstream's own error, forwarded.", "schema": map[string]any{"type": "string", "enum": []any{"platform", "upstream"}}, "required": true}
	body := map[string]any{"$ref": "#/components/schemas/PlatformError"}
	if !o.upstream {
		source["schema"] = map[string]any{"const": "platform"}
	} else {
		body = map[string]any{"anyOf": []any{body, ref("schemas", "UpstreamError")}}
	}
	h := common(true)
	h["X-Service-Error-Source"] = source
	h["X-Service-Error-Code"] = map[string]any{"description": "The error's stable code.", "required": true, "schema": map[string]any{"type": "string", "enum": codes}}
	h["Retry-After"] = ref("headers", "RetryAfter")
	extra := o.headers
	if o.decision {
		extra = decisionHeaders
	}
	for _, n := range extra {
		if _, set := h[headerNames[n]]; !set {
			h[headerNames[n]] = ref("headers", n)
		}
	}
	return map[string]any{
		"description": "One of: " + strings.Join(desc, ", ") + ".",
		"headers":     h,
		"content":     map[string]any{"application/json": map[string]any{"schema": body}},
	}
}

// errorTable is every code with its status, as x-error-codes.
func errorTable(errs []ErrorCode) []any {
	var out []any
	for _, e := range errs {
		row := map[string]any{"code": e.Code, "meaning": e.Meaning}
		if e.Status != 0 {
			row["status"] = e.Status
		} else {
			row["status"] = "upstream"
		}
		if e.Forwarded {
			row["forwarded"] = true
		}
		out = append(out, row)
	}
	return out
}
