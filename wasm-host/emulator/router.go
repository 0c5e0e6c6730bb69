package emulator

import (
	"math"
	"net/http"
	"sort"
	"strings"

	"github.com/valyala/fastjson"

	"decisiongateway/shared/jsonw"
)

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

// escape writes s as JSON string content the way model output spells it
// (jsonw's minimal escaping, which the router adapter matches).
func escape(s string) string { return string(jsonw.AppendMinimalContent(nil, s)) }

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
