package emulator

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/platform"
	"decisiongateway/shared/settings"
	"decisiongateway/shared/upstream"
	"decisiongateway/shared/validate"
	"decisiongateway/wasm-host/egress"
)

const request = `{"state":{"ticket":"My kettle arrived broken and I want a refund of the payment","customer":"since 2019"},
"questions":{
 "team":{"type":"choice","instructions":"Who handles it?","criteria":{"billing":"payments, refunds and invoices","repairs":"broken hardware and repairs","sales":"new orders"}},
 "urgency":{"type":"score","criteria":["no action needed","answer this week","refund or payment problem: answer today"]},
 "refund":{"type":"noul","criteria":{"true":"the customer wants a refund","false":"the customer asks a question"}}}}`

// bridge is the host's side of fetch and ai, pointed at the emulator: the
// real egress client, so the adapters meet the emulator exactly as in
// `serve --dev`.
type bridge struct{ c *egress.Client }

func (b bridge) Fetch(r *abi.FetchRequest) (abi.FetchResponse, error) {
	return b.c.Fetch(context.Background(), r), nil
}

type binding struct {
	c    *egress.Client
	base string
}

func (b binding) Run(r *abi.AIRequest) (abi.AIResponse, error) {
	return b.c.RunAI(context.Background(), b.base, r), nil
}

func start(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(Handler(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(srv.Close)
	return srv
}

// decideThrough runs body through the gateway's adapter of kind against the
// emulator and returns the outcome.
func decideThrough(t *testing.T, root, kind, body string) upstream.Outcome {
	t.Helper()
	base := BaseURL(root, kind)
	s := settings.Read(platform.MapConfig{"UPSTREAM_KIND": kind, "UPSTREAM_URL": base, "GATEWAY_EMULATOR": "1"})
	a := upstream.For(&s)
	v := &validate.Validator{}
	req, verr := v.Validate([]byte(body))
	if verr != nil {
		t.Fatal(verr)
	}
	c := &upstream.Call{Body: []byte(body), Request: req, Model: s.DefaultModel, Validator: v}
	if req.HasModel {
		c.Model = req.Model
	}
	if verr := a.Check(c); verr != nil {
		t.Fatal(verr)
	}
	eg := egress.New([]string{egress.Origin(root)}, map[string]egress.Credential{abi.CredentialUpstream: {Origin: egress.Origin(root)}})
	return upstream.Decide(&platform.Env{Transport: bridge{eg}, Model: binding{eg, base}}, a, c)
}

func TestEveryProtocolAnswersValidDecisions(t *testing.T) {
	srv := start(t)
	for _, kind := range []string{"vendor", "edge", "router"} {
		o := decideThrough(t, srv.URL, kind, request)
		if !o.OK || o.Status != 200 {
			t.Fatalf("%s: %d %s %s", kind, o.Status, o.Code, o.Body)
		}
		var got struct {
			Model   string
			Answers map[string]map[string]any
		}
		if err := json.Unmarshal(o.Body, &got); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got.Model, "emulator/") || o.InputTokens <= 0 || o.OutputTokens <= 0 {
			t.Errorf("%s: model %q tokens %d/%d", kind, got.Model, o.InputTokens, o.OutputTokens)
		}
		// The lexical scorer follows the words: the ticket is about a
		// refund of a payment.
		if got.Answers["team"]["choice"] != "billing" {
			t.Errorf("%s: team = %v", kind, got.Answers["team"])
		}
		if s, _ := got.Answers["urgency"]["score"].(float64); s < 1 {
			t.Errorf("%s: urgency = %v", kind, got.Answers["urgency"])
		}
		if p, _ := got.Answers["refund"]["noul"].(float64); p <= 0.5 {
			t.Errorf("%s: refund = %v", kind, got.Answers["refund"])
		}
	}
}

func TestAnswersAreDeterministicAndAgreeAcrossProtocols(t *testing.T) {
	srv := start(t)
	noul := map[string]any{}
	for _, kind := range []string{"vendor", "edge", "router", "vendor"} {
		o := decideThrough(t, srv.URL, kind, request)
		var got map[string]map[string]map[string]any
		json.Unmarshal(o.Body, &got)
		if prev, ok := noul["p"]; ok && prev != got["answers"]["team"]["probabilities"].(map[string]any)["billing"] {
			t.Errorf("%s: billing probability %v, before %v", kind, got["answers"]["team"]["probabilities"], prev)
		}
		noul["p"] = got["answers"]["team"]["probabilities"].(map[string]any)["billing"]
	}
}

func TestAnswersValidateForEveryShape(t *testing.T) {
	// Many options, ten levels, odd names, descriptions of every JSON type,
	// no noul criteria: the answers must still pass answer validation.
	var b strings.Builder
	b.WriteString(`{"model":"vendor/model-2026-01-15","state":["a b", {"k": 1e3}, null],"questions":{"many":{"type":"choice","criteria":{`)
	for i := 0; i < 255; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"opt \"` + itoa(i) + `\" <&>":"a b option ` + itoa(i%7) + `"`)
	}
	b.WriteString(`}},"ten":{"type":"score","criteria":[1,2,3,4,5,6,7,8,9,{"a":"b"}]},"bare":{"type":"noul"},"tab\tname":{"type":"noul","instructions":"a","criteria":null}}}`)
	srv := start(t)
	for _, kind := range []string{"vendor", "edge", "router"} {
		if o := decideThrough(t, srv.URL, kind, b.String()); !o.OK {
			t.Errorf("%s: %d %s %s", kind, o.Status, o.Code, o.Body)
		}
	}
}

func TestEmulatorIsLabelled(t *testing.T) {
	srv := start(t)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/vendor/v1/models", ""},
		{"POST", "/vendor/v1/service", request},
		{"POST", "/edge/run/vendor/model", `{"state":null,"questions":[]}`},
		{"POST", "/router/chat/completions", `{"model":"m","messages":[{"role":"user","content":"{\"state\":1,\"questions\":{}}"}]}`},
		{"GET", "/router/models", ""},
		{"GET", "/", ""},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Emulator") != "decision-gateway" {
			t.Errorf("%s %s: %d %v %s", c.method, c.path, resp.StatusCode, resp.Header, body)
		}
		if !strings.Contains(strings.ToLower(string(body)), "emulator") {
			t.Errorf("%s %s: body does not say emulator: %s", c.method, c.path, body)
		}
	}
}

func TestEdgeBindingRefusesNamesItDoesNotServe(t *testing.T) {
	srv := start(t)
	o := decideThrough(t, srv.URL, "edge", `{"model":"vendor/other","state":null,"questions":{"q":{"type":"noul"}}}`)
	if o.OK || o.Status != 400 || o.Source != "upstream" || !strings.Contains(string(o.Body), `"success":false`) {
		t.Errorf("%d %s %s %s", o.Status, o.Code, o.Source, o.Body)
	}
	o = decideThrough(t, srv.URL, "edge", `{"model":"vendor/model-2026-01-15","state":null,"questions":{"q":{"type":"noul"}}}`)
	if !o.OK || o.Model != "emulator/vendor/model-2026-01-15" {
		t.Errorf("%d %s %s", o.Status, o.Code, o.Body)
	}
}

func TestVendorEmulatorRejectsInvalidRequests(t *testing.T) {
	srv := start(t)
	resp, err := http.Post(srv.URL+"/vendor/v1/service", "application/json", strings.NewReader(`{"state":1,"questions":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "invalid_state") {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
}
