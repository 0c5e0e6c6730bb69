package upstream

import (
	"math"
	"strings"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/platform"
)

// piece is one token of a fake reply's content, with the probabilities of
// its top alternatives (the token itself included or not).
type piece struct {
	text string
	alts map[string]float64
	// bare leaves the token out of logprobs, as a router does for content
	// it has no probabilities for.
	bare bool
}

// chatReply builds a Chat Completions reply whose content is the pieces
// concatenated and whose logprobs (when withLogprobs) describe them.
func chatReply(t *testing.T, model string, pieces []piece, withLogprobs bool) []byte {
	var content strings.Builder
	var lp []any
	for _, p := range pieces {
		content.WriteString(p.text)
		if p.bare {
			continue
		}
		entry := map[string]any{"token": p.text, "logprob": 0.0, "top_logprobs": []any{}}
		if pr, ok := p.alts[p.text]; ok {
			entry["logprob"] = math.Log(pr)
		}
		var tops []any
		for tok, pr := range p.alts {
			tops = append(tops, map[string]any{"token": tok, "logprob": math.Log(pr)})
		}
		if tops != nil {
			entry["top_logprobs"] = tops
		}
		lp = append(lp, entry)
	}
	choice := map[string]any{
		"index":         0,
		"message":       map[string]any{"role": "assistant", "content": content.String(), "refusal": nil},
		"finish_reason": "stop",
	}
	if withLogprobs {
		choice["logprobs"] = map[string]any{"content": lp}
	}
	return mustJSON(t, map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": model,
		"choices": []any{choice},
		"usage":   map[string]any{"prompt_tokens": 310, "completion_tokens": 42, "total_tokens": 352},
	})
}

func okJSON(body []byte, extra ...abi.Header) func(*abi.FetchRequest) (abi.FetchResponse, error) {
	return func(*abi.FetchRequest) (abi.FetchResponse, error) {
		h := append(abi.Headers{{Name: "content-type", Value: "application/json"}}, extra...)
		return abi.FetchResponse{Status: 200, Headers: h, Body: body}, nil
	}
}

func runRouter(t *testing.T, body string, reply func(*abi.FetchRequest) (abi.FetchResponse, error)) (Outcome, *recordingTransport) {
	t.Helper()
	tr := &recordingTransport{reply: reply}
	a := adapterFor(t, "router", platform.MapConfig{"UPSTREAM_URL": "http://router.test/api/v1"})
	c := newCall(t, "router", body)
	if verr := a.Check(c); verr != nil {
		t.Fatalf("Check: %v", verr)
	}
	return Decide(&platform.Env{Transport: tr}, a, c), tr
}

// threeAnswers is a reply to threeQuestions whose committed values are
// single tokens with alternatives.
func threeAnswers(route, urgency, refund map[string]float64) []piece {
	return []piece{
		{text: `{"answers":{"route":{"choice":"`},
		{text: `10"`, alts: route},
		{text: `,"probabilities":{"9":0.1,"10":0.8,"x":0.1}},"urgency":{"level":`},
		{text: `2`, alts: urgency},
		{text: `,"probabilities":{"0":0.2,"1":0.2,"2":0.6}},"refund":{"holds":`},
		{text: `true`, alts: refund},
		{text: `,"probability":0.55}}}`},
	}
}

func TestRouterRequestIsStructuredChatCompletions(t *testing.T) {
	reply := chatReply(t, "openai/gpt-4o-2024-08-06", threeAnswers(nil, nil, nil), false)
	_, tr := runRouter(t, strings.Replace(threeQuestions, `{"state"`, `{"model":"openai/gpt-4o","state"`, 1), okJSON(reply))
	if len(tr.calls) != 1 {
		t.Fatalf("%d calls", len(tr.calls))
	}
	call := tr.calls[0]
	if call.Method != "POST" || call.URL != "http://router.test/api/v1/chat/completions" || call.Credential != abi.CredentialUpstream || call.TimeoutMS == 0 {
		t.Errorf("call %s %s credential %q", call.Method, call.URL, call.Credential)
	}
	req := decode(t, call.Body)
	if req["model"] != "openai/gpt-4o" || req["logprobs"] != true || req["top_logprobs"] != 20.0 || req["temperature"] != 0.0 {
		t.Errorf("request %v", req)
	}
	user := decode(t, []byte(path(req, "messages", 1, "content").(string)))
	if path(user, "state", "ticket") != "refund for a broken kettle" || path(user, "questions", "urgency", "x-weight") != 2.0 {
		t.Errorf("user message %v", user)
	}
	if path(req, "response_format", "type") != "json_schema" || path(req, "response_format", "json_schema", "strict") != true {
		t.Errorf("response_format %v", req["response_format"])
	}
	answers := path(req, "response_format", "json_schema", "schema", "properties", "answers")
	if got := mustJSON(t, path(answers, "required")); string(got) != `["route","urgency","refund"]` {
		t.Errorf("required answers %s", got)
	}
	if got := mustJSON(t, path(answers, "properties", "route", "properties", "choice", "enum")); string(got) != `["9","10","x"]` {
		t.Errorf("choice enum %s", got)
	}
	if got := mustJSON(t, path(answers, "properties", "urgency", "properties", "level", "enum")); string(got) != `[0,1,2]` {
		t.Errorf("level enum %s", got)
	}
	if got := mustJSON(t, path(answers, "properties", "refund", "required")); string(got) != `["holds","probability"]` {
		t.Errorf("noul required %s", got)
	}
	if path(answers, "additionalProperties") != false || path(answers, "properties", "route", "properties", "probabilities", "additionalProperties") != false {
		t.Errorf("schema not strict: %v", answers)
	}
}

func TestRouterDefaultModelIsForwarded(t *testing.T) {
	reply := chatReply(t, "", threeAnswers(nil, nil, nil), false)
	o, tr := runRouter(t, threeQuestions, okJSON(reply))
	if path(decode(t, tr.calls[0].Body), "model") != "model-latest" || o.Model != "model-latest" {
		t.Errorf("model %s / resolved %q", tr.calls[0].Body, o.Model)
	}
}

func TestRouterDistributionsFromLogprobs(t *testing.T) {
	reply := chatReply(t, "openai/gpt-4o-2024-08-06", threeAnswers(
		map[string]float64{`10"`: 0.6, `9"`: 0.3, `x"`: 0.05, ` `: 0.05},
		map[string]float64{`2`: 0.5, `1`: 0.4, `0`: 0.1},
		map[string]float64{`true`: 0.8, `false`: 0.2},
	), true)
	o, _ := runRouter(t, threeQuestions, okJSON(reply))
	if !o.OK {
		t.Fatalf("outcome %d %s %s", o.Status, o.Code, o.Body)
	}
	got := decode(t, o.Body)
	route := path(got, "answers", "route")
	// The unmatched " " alternative is dropped and the rest renormalised.
	if path(route, "choice") != "10" || !near(path(route, "probabilities", "10"), 0.6/0.95) ||
		!near(path(route, "probabilities", "9"), 0.3/0.95) || !near(path(route, "confidence"), 0.6/0.95) {
		t.Errorf("route = %v", route)
	}
	urgency := path(got, "answers", "urgency")
	if !near(path(urgency, "probabilities", "1"), 0.4) || !near(path(urgency, "score"), 1.4) || !near(path(urgency, "confidence"), 0.5) {
		t.Errorf("urgency = %v", urgency)
	}
	if !near(path(got, "answers", "refund", "noul"), 0.8) {
		t.Errorf("refund = %v", path(got, "answers", "refund"))
	}
	if got["model"] != "openai/gpt-4o-2024-08-06" || o.InputTokens != 310 || o.OutputTokens != 42 {
		t.Errorf("model %v tokens %d/%d", got["model"], o.InputTokens, o.OutputTokens)
	}
	if _, has := got["usage"].(map[string]any)["total_tokens"]; has {
		t.Errorf("usage carries router fields: %v", got["usage"])
	}
}

func TestRouterLogprobsAcrossTokenBoundaries(t *testing.T) {
	// The value's first token also holds the bytes before it (`:"`), and
	// the uncovered mass (1 - 0.9) is spread by the stated distribution.
	reply := chatReply(t, "m", []piece{
		{text: `{"answers":{"route":{"choice`},
		{text: `":"10`, alts: map[string]float64{`":"10`: 0.5, `":"9`: 0.4}},
		{text: `","probabilities":{"9":0.5,"10":0.5,"x":0}},"urgency":{"level":1,"probabilities":{"0":0,"1":1,"2":0}},"refund":{"holds":false,"probability":0.25}}}`, bare: true},
	}, true)
	o, _ := runRouter(t, threeQuestions, okJSON(reply))
	got := decode(t, o.Body)
	route := path(got, "answers", "route")
	if !near(path(route, "probabilities", "10"), 0.55) || !near(path(route, "probabilities", "9"), 0.45) || !near(path(route, "probabilities", "x"), 0) {
		t.Errorf("route = %v (%s)", route, o.Body)
	}
	if !near(path(got, "answers", "refund", "noul"), 0.25) || !near(path(got, "answers", "urgency", "score"), 1) {
		t.Errorf("stated values not used where no logprobs: %s", o.Body)
	}
}

func TestRouterAmbiguousTokenSharedByStatedDistribution(t *testing.T) {
	body := `{"state":"s","questions":{"q":{"type":"choice","criteria":{"yes":"","yes please":"","no":""}}}}`
	reply := chatReply(t, "m", []piece{
		{text: `{"answers":{"q":{"choice":"`},
		{text: `yes`, alts: map[string]float64{`yes`: 0.8, `no"`: 0.2}},
		{text: `","probabilities":{"yes":0.3,"yes please":0.1,"no":0.6}}}}`},
	}, true)
	o, _ := runRouter(t, body, okJSON(reply))
	q := path(decode(t, o.Body), "answers", "q")
	if !near(path(q, "probabilities", "yes"), 0.6) || !near(path(q, "probabilities", "yes please"), 0.2) || !near(path(q, "probabilities", "no"), 0.2) {
		t.Errorf("q = %v", q)
	}
}

func TestRouterStatedDistributionIsNormalised(t *testing.T) {
	reply := chatReply(t, "m", []piece{{text: `{"answers":{"route":{"choice":"x","probabilities":{"9":2,"10":1,"x":1}},` +
		`"urgency":{"level":2,"probabilities":{"0":1,"1":1,"2":2}},"refund":{"holds":false,"probability":0.3}}}`}}, false)
	o, _ := runRouter(t, threeQuestions, okJSON(reply))
	got := decode(t, o.Body)
	if !o.OK || path(got, "answers", "route", "choice") != "x" || !near(path(got, "answers", "route", "probabilities", "9"), 0.5) ||
		!near(path(got, "answers", "route", "confidence"), 0.25) {
		t.Errorf("route %v", path(got, "answers", "route"))
	}
	if !near(path(got, "answers", "urgency", "score"), 1.25) || !near(path(got, "answers", "refund", "noul"), 0.3) {
		t.Errorf("answers %v", got["answers"])
	}
	// Nothing usable stated: all mass on the committed value.
	reply = chatReply(t, "m", []piece{{text: `{"answers":{"route":{"choice":"10","probabilities":{"9":0,"10":0,"x":-1}},` +
		`"urgency":{"level":0,"probabilities":{}},"refund":{"holds":true,"probability":7}}}`}}, false)
	o, _ = runRouter(t, threeQuestions, okJSON(reply))
	got = decode(t, o.Body)
	if !o.OK || !near(path(got, "answers", "route", "probabilities", "10"), 1) || !near(path(got, "answers", "urgency", "score"), 0) ||
		!near(path(got, "answers", "refund", "noul"), 1) {
		t.Errorf("one-hot fallback: %d %s", o.Status, o.Body)
	}
}

func TestRouterUnmappableRepliesAreRefunded(t *testing.T) {
	cases := map[string]string{
		"not the schema": `{"answers":{"route":{"choice":"9"}}}`,
		"not JSON":       `Sure! Here are the answers`,
		"no committed value and nothing stated": `{"answers":{"route":{"choice":"nope","probabilities":{}},` +
			`"urgency":{"level":1,"probabilities":{"1":1}},"refund":{"holds":true,"probability":1}}}`,
	}
	for name, content := range cases {
		o, _ := runRouter(t, threeQuestions, okJSON(chatReply(t, "m", []piece{{text: content}}, false)))
		if o.OK || o.Status != 502 || o.Code != "invalid_upstream_answer" {
			t.Errorf("%s: %d %s %s", name, o.Status, o.Code, o.Body)
		}
	}
	refusal := mustJSON(t, map[string]any{"model": "m", "choices": []any{map[string]any{
		"message": map[string]any{"role": "assistant", "content": nil, "refusal": "I can't help with that."}, "finish_reason": "stop"}}})
	if o, _ := runRouter(t, threeQuestions, okJSON(refusal)); o.OK || o.Code != "invalid_upstream_answer" {
		t.Errorf("refusal: %d %s", o.Status, o.Code)
	}
	errIn200 := []byte(`{"error":{"message":"provider returned error","code":502}}`)
	if o, _ := runRouter(t, threeQuestions, okJSON(errIn200)); o.OK || o.Status != 502 || o.Code != "upstream_error" {
		t.Errorf("error in a 200: %d %s", o.Status, o.Code)
	}
}

func TestRouterErrorsAndHeadersMapped(t *testing.T) {
	errBody := `{"error":{"message":"Rate limit exceeded","code":429}}`
	h := abi.Headers{
		{Name: "content-type", Value: "application/json"},
		{Name: "retry-after", Value: "Wed, 21 Oct 2026 07:28:00 GMT"},
		{Name: "x-ratelimit-remaining", Value: "0"},
		{Name: "x-ratelimit-limit", Value: "20"},
		{Name: "x-request-id", Value: "req_abc"},
		{Name: "set-cookie", Value: "s=1"},
		{Name: "x-internal", Value: "secret"},
	}
	cases := []struct {
		name          string
		status        int
		ct, body      string
		want          int
		code, src     string
		keepsUpstream bool
	}{
		{"rate limited", 429, "application/json", errBody, 429, "provider_busy", "upstream", true},
		{"overloaded", 503, "application/json", errBody, 503, "provider_busy", "upstream", true},
		{"bad request", 400, "application/json", errBody, 400, "upstream_rejected_request", "upstream", true},
		{"bad key", 401, "application/json", errBody, 401, "upstream_auth_failed", "upstream", true},
		{"busy, HTML", 503, "text/html", "<h1>busy</h1>", 503, "provider_busy", "platform", false},
		{"gateway error, HTML", 502, "text/html", "<h1>bad</h1>", 502, "upstream_invalid_response", "platform", false},
	}
	for _, tc := range cases {
		hh := append(abi.Headers{}, h...)
		hh.Set("content-type", tc.ct)
		o, _ := runRouter(t, threeQuestions, func(*abi.FetchRequest) (abi.FetchResponse, error) {
			return abi.FetchResponse{Status: tc.status, Headers: hh, Body: []byte(tc.body)}, nil
		})
		if o.OK || o.Status != tc.want || string(o.Code) != tc.code || o.Source != tc.src || o.Headers.Get("x-service-error-source") != tc.src {
			t.Errorf("%s: %d %s %s %v", tc.name, o.Status, o.Code, o.Source, o.Headers)
		}
		if tc.keepsUpstream != (string(o.Body) == tc.body) {
			t.Errorf("%s: body %s", tc.name, o.Body)
		}
		if o.Headers.Get("retry-after") != "Wed, 21 Oct 2026 07:28:00 GMT" || o.Headers.Get("x-upstream-ratelimit-remaining") != "0" ||
			o.Headers.Get("x-upstream-ratelimit-limit") != "20" || o.Headers.Get("x-upstream-request-id") != "req_abc" {
			t.Errorf("%s: forwarded headers %v", tc.name, o.Headers)
		}
		for _, name := range []string{"set-cookie", "x-internal", "x-ratelimit-remaining"} {
			if o.Headers.Has(name) {
				t.Errorf("%s: %s forwarded", tc.name, name)
			}
		}
	}
	o, _ := runRouter(t, threeQuestions, func(*abi.FetchRequest) (abi.FetchResponse, error) {
		return abi.FetchResponse{ErrKind: abi.FetchErrTimeout}, nil
	})
	if o.Status != 504 || o.Code != "upstream_timeout" {
		t.Errorf("timeout: %d %s", o.Status, o.Code)
	}
	// A success keeps the tracking and rate-limit headers, renamed.
	reply := chatReply(t, "m", threeAnswers(nil, nil, nil), false)
	o, _ = runRouter(t, threeQuestions, okJSON(reply, abi.Header{Name: "x-ratelimit-remaining", Value: "19"}, abi.Header{Name: "set-cookie", Value: "a=b"}))
	if !o.OK || o.Headers.Get("x-upstream-ratelimit-remaining") != "19" || o.Headers.Has("set-cookie") || o.Headers.Get("content-type") != "application/json; charset=utf-8" {
		t.Errorf("success headers %v", o.Headers)
	}
}

func TestRouterRejectsTopLevelExtensionFields(t *testing.T) {
	a := adapterFor(t, "router", platform.MapConfig{})
	c := newCall(t, "router", `{"state":"s","questions":{"q":{"type":"noul"}},"temperature":1}`)
	if verr := a.Check(c); verr == nil || verr.Code != "unsupported_extension_field" || !strings.Contains(verr.Message, `"temperature"`) {
		t.Fatalf("Check = %+v", verr)
	}
}

func TestRouterHasNoModelListing(t *testing.T) {
	r := ListModels(&platform.Env{}, adapterFor(t, "router", platform.MapConfig{}))
	if r.Status != 501 || r.Headers.Get("x-service-error-code") != "model_listing_not_supported" || r.Headers.Get("x-service-error-source") != "platform" {
		t.Errorf("%d %v %s", r.Status, r.Headers, r.Body)
	}
}

func TestRouterMalformedLogprobsFallBackToStated(t *testing.T) {
	content := `{"answers":{"route":{"choice":"9","probabilities":{"9":0.5,"10":0.25,"x":0.25}},` +
		`"urgency":{"level":0,"probabilities":{"0":1,"1":0,"2":0}},"refund":{"holds":true,"probability":0.5}}}`
	for name, lp := range map[string]any{
		"not an array":             "nope",
		"tokens spell nothing":     []any{map[string]any{"token": "zzz", "logprob": -0.1}},
		"logprob not a number":     []any{map[string]any{"token": content, "logprob": "high", "top_logprobs": []any{map[string]any{"token": content, "logprob": nil}}}},
		"entries not objects":      []any{1, 2, 3},
		"alternatives garbage":     []any{map[string]any{"token": content, "top_logprobs": "x"}},
		"no alternative fits":      []any{map[string]any{"token": content[:30], "logprob": -0.1, "top_logprobs": []any{map[string]any{"token": "{", "logprob": -0.1}}}},
		"positive log-probability": []any{map[string]any{"token": content, "logprob": 3.0}},
	} {
		reply := mustJSON(t, map[string]any{"model": "m", "choices": []any{map[string]any{
			"message": map[string]any{"content": content}, "logprobs": map[string]any{"content": lp}, "finish_reason": "stop"}}})
		o, _ := runRouter(t, threeQuestions, okJSON(reply))
		got := decode(t, o.Body)
		if !o.OK || !near(path(got, "answers", "route", "probabilities", "10"), 0.25) {
			t.Errorf("%s: %d %s", name, o.Status, o.Body)
		}
	}
}

// FuzzRouterReplyNeverPanics feeds arbitrary reply bodies to the mapping:
// every one ends as a validated success or a refunded failure.
func FuzzRouterReplyNeverPanics(f *testing.F) {
	f.Add([]byte(`{"choices":[{"message":{"content":"{\"answers\":{}}"}}]}`))
	f.Add([]byte(`{"model":"m","choices":[{"message":{"content":"{\"answers\":{\"q\":{\"choice\":\"a\"}}}"},"logprobs":{"content":[{"token":"{","logprob":-1,"top_logprobs":[{"token":"a\"","logprob":-0.1}]}]}}]}`))
	f.Add([]byte(`{"choices":[{"message":{"content":"{\"answers\":{\"q\":{\"choice\":\"a\",\"probabilities\":{\"a\":NaN}}}}"}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		o, _ := runRouter(t, `{"state":"s","questions":{"q":{"type":"choice","criteria":{"a":"","b":""}}}}`, okJSON(body))
		if o.OK == (o.Code != "") || o.Status == 0 {
			t.Fatalf("outcome %d ok=%v code %q", o.Status, o.OK, o.Code)
		}
	})
}
