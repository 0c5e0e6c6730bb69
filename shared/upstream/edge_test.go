package upstream

import (
	"strings"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/platform"
	"decisiongateway/shared/settings"
)

// envelope wraps a result the way both hosts hand it to the adapter.
func envelope(t *testing.T, status int, result any) func(*abi.AIRequest) (abi.AIResponse, error) {
	body := mustJSON(t, map[string]any{"result": result, "success": status < 300, "errors": []any{}, "messages": []any{}})
	return func(*abi.AIRequest) (abi.AIResponse, error) { return abi.AIResponse{Status: status, Output: body}, nil }
}

// goodResult answers threeQuestions in the binding's output shape.
var goodResult = map[string]any{
	"model": "vendor/model-2026-01-15",
	"answers": []any{
		map[string]any{"name": "route", "probabilities": []any{0.7, 0.2, 0.1}},
		map[string]any{"probabilities": map[string]any{"0": 0.1, "1": 0.3, "2": 0.6}, "confidence": 0.6},
		map[string]any{"noul": 0.9},
	},
	"usage": map[string]any{"prompt_tokens": 120, "completion_tokens": 14},
}

func runEdge(t *testing.T, body string, reply func(*abi.AIRequest) (abi.AIResponse, error)) (Outcome, *recordingModel) {
	t.Helper()
	m := &recordingModel{reply: reply}
	a := adapterFor(t, "edge", platform.MapConfig{})
	c := newCall(t, "edge", body)
	if verr := a.Check(c); verr != nil {
		t.Fatalf("Check: %v", verr)
	}
	return Decide(&platform.Env{Model: m}, a, c), m
}

func TestEdgeAliasesMapToTheDefaultModel(t *testing.T) {
	for model, want := range map[string]string{
		"":                        "vendor/model", // the edge default
		"model-latest":            "vendor/model",
		"model-2025-06-01":        "vendor/model",
		"other-vendor/model-x":    "vendor/model",
		"gpt-4o":                  "vendor/model",
		"vendor/model":            "vendor/model",
		"vendor/model-2026-01-15": "vendor/model-2026-01-15", // forwarded for the binding to accept or refuse
	} {
		body := `{"state":null,"questions":{"q":{"type":"noul"}}}`
		if model != "" {
			body = `{"model":"` + model + `","state":null,"questions":{"q":{"type":"noul"}}}`
		}
		_, m := runEdge(t, body, envelope(t, 200, map[string]any{"answers": []any{map[string]any{"noul": 0.5}}}))
		if len(m.calls) != 1 || m.calls[0].Model != want {
			t.Errorf("model %q: binding called with %+v, want %q", model, m.calls, want)
		}
	}
}

func TestEdgeDeploymentDefaultAliasMapsToo(t *testing.T) {
	// SERVICE_DEFAULT_MODEL=model-latest on an edge deployment still calls
	// vendor/model: the mapping applies to the effective model.
	m := &recordingModel{reply: envelope(t, 200, map[string]any{"answers": []any{map[string]any{"noul": 0.5}}})}
	a := adapterFor(t, "edge", platform.MapConfig{"SERVICE_DEFAULT_MODEL": "model-latest"})
	c := newCall(t, "edge", `{"state":null,"questions":{"q":{"type":"noul"}}}`)
	c.Model = "model-latest"
	Decide(&platform.Env{Model: m}, a, c)
	if m.calls[0].Model != "vendor/model" {
		t.Errorf("binding called with %q", m.calls[0].Model)
	}
}

func TestEdgeRejectsTopLevelExtensionFields(t *testing.T) {
	a := adapterFor(t, "edge", platform.MapConfig{})
	c := newCall(t, "edge", `{"state":"s","x-trace":{"id":1},"questions":{"q":{"type":"noul"}}}`)
	verr := a.Check(c)
	if verr == nil || verr.Status() != 400 || verr.Code != "unsupported_extension_field" || !strings.Contains(verr.Message, `"x-trace"`) {
		t.Fatalf("Check = %+v", verr)
	}
	// Extensions on a question or a noul criteria object are not top-level.
	c = newCall(t, "edge", `{"state":"s","questions":{"q":{"type":"noul","x":1,"criteria":{"true":"t","x":2}}}}`)
	if verr := a.Check(c); verr != nil {
		t.Fatalf("question-level extensions rejected: %v", verr)
	}
}

func TestEdgeBindingInputKeepsOrderAndExtensions(t *testing.T) {
	_, m := runEdge(t, threeQuestions, envelope(t, 200, goodResult))
	in := decode(t, m.calls[0].Input)
	if path(in, "state", "ticket") != "refund for a broken kettle" {
		t.Errorf("state = %v", in["state"])
	}
	var names []string
	for _, o := range path(in, "questions", 0, "options").([]any) {
		names = append(names, o.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "9,10,x" {
		t.Errorf("option order %v, want the request's 9,10,x", names)
	}
	if path(in, "questions", 0, "options", 2, "description", "nested", 1) != 2.0 {
		t.Errorf("nested description lost: %s", m.calls[0].Input)
	}
	if path(in, "questions", 0, "instructions") != "Which team?" || path(in, "questions", 1, "instructions") != nil {
		t.Errorf("instructions: %s", m.calls[0].Input)
	}
	if path(in, "questions", 1, "levels", 2, "level") != "high" || path(in, "questions", 1, "extensions", "x-weight") != 2.0 {
		t.Errorf("score question: %v", path(in, "questions", 1))
	}
	if path(in, "questions", 2, "criteria", "x-note") != "kept" || path(in, "questions", 2, "type") != "noul" {
		t.Errorf("noul question: %v", path(in, "questions", 2))
	}
}

func TestEdgeOutputMapsToValidNativeAnswers(t *testing.T) {
	o, _ := runEdge(t, threeQuestions, envelope(t, 200, goodResult))
	if !o.OK || o.Status != 200 {
		t.Fatalf("outcome %d %s %s", o.Status, o.Code, o.Body)
	}
	got := decode(t, o.Body)
	if got["model"] != "vendor/model-2026-01-15" || o.Model != "vendor/model-2026-01-15" {
		t.Errorf("model %v / %q", got["model"], o.Model)
	}
	route := path(got, "answers", "route")
	if path(route, "choice") != "9" || !near(path(route, "probabilities", "10"), 0.2) || !near(path(route, "confidence"), 0.7) {
		t.Errorf("route = %v", route)
	}
	urgency := path(got, "answers", "urgency")
	if !near(path(urgency, "score"), 1.5) || path(urgency, "legend", "2") != `{"level":"high"}` || path(urgency, "legend", "0") != "low" {
		t.Errorf("urgency = %v", urgency)
	}
	if !near(path(got, "answers", "refund", "noul"), 0.9) {
		t.Errorf("refund = %v", path(got, "answers", "refund"))
	}
	if o.InputTokens != 120 || o.OutputTokens != 14 || !near(path(got, "usage", "input_tokens"), 120) {
		t.Errorf("usage %d/%d %v", o.InputTokens, o.OutputTokens, got["usage"])
	}
	if o.Headers.Get("content-type") != "application/json; charset=utf-8" {
		t.Errorf("headers %v", o.Headers)
	}
}

func TestEdgeOutputIsValidatedLikeAnyAnswer(t *testing.T) {
	for name, result := range map[string]any{
		"probabilities do not sum to 1": map[string]any{"answers": []any{map[string]any{"noul": 0.5}, map[string]any{"probabilities": []any{0.2, 0.2, 0.2}}, map[string]any{"noul": 0.5}}},
		"noul above 1":                  map[string]any{"answers": []any{map[string]any{"probabilities": []any{1, 0, 0}}, map[string]any{"probabilities": []any{1, 0, 0}}, map[string]any{"noul": 1.5}}},
		"score off its distribution":    map[string]any{"answers": []any{map[string]any{"probabilities": []any{1, 0, 0}}, map[string]any{"probabilities": []any{1, 0, 0}, "score": 2}, map[string]any{"noul": 1}}},
		"one answer missing":            map[string]any{"answers": []any{map[string]any{"probabilities": []any{1, 0, 0}}}},
		"unknown choice":                map[string]any{"answers": []any{map[string]any{"probabilities": []any{1, 0, 0}, "choice": "7"}, map[string]any{"probabilities": []any{1, 0, 0}}, map[string]any{"noul": 1}}},
		"answer for another question":   map[string]any{"answers": []any{map[string]any{"name": "urgency", "probabilities": []any{1, 0, 0}}, map[string]any{"probabilities": []any{1, 0, 0}}, map[string]any{"noul": 1}}},
	} {
		o, _ := runEdge(t, threeQuestions, envelope(t, 200, result))
		if o.OK || o.Status != 502 || o.Code != "invalid_upstream_answer" || o.Source != "platform" {
			t.Errorf("%s: outcome %d %s %s", name, o.Status, o.Code, o.Body)
		}
	}
}

func TestEdgeErrorsKeepStatusAndBody(t *testing.T) {
	errBody := `{"result":null,"success":false,"errors":[{"code":3040,"message":"capacity"}],"messages":[]}`
	cases := []struct {
		name       string
		res        abi.AIResponse
		status     int
		code, src  string
		keepsBytes bool
	}{
		{"busy JSON", abi.AIResponse{Status: 429, Output: []byte(errBody)}, 429, "provider_busy", "upstream", true},
		{"unavailable JSON", abi.AIResponse{Status: 503, Output: []byte(errBody)}, 503, "provider_busy", "upstream", true},
		{"unknown model", abi.AIResponse{Status: 400, Output: []byte(errBody)}, 400, "upstream_rejected_request", "upstream", true},
		{"failure JSON", abi.AIResponse{Status: 502, Output: []byte(errBody)}, 502, "upstream_error", "upstream", true},
		{"busy, not JSON", abi.AIResponse{Status: 503, Output: []byte("overloaded")}, 503, "provider_busy", "platform", false},
		{"success false in a 200", abi.AIResponse{Status: 200, Output: []byte(errBody)}, 502, "upstream_error", "platform", false},
		{"200 not JSON", abi.AIResponse{Status: 200, Output: []byte("<html>")}, 502, "upstream_invalid_response", "platform", false},
		{"timeout", abi.AIResponse{ErrKind: abi.FetchErrTimeout}, 504, "upstream_timeout", "platform", false},
		{"no binding", abi.AIResponse{ErrKind: abi.FetchErrDenied}, 503, "upstream_not_configured", "platform", false},
		{"connection lost", abi.AIResponse{ErrKind: abi.FetchErrConnect}, 502, "upstream_unavailable", "platform", false},
	}
	for _, tc := range cases {
		o, _ := runEdge(t, threeQuestions, func(*abi.AIRequest) (abi.AIResponse, error) { return tc.res, nil })
		if o.OK || o.Status != tc.status || string(o.Code) != tc.code || o.Source != tc.src ||
			o.Headers.Get("x-service-error-code") != tc.code || o.Headers.Get("x-service-error-source") != tc.src {
			t.Errorf("%s: outcome %d %s %s %v", tc.name, o.Status, o.Code, o.Source, o.Headers)
		}
		if tc.keepsBytes && string(o.Body) != errBody {
			t.Errorf("%s: body %s", tc.name, o.Body)
		}
		if o.InputTokens != -1 || o.OutputTokens != -1 {
			t.Errorf("%s: tokens %d/%d", tc.name, o.InputTokens, o.OutputTokens)
		}
	}
}

func TestEdgeModelsIsThePlatformCatalog(t *testing.T) {
	for _, emulated := range []bool{false, true} {
		cfg := platform.MapConfig{}
		if emulated {
			cfg["GATEWAY_EMULATOR"] = "1"
		}
		r := ListModels(&platform.Env{}, adapterFor(t, "edge", cfg))
		got := decode(t, r.Body)
		models, _ := got["models"].([]any)
		if r.Status != 200 || len(models) != 1 || path(models, 0, "name") != "vendor/model" {
			t.Fatalf("models %d %s", r.Status, r.Body)
		}
		if _, has := path(models, 0).(map[string]any)["release_date"]; !has {
			t.Errorf("entry lacks release_date: %s", r.Body)
		}
		if (path(models, 0, "emulator") == true) != emulated {
			t.Errorf("emulated=%v: %s", emulated, r.Body)
		}
	}
}

func TestEdgeNeedsNoURL(t *testing.T) {
	// On Workers the binding is env.AI: an edge deployment is configured
	// without UPSTREAM_URL; the other kinds are not.
	for kind, want := range map[string]bool{"edge": true, "vendor": false, "router": false} {
		s := settings.Read(platform.MapConfig{"UPSTREAM_KIND": kind})
		if got := For(&s) != nil; got != want {
			t.Errorf("%s without URL: adapter %v, want %v", kind, got, want)
		}
	}
}

func TestEdgeRefusesModelNamesThatAreNotPathSafe(t *testing.T) {
	a := adapterFor(t, "edge", platform.MapConfig{})
	for model, ok := range map[string]bool{
		"vendor/model-2026-01-15": true,
		"vendor/model_v2.1":       true,
		"vendor/../../tokens":     false,
		"vendor/model?x=1":        false,
		"vendor/model#frag":       false,
		"vendor/mödel":            false,
		"vendor//model":           false,
		"vendor/model ":           false,
		"model-../x":              true, // not forwarded: maps to vendor/model
	} {
		verr := a.Check(newCall(t, "edge", `{"model":"`+model+`","state":null,"questions":{"q":{"type":"noul"}}}`))
		if (verr == nil) != ok || verr != nil && (verr.Status() != 400 || verr.Code != "unsupported_model") {
			t.Errorf("%q: Check = %+v", model, verr)
		}
	}
}

// A model's number reaches the client with the value it had: fastjson's own
// float parser read many numbers in exponent form one unit in the last place
// off (5e-07 as 4.9999999999999996e-07), and the vendor form written from it
// carried that.
func TestEdgeNumbersKeepTheirValue(t *testing.T) {
	for _, noul := range []string{"5e-07", "9.5e-07", "1.37804e-07", "3.0682195787139e-07"} {
		result := `{"model":"vendor/model-2026-01-15","answers":[` +
			`{"name":"route","probabilities":[0.7,0.2,0.1]},` +
			`{"probabilities":{"0":0.1,"1":0.3,"2":0.6},"confidence":0.6},` +
			`{"noul":` + noul + `}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`
		body := `{"result":` + result + `,"success":true,"errors":[],"messages":[]}`
		o, _ := runEdge(t, threeQuestions, func(*abi.AIRequest) (abi.AIResponse, error) {
			return abi.AIResponse{Status: 200, Output: []byte(body)}, nil
		})
		if !o.OK {
			t.Fatalf("%s: outcome %d %s %s", noul, o.Status, o.Code, o.Body)
		}
		if want := `"noul":` + noul; !strings.Contains(string(o.Body), want) {
			t.Errorf("answer %s lacks %s", o.Body, want)
		}
	}
}
