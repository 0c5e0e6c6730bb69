package openapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"decisiongateway/schema"
	"decisiongateway/wasm-host/openapi/check"
)

var update = flag.Bool("update", false, "rewrite schema/openapi.json")

const committed = "../../schema/openapi.json"

func generate(t *testing.T) (Source, []byte) {
	t.Helper()
	src := FromContract()
	doc, err := Build(src)
	if err != nil {
		t.Fatal(err)
	}
	return src, doc
}

// The committed document is what the generator makes of the contract data
// now: a route or code added without regenerating fails here.
func TestCommittedDocumentIsCurrent(t *testing.T) {
	_, doc := generate(t)
	if *update {
		if err := os.WriteFile(committed, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(doc, schema.OpenAPI) {
		t.Fatal("schema/openapi.json is stale: run `go test ./wasm-host/openapi -update`")
	}
}

// The document passes a real OpenAPI 3.1 validator (the official schema of
// the specification, through libopenapi-validator).
func TestDocumentIsValidOpenAPI31(t *testing.T) {
	_, doc := generate(t)
	if _, err := check.New(doc); err != nil {
		t.Fatal(err)
	}
}

type document struct {
	Paths map[string]map[string]struct {
		XFunction string           `json:"x-function"`
		Security  []map[string]any `json:"security"`
		Responses map[string]struct {
			Headers map[string]struct {
				Schema struct {
					Enum []string `json:"enum"`
				} `json:"schema"`
			} `json:"headers"`
		} `json:"responses"`
	} `json:"paths"`
	Components struct {
		Schemas map[string]struct {
			Enum []string `json:"enum"`
		} `json:"schemas"`
	} `json:"components"`
	ErrorCodes []struct {
		Code   string `json:"code"`
		Status any    `json:"status"`
	} `json:"x-error-codes"`
}

func parse(t *testing.T, doc []byte) document {
	t.Helper()
	var d document
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// Every route of the route table is an operation with its function and
// credential.
func TestEveryRouteIsDocumented(t *testing.T) {
	src, doc := generate(t)
	d := parse(t, doc)
	want := map[Auth]string{APIKey: "apiKey", Session: "session"}
	for _, r := range src.Routes {
		o, ok := d.Paths[openPath(r.Pattern)][strings.ToLower(r.Method)]
		if !ok {
			t.Errorf("%s %s is not in the document", r.Method, r.Pattern)
			continue
		}
		if o.XFunction != r.Function {
			t.Errorf("%s %s: x-function %q, want %q", r.Method, r.Pattern, o.XFunction, r.Function)
		}
		var got string
		for _, s := range o.Security {
			for name := range s {
				got = name
			}
		}
		if got != want[r.Auth] {
			t.Errorf("%s %s: security %q, want %q", r.Method, r.Pattern, got, want[r.Auth])
		}
	}
}

// Every error code appears with its status: in x-error-codes, in the
// ErrorCode enum, and as X-Service-Error-Code of an operation's response
// of that status (a forwarded code: of some response), except the codes
// that answer requests no operation takes.
func TestEveryErrorCodeIsDocumentedWithItsStatus(t *testing.T) {
	src, doc := generate(t)
	d := parse(t, doc)
	answered := map[string][]string{} // code → statuses it is documented under
	for _, item := range d.Paths {
		for _, o := range item {
			for status, resp := range o.Responses {
				for _, c := range resp.Headers["X-Service-Error-Code"].Schema.Enum {
					answered[c] = append(answered[c], status)
				}
			}
		}
	}
	table := map[string]any{}
	for _, e := range d.ErrorCodes {
		table[e.Code] = e.Status
	}
	enum := d.Components.Schemas["ErrorCode"].Enum
	for _, e := range src.Errors {
		status := strconv.Itoa(e.Status)
		if e.Status == 0 {
			status = "upstream"
		}
		if got := table[e.Code]; got == nil || strconv.Quote(status) != mustJSON(t, got) && status != mustJSON(t, got) {
			t.Errorf("x-error-codes: %s has status %v, want %s", e.Code, got, status)
		}
		if !slices.Contains(enum, e.Code) {
			t.Errorf("ErrorCode enum lacks %s", e.Code)
		}
		if slices.Contains(pathless, e.Code) {
			continue
		}
		switch {
		case len(answered[e.Code]) == 0:
			t.Errorf("%s is answered by no operation", e.Code)
		case e.Status != 0 && !slices.Contains(answered[e.Code], strconv.Itoa(e.Status)):
			t.Errorf("%s is documented under %v, not its status %d", e.Code, answered[e.Code], e.Status)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every header of spec §4.8 is on the decision routes' answers.
func TestDecisionHeadersOfSpec48(t *testing.T) {
	_, doc := generate(t)
	d := parse(t, doc)
	spec := []string{"X-Request-Id", "X-Upstream-Request-Id", "X-Vendor-Request-Id", "X-Service-Credits",
		"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-Upstream-RateLimit-Limit",
		"X-Upstream-RateLimit-Remaining", "X-Upstream-RateLimit-Reset", "Retry-After", "X-Idempotency-Replayed",
		"X-Service-Response-Mode", "X-Service-Error-Source", "X-Service-Error-Code"}
	for _, path := range []string{"/v1/service", "/api/service/playground"} {
		var seen []string
		for _, resp := range d.Paths[path]["post"].Responses {
			for h := range resp.Headers {
				seen = append(seen, h)
			}
		}
		for _, h := range spec {
			if !slices.Contains(seen, h) {
				t.Errorf("POST %s: no response documents %s", path, h)
			}
		}
	}
}

// The validator is not a rubber stamp: a document that breaks the OpenAPI
// 3.1 schema is refused.
func TestValidatorRefusesABrokenDocument(t *testing.T) {
	_, doc := generate(t)
	broken := bytes.Replace(doc, []byte(`"scheme": "bearer"`), []byte(`"scheme": 7`), 1)
	if bytes.Equal(broken, doc) {
		t.Fatal("the mutation found nothing to change")
	}
	if _, err := check.New(broken); err == nil {
		t.Fatal("a security scheme with a numeric scheme was accepted")
	}
}
