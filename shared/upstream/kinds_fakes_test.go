package upstream

import (
	"encoding/json"
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

// newCall validates body as the decision function would and fills in the
// effective model from the deployment's settings.
func newCall(t *testing.T, kind, body string) *Call {
	t.Helper()
	v := &validate.Validator{}
	req, verr := v.Validate([]byte(body))
	if verr != nil {
		t.Fatalf("request does not validate: %v", verr)
	}
	model := settings.DefaultModelFor(kind)
	if req.HasModel {
		model = req.Model
	}
	return &Call{Body: []byte(body), Request: req, Model: model, Validator: v}
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
