package emulator

import (
	"math"
	"net/http"
	"sort"
	"strings"

	"decisiongateway/shared/jsonw"
	"decisiongateway/shared/validate"
	"github.com/valyala/fastjson"
)

// vendorService answers POST /vendor/v1/service in the decision API's own
// shape, validating the request as a vendor would.
func (h *handler) vendorService(w http.ResponseWriter, r *http.Request) {
	body := read(w, r)
	if body == nil {
		return
	}
	var v validate.Validator
	req, verr := v.Validate(body)
	if verr != nil {
		writeJSON(w, verr.Status(), errorBody("invalid_request_error", verr.Error()))
		return
	}
	model := "model-latest"
	if req.HasModel {
		model = req.Model
	}
	var p fastjson.Parser
	root, _ := p.ParseBytes(body)
	state := words(text(root.Get("state")))
	qs := nativeQuestions(root.GetObject("questions"))

	var out jsonw.Writer
	out.Open('{')
	out.FieldString("model", resolved(model))
	out.Key("answers")
	out.Open('{')
	var produced int64
	for i := range qs {
		a := decide(state, &qs[i])
		out.Key(qs[i].name)
		writeNative(&out, &qs[i], &a)
		produced += int64(len(a.probs) + 2)
	}
	out.Close('}')
	out.Key("usage")
	out.Open('{')
	out.FieldInt("input_tokens", countWords(body))
	out.FieldInt("output_tokens", produced)
	out.Close('}')
	out.Close('}')
	w.Header().Set("X-Vendor-Request-Id", h.requestID())
	writeJSON(w, http.StatusOK, out.B)
	h.log.Debug("upstream emulator answered", "protocol", "vendor", "model", model, "questions", len(qs))
}

// writeNative writes one answer object of spec §2.4.
func writeNative(w *jsonw.Writer, q *question, a *answer) {
	w.Open('{')
	w.FieldString("type", q.typ)
	switch q.typ {
	case "noul":
		w.Key("noul")
		number(w, a.noul)
	case "choice":
		w.FieldString("choice", q.names[a.pick])
		w.Key("probabilities")
		distribution(w, q.names, a.probs)
		w.Key("confidence")
		number(w, a.confidence)
	case "score":
		w.Key("score")
		number(w, a.score)
		w.Key("probabilities")
		distribution(w, q.names, a.probs)
		w.Key("confidence")
		number(w, a.confidence)
		w.Key("legend")
		w.Open('{')
		for i, t := range q.texts {
			w.FieldString(itoa(i), strings.TrimSpace(t))
		}
		w.Close('}')
	}
	w.Close('}')
}

func distribution(w *jsonw.Writer, names []string, probs []float64) {
	w.Open('{')
	for i, n := range names {
		w.Key(n)
		number(w, probs[i])
	}
	w.Close('}')
}

// vendorModels answers GET /vendor/v1/models.
func (h *handler) vendorModels(w http.ResponseWriter, r *http.Request) {
	var out jsonw.Writer
	out.Open('{')
	out.Key("models")
	out.Open('[')
	out.Open('{')
	out.FieldString("name", "emulator/model-latest")
	out.FieldString("description", "Decision Gateway's vendor API emulator (--dev): a deterministic lexical scorer, not a model. It answers any model name.")
	out.FieldString("release_date", "2026-09-18")
	out.FieldBool("emulator", true)
	out.Close('}')
	out.Close(']')
	out.Close('}')
	w.Header().Set("X-Vendor-Request-Id", h.requestID())
	writeJSON(w, http.StatusOK, out.B)
}

// edgeRun answers POST /edge/run/{model} as the Workers AI REST API does,
// for the binding contract of schema/binding.md. Like a binding, it
// decides which explicit vendor/… names it serves: vendor/model and
// vendor/model-*.
func (h *handler) edgeRun(w http.ResponseWriter, r *http.Request) {
	model := r.PathValue("model")
	body := read(w, r)
	if body == nil {
		return
	}
	if model != "vendor/model" && !strings.HasPrefix(model, "vendor/model-") {
		writeJSON(w, http.StatusBadRequest, restError(5007, "no such model "+model))
		return
	}
	var p fastjson.Parser
	in, err := p.ParseBytes(body)
	if err != nil || in.Get("questions") == nil || in.Get("questions").Type() != fastjson.TypeArray {
		writeJSON(w, http.StatusBadRequest, restError(5006, "the input is not a decision binding input (schema/binding.md)"))
		return
	}
	state := words(text(in.Get("state")))
	var out jsonw.Writer
	out.Open('{')
	out.Key("result")
	out.Open('{')
	out.FieldString("model", resolved(model))
	out.Key("answers")
	out.Open('[')
	var produced int64
	for _, qv := range in.GetArray("questions") {
		q := bindingQuestion(qv)
		a := decide(state, &q)
		out.Open('{')
		out.FieldString("name", q.name)
		if q.typ == "noul" {
			out.Key("noul")
			number(&out, a.noul)
		} else {
			if q.typ == "choice" {
				out.FieldString("choice", q.names[a.pick])
			} else {
				out.Key("score")
				number(&out, a.score)
			}
			out.Key("probabilities")
			out.Open('[')
			for _, pr := range a.probs {
				number(&out, pr)
			}
			out.Close(']')
			out.Key("confidence")
			number(&out, a.confidence)
		}
		out.Close('}')
		produced += int64(len(a.probs) + 2)
	}
	out.Close(']')
	out.Key("usage")
	out.Open('{')
	out.FieldInt("input_tokens", countWords(body))
	out.FieldInt("output_tokens", produced)
	out.Close('}')
	out.Close('}')
	out.FieldBool("success", true)
	out.Key("errors")
	out.Open('[')
	out.Close(']')
	out.Key("messages")
	out.Open('[')
	out.Close(']')
	out.Close('}')
	writeJSON(w, http.StatusOK, out.B)
	h.log.Debug("upstream emulator answered", "protocol", "edge", "model", model)
}

// bindingQuestion reads one question of the binding input.
func bindingQuestion(v *fastjson.Value) question {
	q := question{name: string(v.GetStringBytes("name")), typ: string(v.GetStringBytes("type")), instructions: text(v.Get("instructions"))}
	switch q.typ {
	case "choice":
		for _, o := range v.GetArray("options") {
			q.names = append(q.names, string(o.GetStringBytes("name")))
			q.texts = append(q.texts, text(o.Get("description")))
		}
	case "score":
		for i, d := range v.GetArray("levels") {
			q.names = append(q.names, itoa(i))
			q.texts = append(q.texts, text(d))
		}
	default:
		q.typ = "noul"
		q.whenTrue, q.whenFalse = noulTexts(q.instructions, v.Get("criteria"))
	}
	return q
}

// restError is a Workers AI REST failure envelope.
func restError(code int, msg string) []byte {
	var w jsonw.Writer
	w.Open('{')
	w.Key("result")
	w.Null()
	w.FieldBool("success", false)
	w.Key("errors")
	w.Open('[')
	w.Open('{')
	w.FieldInt("code", int64(code))
	w.FieldString("message", "emulator: "+msg)
	w.Close('}')
	w.Close(']')
	w.Key("messages")
	w.Open('[')
	w.Close(']')
	w.Close('}')
	return w.B
}

// routerModels answers GET /router/models in the OpenAI list shape. The
// gateway does not list router models (spec §4.2); this is for a person
// poking at the emulator.
func (h *handler) routerModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, []byte(`{"object":"list","data":[{"id":"emulator/model-latest","object":"model","owned_by":"decision-gateway-emulator"}]}`))
}

// token is one token of an emulated completion and its alternatives.
type token struct {
	text string
	alts []alternative
}

type alternative struct {
	text string
	p    float64
}

// completion accumulates content as tokens: literal JSON runs, and one
// token per committed value (a choice name with its closing quote, a level
// index, true or false) whose alternatives are the other values.
type completion struct {
	tokens []token
	lit    strings.Builder
}

func (c *completion) literal(s string) { c.lit.WriteString(s) }

func (c *completion) value(text string, alts []alternative) {
	if c.lit.Len() > 0 {
		c.tokens = append(c.tokens, token{text: c.lit.String()})
		c.lit.Reset()
	}
	c.tokens = append(c.tokens, token{text: text, alts: alts})
}

func (c *completion) content() string {
	c.value("", nil)
	var b strings.Builder
	for _, t := range c.tokens {
		b.WriteString(t.text)
	}
	return b.String()
}

// routerChat answers POST /router/chat/completions for the prompt and
// schema the gateway's router adapter sends (schema/router.md), with
// log-probabilities when asked.
func (h *handler) routerChat(w http.ResponseWriter, r *http.Request) {
	body := read(w, r)
	if body == nil {
		return
	}
	var p, pp fastjson.Parser
	req, err := p.ParseBytes(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody("invalid_request_error", "the body is not JSON"))
		return
	}
	var prompt []byte
	for _, m := range req.GetArray("messages") {
		if string(m.GetStringBytes("role")) == "user" {
			prompt = m.GetStringBytes("content")
		}
	}
	in, err := pp.ParseBytes(prompt)
	if err != nil || in.GetObject("questions") == nil {
		writeJSON(w, http.StatusBadRequest, errorBody("invalid_request_error",
			"only the Decision Gateway's decision prompts are answered: the last user message must be JSON with state and questions"))
		return
	}
	model := string(req.GetStringBytes("model"))
	top := 0
	if req.GetBool("logprobs") {
		top = req.GetInt("top_logprobs")
	}
	state := words(text(in.Get("state")))
	qs := nativeQuestions(in.GetObject("questions"))

	var c completion
	c.literal(`{"answers":{`)
	for i := range qs {
		q := &qs[i]
		a := decide(state, q)
		if i > 0 {
			c.literal(",")
		}
		c.literal(quote(q.name) + ":{")
		switch q.typ {
		case "choice":
			c.literal(`"choice":"`)
			c.value(escape(q.names[a.pick])+`"`, alternatives(q.names, a.probs, func(n string) string { return escape(n) + `"` }, top))
			c.literal(`,"probabilities":` + stated(q.names, a.probs))
		case "score":
			c.literal(`"level":`)
			c.value(itoa(a.pick), alternatives(q.names, a.probs, func(n string) string { return n }, top))
			c.literal(`,"probabilities":` + stated(q.names, a.probs))
		default:
			c.literal(`"holds":`)
			holds := [2]string{"false", "true"}[btoi(a.noul >= 0.5)]
			c.value(holds, alternatives([]string{"true", "false"}, []float64{a.noul, 1 - a.noul}, func(n string) string { return n }, top))
			c.literal(`,"probability":` + ftoa(a.noul))
		}
		c.literal("}")
	}
	c.literal("}}")
	content := c.content()

	var out jsonw.Writer
	out.Open('{')
	id := h.requestID()
	out.FieldString("id", "chatcmpl-"+id)
	out.FieldString("object", "chat.completion")
	out.FieldString("model", resolved(model))
	out.FieldString("system_fingerprint", "decision-gateway-emulator")
	out.Key("choices")
	out.Open('[')
	out.Open('{')
	out.FieldInt("index", 0)
	out.Key("message")
	out.Open('{')
	out.FieldString("role", "assistant")
	out.FieldString("content", content)
	out.Key("refusal")
	out.Null()
	out.Close('}')
	out.Key("logprobs")
	if req.GetBool("logprobs") {
		writeLogprobs(&out, c.tokens)
	} else {
		out.Null()
	}
	out.FieldString("finish_reason", "stop")
	out.Close('}')
	out.Close(']')
	prompted, completed := countWords(body), int64(len(c.tokens))
	out.Key("usage")
	out.Open('{')
	out.FieldInt("prompt_tokens", prompted)
	out.FieldInt("completion_tokens", completed)
	out.FieldInt("total_tokens", prompted+completed)
	out.Close('}')
	out.Close('}')
	w.Header().Set("X-Request-Id", id)
	writeJSON(w, http.StatusOK, out.B)
	h.log.Debug("upstream emulator answered", "protocol", "router", "model", model, "questions", len(qs))
}

// alternatives lists up to top values by probability, most probable first,
// leaving out impossible ones (log 0 has no JSON form).
func alternatives(names []string, probs []float64, spell func(string) string, top int) []alternative {
	var out []alternative
	for i, n := range names {
		if probs[i] > 0 {
			out = append(out, alternative{spell(n), probs[i]})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].p > out[j].p })
	if len(out) > top {
		out = out[:top]
	}
	return out
}

func writeLogprobs(w *jsonw.Writer, tokens []token) {
	w.Open('{')
	w.Key("content")
	w.Open('[')
	for _, t := range tokens {
		if t.text == "" {
			continue
		}
		w.Open('{')
		w.FieldString("token", t.text)
		w.Key("logprob")
		lp := 0.0
		for _, a := range t.alts {
			if a.text == t.text {
				lp = math.Log(a.p)
			}
		}
		number(w, lp)
		w.Key("top_logprobs")
		w.Open('[')
		for _, a := range t.alts {
			w.Open('{')
			w.FieldString("token", a.text)
			w.Key("logprob")
			number(w, math.Log(a.p))
			w.Close('}')
		}
		w.Close(']')
		w.Close('}')
	}
	w.Close(']')
	w.Close('}')
}

// stated writes a distribution object as the model "states" it.
func stated(names []string, probs []float64) string {
	var w jsonw.Writer
	distribution(&w, names, probs)
	return string(w.B)
}

// escape writes s as JSON string content the way model output spells it:
// only '"', '\\' and control characters escaped.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[c>>4])
			b.WriteByte("0123456789abcdef"[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func quote(s string) string { return `"` + escape(s) + `"` }

func ftoa(f float64) string {
	var w jsonw.Writer
	number(&w, f)
	return string(w.B)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
