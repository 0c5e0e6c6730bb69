package emulator

import (
	"net/http"
	"strings"

	"github.com/valyala/fastjson"

	"decisiongateway/shared/jsonw"
)

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
	writeUsage(&out, body, produced)
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
