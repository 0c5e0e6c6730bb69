package upstream

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/platform"
	"decisiongateway/shared/settings"
	"decisiongateway/shared/validate"
)

// recordingModel is the model binding as the edge adapter sees it through
// the ai import: it records every call and answers with reply.
type recordingModel struct {
	calls []abi.AIRequest
	reply func(r *abi.AIRequest) (abi.AIResponse, error)
}

func (m *recordingModel) Run(r *abi.AIRequest) (abi.AIResponse, error) {
	m.calls = append(m.calls, abi.AIRequest{Model: r.Model, Input: append([]byte(nil), r.Input...)})
	return m.reply(r)
}

// recordingTransport is the host's fetch as the router adapter sees it.
type recordingTransport struct {
	calls []abi.FetchRequest
	reply func(r *abi.FetchRequest) (abi.FetchResponse, error)
}

func (t *recordingTransport) Fetch(r *abi.FetchRequest) (abi.FetchResponse, error) {
	c := *r
	c.Body = append([]byte(nil), r.Body...)
	t.calls = append(t.calls, c)
	return t.reply(r)
}

// newCall validates body as the decision function would (with the
// validator's tree) and fills in the effective model from the deployment's
// settings.
func newCall(t *testing.T, kind, body string) *Call {
	t.Helper()
	v := &validate.Validator{}
	req, tree, verr := v.ValidateTree([]byte(body))
	if verr != nil {
		t.Fatalf("request does not validate: %v", verr)
	}
	model := settings.DefaultModelFor(kind)
	if req.HasModel {
		model = req.Model
	}
	return &Call{Body: []byte(body), Request: req, Model: model, Validator: v, Tree: tree}
}

// TestConvertedRequestIsTheSameFromTheTree: the converting adapters build
// the same upstream request from the validator's tree as from the body's
// text, which is what they parse when a call is resumed. The validator
// decodes the strings it reads, so escapes may be written differently:
// the two requests are compared by what they mean.
func TestConvertedRequestIsTheSameFromTheTree(t *testing.T) {
	body := strings.Replace(threeQuestions, `"Which team?"`, `"Which \u0074eam?\n"`, 1)
	for _, kind := range []string{"edge", "router"} {
		a := adapterFor(t, kind, platform.MapConfig{})
		fromTree := newCall(t, kind, body)
		fromText := *fromTree
		fromText.Tree = nil
		var sent [2]any
		for i, c := range []*Call{fromTree, &fromText} {
			aw, failed := a.Prepare(c)
			if failed != nil {
				t.Fatalf("%s: Prepare failed: %v", kind, failed)
			}
			var out []byte
			if kind == "edge" {
				out = aw.AI.Input
			} else {
				out = aw.Fetch.Body
			}
			sent[i] = meaning(t, out)
		}
		if !reflect.DeepEqual(sent[0], sent[1]) {
			t.Errorf("%s: request from the tree differs from the text's:\n%v\n%v", kind, sent[0], sent[1])
		}
		if !strings.Contains(fmt.Sprint(sent[0]), "Which team?\n") {
			t.Errorf("%s: instructions not carried over: %v", kind, sent[0])
		}
	}
}

// meaning decodes JSON text, and the JSON text inside its strings (a Chat
// Completions message's content), for comparing what two texts say.
func meaning(t *testing.T, text []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(text, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, text)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case string:
			var inner map[string]any
			if json.Unmarshal([]byte(x), &inner) == nil {
				return walk(inner)
			}
		}
		return v
	}
	return walk(v)
}

func adapterFor(t *testing.T, kind string, cfg platform.MapConfig) Adapter {
	t.Helper()
	cfg["UPSTREAM_KIND"] = kind
	if cfg["UPSTREAM_URL"] == "" {
		cfg["UPSTREAM_URL"] = "http://upstream.test/v1"
	}
	s := settings.Read(cfg)
	a := For(&s)
	if a == nil {
		t.Fatalf("no adapter for kind %q", kind)
	}
	return a
}

// decode parses JSON test output into generic values.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, b)
	}
	return m
}

// path walks a decoded JSON value by object keys and array indexes.
func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// near reports whether two numbers agree to six decimals.
func near(a any, b float64) bool {
	f, ok := a.(float64)
	return ok && f-b < 1e-6 && b-f < 1e-6
}

// threeQuestions is a request with one question of each type; option "10"
// sorts before "9" as a JavaScript object key, which the binding input must
// not let happen.
const threeQuestions = `{"state":{"ticket":"refund for a broken kettle"},"questions":{
 "route":{"type":"choice","instructions":"Which team?","criteria":{"9":"billing and refunds","10":"hardware repairs","x":{"nested":[1,2]}}},
 "urgency":{"type":"score","criteria":["low","medium",{"level":"high"}],"x-weight":2},
 "refund":{"type":"noul","criteria":{"true":"a refund is requested","false":"no refund","x-note":"kept"}}}}`
