package emulator

import (
	"net/http"
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
	writeUsage(&out, body, produced)
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

// writeUsage writes the vendor shape's usage member (the edge binding's
// answer carries the same one): input words as tokens, and what was
// produced.
func writeUsage(w *jsonw.Writer, body []byte, produced int64) {
	w.Key("usage")
	w.Open('{')
	w.FieldInt("input_tokens", countWords(body))
	w.FieldInt("output_tokens", produced)
	w.Close('}')
}
