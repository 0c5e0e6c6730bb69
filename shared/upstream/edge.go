package upstream

import (
	"strings"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/jsonw"
	"decisiongateway/shared/policy"
	"decisiongateway/shared/settings"
	"decisiongateway/shared/validate"
	"github.com/valyala/fastjson"
)

func init() {
	register(settings.KindEdge, func(s *settings.Settings) Adapter { return &edge{emulator: s.Emulator} })
}

// EdgeModel is the edge runtime's one catalogued model and the default of
// the edge kind (spec §4.2, §9.5).
const EdgeModel = "vendor/model"

// EdgeModelFor maps a request's effective model to the name the binding is
// called with (spec §9.5): names in the binding's own namespace (vendor/…,
// such as vendor/model-2026-01-15) are forwarded for the binding to accept
// or refuse; every other alias (model-latest, model-*, any other vendor's
// name) maps to vendor/model, so an alias never pins a release the binding
// does not have.
func EdgeModelFor(model string) string {
	if strings.HasPrefix(model, "vendor/") {
		return model
	}
	return EdgeModel
}

// edge is the edge-runtime model binding (spec §1.3, mode edge-runtime).
// It converts the request into the binding input of schema/binding.md,
// calls the ai import (env.AI.run on Workers, the Workers AI REST shape in
// the wazero host; both hand back the same REST envelope) and maps the
// binding's output into native answers. No byte fidelity: the answer is
// rebuilt, then validated like any upstream answer.
type edge struct {
	emulator bool
	d        decision
	in       jsonw.Writer
	out      nativeBody
	env      fastjson.Parser
	probs    []float64
	num      validate.Numbers
}

func (e *edge) Mode() string { return settings.ResponseMode(settings.KindEdge) }

// Check rejects top-level extension fields: the binding input has no place
// for them (spec §2.1). It also refuses a vendor/… name that could not be a
// model name in a URL path, before anything is charged: in the wazero host
// the name becomes part of POST {UPSTREAM_URL}/run/{model}, sent with the
// operator's credential, so "vendor/../../x" or "vendor/m?x=1" must never
// reach it.
func (e *edge) Check(c *Call) *validate.Error {
	if verr := checkNoExtensions(c, "edge-runtime"); verr != nil {
		return verr
	}
	if !forwardableModel(EdgeModelFor(c.Model)) {
		return &validate.Error{Code: contract.UnsupportedModel,
			Message: "model " + quoteName(c.Model) + ": a vendor/ name may only hold letters, digits, '.', '-' and '_' in '/'-separated parts"}
	}
	return nil
}

// forwardableModel: "vendor/" and then '/'-separated parts of letters,
// digits, '.', '-' and '_', none of them "." or "..".
func forwardableModel(m string) bool {
	for _, part := range strings.Split(m, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
		for i := 0; i < len(part); i++ {
			c := part[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

func (e *edge) Prepare(c *Call) (abi.Await, *Outcome) {
	if !e.d.parse(c) {
		o := platformFailure(contract.InternalError, "the request could not be converted", nil)
		return abi.Await{}, &o
	}
	return abi.Await{AI: &abi.AIRequest{Model: EdgeModelFor(c.Model), Input: e.input()}}, nil
}

func (e *edge) Answer(c *Call, r *abi.Resume) Outcome {
	// Parsed again: this may be another instance than Prepare's.
	if !e.d.parse(c) {
		return platformFailure(contract.InternalError, "the request could not be converted", nil)
	}
	if r.AI == nil {
		return platformFailure(contract.UpstreamUnavailable, "the model binding's answer could not be decoded", nil)
	}
	res := r.AI
	switch res.ErrKind {
	case "":
		return e.answer(c, EdgeModelFor(c.Model), res)
	case abi.FetchErrDenied: // both hosts: no binding on this deployment
		return platformFailure(contract.UpstreamNotConfigured, "no model binding is configured", nil)
	}
	return fetchFailure(&abi.FetchResponse{ErrKind: res.ErrKind})
}

// input writes the binding input (schema/binding.md): the state as sent and
// the questions as an array in request order, choice options as an array
// of {name, description}. Arrays, not objects keyed by name, because on
// Workers the input becomes a JavaScript object, which reorders
// integer-like keys: option "10" would come before option "9".
func (e *edge) input() []byte {
	w := &e.in
	*w = jsonw.Writer{B: w.B[:0]}
	w.Open('{')
	w.Key("state")
	raw(w, e.d.state)
	w.Key("questions")
	w.Open('[')
	for i := range e.d.questions {
		q := &e.d.questions[i]
		w.Open('{')
		w.FieldString("name", q.Name)
		w.FieldString("type", q.Type.String())
		w.Key("instructions")
		raw(w, q.instructions)
		switch q.Type {
		case validate.Choice:
			w.Key("options")
			w.Open('[')
			for j, name := range q.Options {
				w.Open('{')
				w.FieldString("name", name)
				w.Key("description")
				raw(w, q.descriptions[j])
				w.Close('}')
			}
			w.Close(']')
		case validate.Score:
			w.Key("levels")
			raw(w, q.criteria)
		case validate.Noul:
			w.Key("criteria")
			raw(w, q.criteria)
		}
		if len(q.extensions) > 0 {
			w.Key("extensions")
			w.Open('{')
			for _, m := range q.extensions {
				w.Key(m.key)
				raw(w, m.val)
			}
			w.Close('}')
		}
		w.Close('}')
	}
	w.Close(']')
	w.Close('}')
	return w.B
}

// raw writes a parsed value (null when absent) as the writer's next value.
func raw(w *jsonw.Writer, v *fastjson.Value) {
	w.Raw(nil)
	w.B = appendValue(w.B, v)
}

// answer classifies the binding's REST envelope
// {"result":…,"success":…,"errors":[…]}.
func (e *edge) answer(c *Call, model string, res *abi.AIResponse) Outcome {
	isJSON := fastjson.ValidateBytes(res.Output) == nil
	switch {
	case res.Status >= 200 && res.Status < 300:
	case res.Status >= 400 && res.Status < 600 && isJSON:
		// The binding's JSON error keeps its status and body (spec §7
		// rule 1). The ai import carries no headers, so there is no
		// Retry-After to keep.
		code := upstreamErrorCode(res.Status)
		h := abi.Headers{
			{Name: policy.HContentType, Value: policy.JSONType},
			{Name: policy.HErrorSource, Value: policy.SourceUpstream},
			{Name: policy.HErrorCode, Value: string(code)},
		}
		return Outcome{Status: res.Status, Headers: h, Body: res.Output, Code: code, Source: policy.SourceUpstream, InputTokens: -1, OutputTokens: -1}
	case res.Status == 429 || res.Status == 503:
		return platformFailureAs(res.Status, contract.ProviderBusy, "the model binding is busy; retry later", nil)
	default:
		return platformFailure(contract.UpstreamInvalidResponse, "the model binding answered with an unusable response", nil)
	}

	envelope, err := e.env.ParseBytes(res.Output)
	if !isJSON || err != nil || envelope.Type() != fastjson.TypeObject {
		return platformFailure(contract.UpstreamInvalidResponse, "the model binding answered with something other than its JSON envelope", nil)
	}
	if s := envelope.Get("success"); s != nil && s.Type() != fastjson.TypeTrue {
		return platformFailure(contract.UpstreamError, "the model binding reported a failure", nil)
	}
	result := envelope.Get("result")
	if result == nil || result.Type() != fastjson.TypeObject {
		return platformFailure(contract.UpstreamInvalidResponse, "the model binding's envelope has no result object", nil)
	}
	body, resolved, in, out, where := e.mapResult(result, model)
	if where != "" {
		return platformFailure(contract.InvalidUpstreamAnswer, "the model binding's output does not follow schema/binding.md at "+where, nil)
	}
	return convertedSuccess(c, body, resolved, in, out, nil)
}

// mapResult turns the binding's result into a native body. where names the
// first part that could not be mapped ("" on success).
func (e *edge) mapResult(result *fastjson.Value, model string) (body []byte, resolved string, in, out int64, where string) {
	resolved = model
	if m := result.GetStringBytes("model"); len(m) > 0 {
		resolved = string(m)
	}
	answers := result.GetArray("answers")
	if result.Get("answers") == nil || result.Get("answers").Type() != fastjson.TypeArray || len(answers) != len(e.d.questions) {
		return nil, "", -1, -1, "result.answers (one entry per question, in input order)"
	}
	e.out.begin(resolved, false)
	for i := range e.d.questions {
		if w := e.mapAnswer(&e.d.questions[i], answers[i]); w != "" {
			return nil, "", -1, -1, "result.answers[" + itoa(i) + "]" + w
		}
	}
	in, out = -1, -1
	if u := result.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
		in, out = tokenCount(&e.num, u.Get("input_tokens")), tokenCount(&e.num, u.Get("output_tokens"))
		if in < 0 {
			in = tokenCount(&e.num, u.Get("prompt_tokens"))
		}
		if out < 0 {
			out = tokenCount(&e.num, u.Get("completion_tokens"))
		}
	}
	return e.out.end(in, out), resolved, in, out, ""
}

// mapAnswer writes one question's answer; it returns the failing member.
func (e *edge) mapAnswer(q *questionView, a *fastjson.Value) string {
	if a == nil || a.Type() != fastjson.TypeObject {
		return " (not an object)"
	}
	if n := a.Get("name"); n != nil && string(n.GetStringBytes()) != q.Name {
		return ".name"
	}
	if q.Type == validate.Noul {
		p, ok := e.num.Float(a.Get("noul"))
		if !ok {
			return ".noul"
		}
		e.out.noul(q, p)
		return ""
	}
	if !e.readProbabilities(q, a.Get("probabilities")) {
		return ".probabilities"
	}
	best := argmax(e.probs)
	confidence := e.probs[best]
	if v := a.Get("confidence"); v != nil {
		var ok bool
		if confidence, ok = e.num.Float(v); !ok {
			return ".confidence"
		}
	}
	if q.Type == validate.Score {
		score := nan()
		if v := a.Get("score"); v != nil {
			var ok bool
			if score, ok = e.num.Float(v); !ok {
				return ".score"
			}
		}
		e.out.score(q, e.probs, score, confidence)
		return ""
	}
	choice := best
	if v := a.Get("choice"); v != nil {
		choice = indexOf(q.Options, string(v.GetStringBytes()))
		if choice < 0 || v.Type() != fastjson.TypeString {
			return ".choice"
		}
		if a.Get("confidence") == nil {
			confidence = e.probs[choice]
		}
	}
	e.out.choice(q, e.probs, choice, confidence)
	return ""
}

// readProbabilities reads a distribution over the question's options or
// levels into e.probs: an array in input order, or an object keyed by
// option name or level index. The numbers are kept as sent; answer
// validation decides whether they form a distribution.
func (e *edge) readProbabilities(q *questionView, v *fastjson.Value) bool {
	n := len(q.Options)
	if q.Type == validate.Score {
		n = q.Levels
	}
	e.probs = e.probs[:0]
	switch {
	case v == nil:
		return false
	case v.Type() == fastjson.TypeArray:
		arr, _ := v.Array()
		if len(arr) != n {
			return false
		}
		for _, x := range arr {
			p, ok := e.num.Float(x)
			if !ok {
				return false
			}
			e.probs = append(e.probs, p)
		}
	case v.Type() == fastjson.TypeObject:
		o, _ := v.Object()
		if o.Len() != n {
			return false
		}
		for i := 0; i < n; i++ {
			key := itoa(i)
			if q.Type == validate.Choice {
				key = q.Options[i]
			}
			p, ok := e.num.Float(o.Get(key))
			if !ok {
				return false
			}
			e.probs = append(e.probs, p)
		}
	default:
		return false
	}
	return true
}

// Models answers with the platform catalog (spec §4.2 rule 2): the one
// model vendor/model. It has no release date, being an alias the platform
// may move (§9.5).
func (e *edge) Models(*abi.Resume) (*abi.FetchRequest, abi.Response) {
	var w jsonw.Writer
	w.Open('{')
	w.Key("models")
	w.Open('[')
	w.Open('{')
	w.FieldString("name", EdgeModel)
	if e.emulator {
		w.FieldString("description", "Emulator of the edge-runtime model binding (Decision Gateway, --dev): a deterministic lexical scorer, not a model")
	} else {
		w.FieldString("description", "The edge runtime's decision model; every model-* alias maps to it")
	}
	w.Key("release_date")
	w.Null()
	if e.emulator {
		w.FieldBool("emulator", true)
	}
	w.Close('}')
	w.Close(']')
	w.Close('}')
	return nil, policy.JSON(200, w.B)
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}
