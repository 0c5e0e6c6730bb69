// Package check holds the OpenAPI document to what the hosts answer. It
// runs a real validator (github.com/pb33f/libopenapi-validator, OpenAPI 3.1
// and JSON Schema 2020-12) over the document itself and over every
// response of a documented operation, and is wired into the end-to-end
// hosts (testkit/hosttest), so every story those tests tell is also a
// check of the document. It is test support: the gateway binary does not
// link it.
package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"

	"decisiongateway/schema"
)

// Validator checks responses against one document.
type Validator struct {
	mu  sync.Mutex // the validator's caches are not documented as safe for concurrent use
	v   validator.Validator
	ops map[string][]string // method → path templates
	doc map[string]any      // the document, parsed
}

// New parses doc and checks it against the OpenAPI 3.1 schema.
func New(doc []byte) (*Validator, error) {
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, err
	}
	v, errs := validator.NewValidator(d, config.WithFormatAssertions())
	if len(errs) > 0 {
		return nil, fmt.Errorf("openapi: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("openapi document: %s", joined(verrs))
	}
	var parsed struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &parsed); err != nil {
		return nil, err
	}
	ops := map[string][]string{}
	for path, item := range parsed.Paths {
		for method := range item {
			ops[strings.ToUpper(method)] = append(ops[strings.ToUpper(method)], path)
		}
	}
	var raw map[string]any
	if err := json.Unmarshal(doc, &raw); err != nil {
		return nil, err
	}
	return &Validator{v: v, ops: ops, doc: raw}, nil
}

var (
	onceServed sync.Once
	served     *Validator
	servedErr  error
)

// Served is the validator of the document the hosts serve
// (schema/openapi.json), built once per test binary.
func Served() (*Validator, error) {
	onceServed.Do(func() { served, servedErr = New(schema.OpenAPI) })
	return served, servedErr
}

// Documented reports whether the document has an operation for method and
// path. HEAD is answered as GET by the hosts and not documented apart.
func (v *Validator) Documented(method, path string) bool {
	for _, tmpl := range v.ops[method] {
		if matches(tmpl, path) {
			return true
		}
	}
	return false
}

func matches(tmpl, path string) bool {
	ts, ps := strings.Split(tmpl, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return false
	}
	for i := range ts {
		if !(ts[i] == ps[i] || strings.HasPrefix(ts[i], "{") && ps[i] != "") {
			return false
		}
	}
	return true
}

// Response validates one answer to req: its status is documented for the
// operation, and its headers and body fit what the document says of it.
// An answer to a request no operation takes (the console's pages, HEAD)
// is not its business: nil.
func (v *Validator) Response(req *http.Request, status int, h http.Header, body []byte) error {
	if !v.Documented(req.Method, req.URL.Path) {
		return nil
	}
	r := &http.Request{Method: req.Method, URL: req.URL, Header: req.Header, Host: req.Host}
	resp := &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(bytes.NewReader(body)), Request: r}
	v.mu.Lock()
	ok, errs := v.v.ValidateHttpResponse(r, resp)
	v.mu.Unlock()
	if ok {
		return nil
	}
	return fmt.Errorf("%s %s → %d: %s\nbody: %.400s", req.Method, req.URL.Path, status, joined(errs), body)
}

// generic are headers any HTTP answer may carry, which the document does
// not list.
var generic = []string{"Content-Type", "Content-Length", "Date", "Connection", "Transfer-Encoding",
	"X-Content-Type-Options", "Strict-Transport-Security"}

// Undescribed returns the headers of an answer to method and path with
// status that the document's response for it does not describe, generic
// ones aside: what a reader of the document would not know to expect. The
// validator checks the headers described; this, that none is missing.
func (v *Validator) Undescribed(method, path string, status int, h http.Header) []string {
	var op map[string]any
	for _, tmpl := range v.ops[method] {
		if matches(tmpl, path) {
			op, _ = v.at("paths", tmpl, strings.ToLower(method)).(map[string]any)
		}
	}
	responses, _ := op["responses"].(map[string]any)
	resp, ok := responses[fmt.Sprint(status)]
	if !ok {
		resp = responses[fmt.Sprint(status/100)+"XX"]
	}
	described, _ := v.resolve(resp).(map[string]any)["headers"].(map[string]any)
	var out []string
	for name := range h {
		known := false
		for d := range described {
			known = known || http.CanonicalHeaderKey(d) == name
		}
		for _, g := range generic {
			known = known || g == name
		}
		if !known {
			out = append(out, name)
		}
	}
	return out
}

// at walks the parsed document.
func (v *Validator) at(keys ...string) any {
	var cur any = v.doc
	for _, k := range keys {
		m, _ := cur.(map[string]any)
		cur = m[k]
	}
	return cur
}

// resolve follows a local $ref.
func (v *Validator) resolve(x any) any {
	m, _ := x.(map[string]any)
	if r, ok := m["$ref"].(string); ok {
		return v.resolve(v.at(strings.Split(strings.TrimPrefix(r, "#/"), "/")...))
	}
	if m == nil {
		return map[string]any{}
	}
	return m
}

func joined[E error](errs []E) string {
	var parts []string
	for _, e := range errs {
		parts = append(parts, e.Error())
	}
	return strings.Join(parts, "; ")
}

// Middleware wraps a host's handler so that every answer to a documented
// operation is validated. Failures are reported as t's errors when t's
// cleanups run; register it before the server's cleanup, so that runs
// after every outstanding request (a decision outlives a client that hung
// up) has been answered and checked.
func Middleware(t testing.TB, next http.Handler) http.Handler {
	v, err := Served()
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		failures []string
		checked  int
	)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, f := range failures {
			t.Errorf("response does not match schema/openapi.json: %s", f)
		}
		t.Logf("openapi: %d responses validated against schema/openapi.json", checked)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !v.Documented(r.Method, r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		err := v.Response(r, rec.status, w.Header(), rec.body.Bytes())
		mu.Lock()
		defer mu.Unlock()
		checked++
		if err != nil {
			failures = append(failures, err.Error())
		}
	})
}

// recorder passes a response through and keeps a copy of its status and
// body.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body.Write(p)
	return r.ResponseWriter.Write(p)
}

// Flush keeps streaming working through the wrapper.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
