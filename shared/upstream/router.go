package upstream

import (
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/jsonw"
	"decisiongateway/shared/policy"
	"decisiongateway/shared/settings"
	"decisiongateway/shared/validate"
	"github.com/valyala/fastjson"
)

func init() {
	register(settings.KindRouter, func(s *settings.Settings) Adapter {
		return &router{base: s.UpstreamURL, timeoutMS: uint32(s.UpstreamTimeout() / time.Millisecond)}
	})
}

// TopLogprobs is how many alternatives per token the router is asked for:
// the most OpenAI-compatible APIs accept.
const TopLogprobs = 20

// routerSystemPrompt tells the model what the user message and the schema
// mean. The schema enforces the shape; this says what the numbers are.
const routerSystemPrompt = "You answer decision questions about a shared state. " +
	"The user message is JSON with a \"state\" and named \"questions\"; judge each question on its own against the state, " +
	"following its \"instructions\". " +
	"choice: \"criteria\" maps option names to descriptions; pick the option that fits best and give every option a probability. " +
	"score: \"criteria\" is an ordered array of level descriptions; pick the index (from 0) of the level that fits best and give every level a probability. " +
	"noul: say whether the condition described by the instructions and criteria.true holds, and the probability that it does. " +
	"Probabilities are numbers from 0 to 1; those of one question sum to 1. Reply with JSON that follows the schema, nothing else."

// router is the router protocol adapter (spec §1.3, mode router-adapted):
// an explicit conversion to OpenAI-compatible Chat Completions. The
// questions become one structured-output request whose JSON schema forces
// one answer object per question; the reply is mapped back to native
// answers, with distributions taken from token log-probabilities where the
// router returns them (schema/router.md).
type router struct {
	base string
	// timeoutMS leaves the function time to settle after a slow router.
	timeoutMS uint32
	d         decision
	req       jsonw.Writer
	prompt    jsonw.Writer
	out       nativeBody
	reply     fastjson.Parser
	cp        fastjson.Parser
	lp        logprobs
	probs     []float64
	stated    []float64
	num       validate.Numbers
}

func (r *router) Mode() string { return settings.ResponseMode(settings.KindRouter) }

// Check rejects top-level extension fields: Chat Completions has no place
// for them (spec §2.1).
func (r *router) Check(c *Call) *validate.Error { return checkNoExtensions(c, "router") }

func (r *router) Prepare(c *Call) (abi.Await, *Outcome) {
	if !r.d.parse(c) {
		o := platformFailure(contract.InternalError, "the request could not be converted", nil)
		return abi.Await{}, &o
	}
	return abi.Await{Fetch: jsonPost(r.base+"/chat/completions", r.request(c.Model), r.timeoutMS)}, nil
}

func (r *router) Answer(c *Call, res *abi.Resume) Outcome {
	// The answer is read against the questions: parse them again, as this
	// may be another instance than the one that prepared the call.
	if !r.d.parse(c) {
		return platformFailure(contract.InternalError, "the request could not be converted", nil)
	}
	f, failed := fetched(res)
	if failed != nil {
		return *failed
	}
	return r.answer(c, f)
}

// request writes the Chat Completions request: a system message, the state
// and questions as one JSON user message, a strict response_format schema
// and a request for log-probabilities. Temperature 0: a decision should not
// depend on sampling luck.
func (r *router) request(model string) []byte {
	p := &r.prompt
	*p = jsonw.Writer{B: p.B[:0]}
	p.Open('{')
	p.Key("state")
	raw(p, r.d.state)
	p.Key("questions")
	p.Open('{')
	for i := range r.d.questions {
		p.Key(r.d.questions[i].Name)
		raw(p, r.d.questions[i].val)
	}
	p.Close('}')
	p.Close('}')

	w := &r.req
	*w = jsonw.Writer{B: w.B[:0]}
	w.Open('{')
	w.FieldString("model", model)
	w.Key("messages")
	w.Open('[')
	w.Open('{')
	w.FieldString("role", "system")
	w.FieldString("content", routerSystemPrompt)
	w.Close('}')
	w.Open('{')
	w.FieldString("role", "user")
	w.Key("content")
	w.Raw(nil)
	w.B = jsonw.AppendString(w.B, string(p.B))
	w.Close('}')
	w.Close(']')
	w.Key("response_format")
	w.Open('{')
	w.FieldString("type", "json_schema")
	w.Key("json_schema")
	w.Open('{')
	w.FieldString("name", "decision_answers")
	w.FieldBool("strict", true)
	w.Key("schema")
	r.schema(w)
	w.Close('}')
	w.Close('}')
	w.FieldBool("logprobs", true)
	w.FieldInt("top_logprobs", TopLogprobs)
	w.FieldInt("temperature", 0)
	w.Close('}')
	return w.B
}

// schema writes the strict JSON schema of the reply:
// {"answers":{<question>:<answer object>}} with every question required.
// Each answer object puts the committed value first (choice, level, holds)
// so its token carries the model's uncertainty before any stated numbers.
func (r *router) schema(w *jsonw.Writer) {
	obj := func(required ...string) {
		w.FieldString("type", "object")
		w.FieldBool("additionalProperties", false)
		w.Key("required")
		w.Open('[')
		for _, k := range required {
			w.String(k)
		}
		w.Close(']')
		w.Key("properties")
		w.Open('{')
	}
	numbers := func(names func(i int) string, n int) {
		w.Open('{')
		w.FieldString("type", "object")
		w.FieldBool("additionalProperties", false)
		w.Key("required")
		w.Open('[')
		for i := 0; i < n; i++ {
			w.String(names(i))
		}
		w.Close(']')
		w.Key("properties")
		w.Open('{')
		for i := 0; i < n; i++ {
			w.Key(names(i))
			w.Open('{')
			w.FieldString("type", "number")
			w.Close('}')
		}
		w.Close('}')
		w.Close('}')
	}

	w.Open('{')
	obj("answers")
	w.Key("answers")
	w.Open('{')
	w.FieldString("type", "object")
	w.FieldBool("additionalProperties", false)
	w.Key("required")
	w.Open('[')
	for i := range r.d.questions {
		w.String(r.d.questions[i].Name)
	}
	w.Close(']')
	w.Key("properties")
	w.Open('{')
	for i := range r.d.questions {
		q := &r.d.questions[i]
		w.Key(q.Name)
		w.Open('{')
		switch q.Type {
		case validate.Choice:
			obj("choice", "probabilities")
			w.Key("choice")
			w.Open('{')
			w.FieldString("type", "string")
			w.Key("enum")
			w.Open('[')
			for _, o := range q.Options {
				w.String(o)
			}
			w.Close(']')
			w.Close('}')
			w.Key("probabilities")
			numbers(func(i int) string { return q.Options[i] }, len(q.Options))
		case validate.Score:
			obj("level", "probabilities")
			w.Key("level")
			w.Open('{')
			w.FieldString("type", "integer")
			w.Key("enum")
			w.Open('[')
			for l := 0; l < q.Levels; l++ {
				w.Int(int64(l))
			}
			w.Close(']')
			w.Close('}')
			w.Key("probabilities")
			numbers(itoa, q.Levels)
		case validate.Noul:
			obj("holds", "probability")
			w.Key("holds")
			w.Open('{')
			w.FieldString("type", "boolean")
			w.Close('}')
			w.Key("probability")
			w.Open('{')
			w.FieldString("type", "number")
			w.Close('}')
		}
		w.Close('}') // properties
		w.Close('}')
	}
	w.Close('}') // properties of answers
	w.Close('}') // answers
	w.Close('}') // properties of the root
	w.Close('}')
}

// answer classifies the router's HTTP answer.
func (r *router) answer(c *Call, res *abi.FetchResponse) Outcome {
	isJSON := validate.IsJSONContentType(res.Headers.Joined("content-type")) && fastjson.ValidateBytes(res.Body) == nil
	switch {
	case res.Status >= 200 && res.Status < 300 && isJSON:
	case res.Status >= 400 && res.Status < 600 && isJSON:
		// A valid JSON error keeps its status and body (spec §7 rule 1).
		code := upstreamErrorCode(res.Status)
		h := policy.ForwardUpstream(res.Headers, true)
		h.Set(policy.HErrorSource, policy.SourceUpstream)
		h.Set(policy.HErrorCode, string(code))
		return Outcome{Status: res.Status, Headers: h, Body: res.Body, Code: code, Source: policy.SourceUpstream, InputTokens: -1, OutputTokens: -1}
	case res.Status == 429 || res.Status == 503:
		return platformFailureAs(res.Status, contract.ProviderBusy, "the router is busy; retry after the delay it gave", res.Headers)
	case res.Status >= 200 && res.Status < 300:
		return platformFailure(contract.UpstreamInvalidResponse, "the router answered with something other than JSON", res.Headers)
	default:
		return platformFailure(contract.UpstreamInvalidResponse, "the router answered with an unusable response", res.Headers)
	}

	reply, err := r.reply.ParseBytes(res.Body)
	if err != nil {
		return platformFailure(contract.UpstreamInvalidResponse, "the router's reply is not JSON", res.Headers)
	}
	choices := reply.GetArray("choices")
	if len(choices) == 0 {
		if reply.Get("error") != nil {
			// Some routers report a provider failure inside a 200.
			return platformFailure(contract.UpstreamError, "the router reported an error", res.Headers)
		}
		return platformFailure(contract.UpstreamInvalidResponse, "the router's reply has no choices", res.Headers)
	}
	choice := choices[0]
	msg := choice.Get("message")
	if len(msg.GetStringBytes("refusal")) > 0 {
		return platformFailure(contract.InvalidUpstreamAnswer, "the router's model refused to answer", res.Headers)
	}
	if string(choice.GetStringBytes("finish_reason")) == "length" {
		return platformFailure(contract.InvalidUpstreamAnswer, "the router's answer was cut off at its length limit", res.Headers)
	}
	content := msg.GetStringBytes("content")
	parsed, err := r.cp.ParseBytes(content)
	if err != nil {
		return platformFailure(contract.InvalidUpstreamAnswer, "the router's answer is not the requested JSON", res.Headers)
	}
	answers := parsed.Get("answers")
	if answers == nil || answers.Type() != fastjson.TypeObject {
		return platformFailure(contract.InvalidUpstreamAnswer, "the router's answer has no answers object", res.Headers)
	}

	model := c.Model
	if m := reply.GetStringBytes("model"); len(m) > 0 {
		model = string(m)
	}
	r.lp.index(content, choice.Get("logprobs", "content"))
	r.lp.locate(content, r.d.questions)
	r.out.begin(model, true)
	for i := range r.d.questions {
		q := &r.d.questions[i]
		if !r.mapAnswer(q, answers.Get(q.Name), r.lp.at[i]) {
			return platformFailure(contract.InvalidUpstreamAnswer, "the router's answer to "+quoteName(q.Name)+" cannot be mapped", res.Headers)
		}
	}
	in, out := int64(-1), int64(-1)
	if u := reply.Get("usage"); u != nil {
		in, out = tokenCount(&r.num, u.Get("prompt_tokens")), tokenCount(&r.num, u.Get("completion_tokens"))
	}
	return convertedSuccess(c, r.out.end(in, out), model, in, out, res.Headers)
}

// mapAnswer writes one question's native answer from the model's reply a;
// at is where the committed value starts in the content (-1: unknown). The
// distribution comes from the log-probabilities at that value when the
// router gave them, otherwise from the model's stated probabilities,
// normalised.
func (r *router) mapAnswer(q *questionView, a *fastjson.Value, at int) bool {
	if a == nil || a.Type() != fastjson.TypeObject {
		return false
	}
	var texts func(i int) string
	n, picked := 0, -1
	switch q.Type {
	case validate.Choice:
		n, texts = len(q.Options), func(i int) string { return string(jsonw.AppendMinimalContent(nil, q.Options[i])) + `"` }
		if v := a.Get("choice"); v != nil && v.Type() == fastjson.TypeString {
			picked = indexOf(q.Options, string(v.GetStringBytes()))
		}
		r.statedFrom(a.Get("probabilities"), n, func(i int) string { return q.Options[i] })
	case validate.Score:
		n, texts = q.Levels, itoa
		if l, ok := r.num.Float(a.Get("level")); ok && l >= 0 && l < float64(n) && l == float64(int(l)) {
			picked = int(l)
		}
		r.statedFrom(a.Get("probabilities"), n, itoa)
	case validate.Noul:
		n, texts = 2, func(i int) string { return [2]string{"true", "false"}[i] }
		if h := a.Get("holds"); h != nil {
			switch h.Type() {
			case fastjson.TypeTrue:
				picked = 0
			case fastjson.TypeFalse:
				picked = 1
			}
		}
		r.stated = append(r.stated[:0], nan(), nan())
		if p, ok := r.num.Float(a.Get("probability")); ok && p >= 0 && p <= 1 {
			r.stated[0], r.stated[1] = p, 1-p
		}
	}
	if !normalize(r.stated) {
		if picked < 0 {
			return false
		}
		for i := range r.stated {
			r.stated[i] = 0
		}
		r.stated[picked] = 1
	}
	r.probs = append(r.probs[:0], r.stated...)
	r.lp.distribution(at, n, texts, q.Type == validate.Choice, r.stated, r.probs)

	switch q.Type {
	case validate.Noul:
		r.out.noul(q, r.probs[0])
	case validate.Score:
		r.out.score(q, r.probs, nan(), r.probs[argmax(r.probs)])
	case validate.Choice:
		if picked < 0 {
			picked = argmax(r.probs)
		}
		r.out.choice(q, r.probs, picked, r.probs[picked])
	}
	return true
}

// statedFrom reads the model's stated probabilities, keyed by names(i),
// into r.stated; a missing or unusable entry is NaN (treated as zero).
func (r *router) statedFrom(v *fastjson.Value, n int, names func(i int) string) {
	r.stated = r.stated[:0]
	o := v.GetObject()
	for i := 0; i < n; i++ {
		p := nan()
		if o != nil {
			if f, ok := r.num.Float(o.Get(names(i))); ok {
				p = f
			}
		}
		r.stated = append(r.stated, p)
	}
}

// Models: a router's model list is its own catalogue, not this contract's,
// so listing is not offered (spec §4.2 rule 2).
func (r *router) Models(*abi.Resume) (*abi.FetchRequest, abi.Response) {
	return nil, policy.Error(contract.ModelListingNotSupported, "the router upstream does not offer a model list; name the model directly")
}
