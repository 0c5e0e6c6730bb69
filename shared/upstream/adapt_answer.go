package upstream

import (
	"math"
	"strconv"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/jsonw"
	"decisiongateway/shared/policy"
	"decisiongateway/shared/validate"
	"github.com/valyala/fastjson"
)

// nativeBody writes the native success body (spec §2.3, §2.4) of a
// converted answer. The converting adapters hand it distributions and it
// writes them in the one shape every client parses; the result is then
// validated like any upstream answer, so a mapping bug surfaces as a 502 and
// never as a malformed success.
type nativeBody struct {
	w   jsonw.Writer
	num []byte
	txt []byte
	// round writes probabilities with at most six decimals. The router's
	// derived distributions use it (their last digits are noise); the edge
	// binding's own numbers are written as it sent them.
	round bool
}

// begin starts the body with the resolved model.
func (n *nativeBody) begin(model string, round bool) {
	n.w, n.round = jsonw.Writer{B: n.w.B[:0]}, round
	n.w.Open('{')
	n.w.FieldString("model", model)
	n.w.Key("answers")
	n.w.Open('{')
}

func (n *nativeBody) number(f float64) {
	if n.round {
		f = math.Round(f*1e6) / 1e6
	}
	n.num = appendNumber(n.num[:0], f)
	n.w.Raw(n.num)
}

// choice writes a choice answer: probs are in option order and choice is an
// index into them.
func (n *nativeBody) choice(q *questionView, probs []float64, choice int, confidence float64) {
	n.w.Key(q.Name)
	n.w.Open('{')
	n.w.FieldString("type", "choice")
	n.w.FieldString("choice", q.Options[choice])
	n.w.Key("probabilities")
	n.w.Open('{')
	for i, name := range q.Options {
		n.w.Key(name)
		n.number(probs[i])
	}
	n.w.Close('}')
	n.w.Key("confidence")
	n.number(confidence)
	n.w.Close('}')
}

// score writes a score answer. When score is NaN it is computed from the
// written probabilities, so it equals their weighted index exactly.
func (n *nativeBody) score(q *questionView, probs []float64, score, confidence float64) {
	n.w.Key(q.Name)
	n.w.Open('{')
	n.w.FieldString("type", "score")
	if math.IsNaN(score) {
		score = 0
		for i, p := range probs {
			if n.round {
				p = math.Round(p*1e6) / 1e6
			}
			score += float64(i) * p
		}
		if hi := float64(len(probs) - 1); score > hi { // rounding drift
			score = hi
		}
	}
	n.w.Key("score")
	n.number(score)
	n.w.Key("probabilities")
	n.w.Open('{')
	for i := range probs {
		n.w.Key(strconv.Itoa(i))
		n.number(probs[i])
	}
	n.w.Close('}')
	n.w.Key("confidence")
	n.number(confidence)
	n.w.Key("legend")
	n.w.Open('{')
	for i, d := range q.descriptions {
		n.w.Key(strconv.Itoa(i))
		n.txt = descriptionText(n.txt[:0], d)
		n.w.String(string(n.txt))
	}
	n.w.Close('}')
	n.w.Close('}')
}

// noul writes a noul answer.
func (n *nativeBody) noul(q *questionView, p float64) {
	n.w.Key(q.Name)
	n.w.Open('{')
	n.w.FieldString("type", "noul")
	n.w.Key("noul")
	n.number(p)
	n.w.Close('}')
}

// end closes the body; usage is written with the counts that are known
// (-1 is unknown) and left out when neither is (spec §2.3 rule 1).
func (n *nativeBody) end(in, out int64) []byte {
	n.w.Close('}')
	if in >= 0 || out >= 0 {
		n.w.Key("usage")
		n.w.Open('{')
		if in >= 0 {
			n.w.FieldInt("input_tokens", in)
		}
		if out >= 0 {
			n.w.FieldInt("output_tokens", out)
		}
		n.w.Close('}')
	}
	n.w.Close('}')
	return n.w.B
}

// appendNumber writes f as a JSON number: plain decimals in the range
// answers use, exponent form outside it. A non-finite value has no JSON
// form and is written as null, which answer validation then refuses.
func appendNumber(b []byte, f float64) []byte {
	switch a := math.Abs(f); {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return append(b, "null"...)
	case a == 0 || a >= 1e-6 && a < 1e15:
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// tokenCount reads a token count with num: a non-negative integer, else -1
// (unknown, as the ledger keeps it).
func tokenCount(num *validate.Numbers, v *fastjson.Value) int64 {
	f, ok := num.Float(v)
	if !ok || f < 0 || f != math.Trunc(f) || f > 1<<53 {
		return -1
	}
	return int64(f)
}

// normalize makes p a distribution: non-finite and negative entries count
// as zero, the rest is scaled to sum to one. It reports false when nothing
// is left to scale.
func normalize(p []float64) bool {
	var sum float64
	for i, v := range p {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			p[i] = 0
			continue
		}
		sum += v
	}
	if sum <= 0 {
		return false
	}
	for i := range p {
		p[i] /= sum
	}
	return true
}

// argmax is the index of the largest entry, the first one on a tie.
func argmax(p []float64) int {
	best := 0
	for i, v := range p {
		if v > p[best] {
			best = i
		}
	}
	return best
}

// convertedSuccess validates a converted body against the request and
// makes it the call's Outcome. The body is platform-built, so a failure
// here is reported by the platform.
func convertedSuccess(c *Call, body []byte, model string, in, out int64, upstream abi.Headers) Outcome {
	if verr := c.Validator.ValidateAnswer(c.Request, body); verr != nil {
		return platformFailure(verr.Code, verr.Message, upstream)
	}
	h := abi.Headers{{Name: policy.HContentType, Value: policy.JSONType}}
	h = append(h, policy.ForwardUpstream(upstream, false)...)
	return Outcome{Status: 200, Headers: h, Body: body, OK: true, Model: model, InputTokens: in, OutputTokens: out}
}

func itoa(i int) string { return strconv.Itoa(i) }

func nan() float64 { return math.NaN() }
