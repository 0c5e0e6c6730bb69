package validate

import (
	"math"
	"strconv"

	"decisiongateway/shared/contract"
	"github.com/valyala/fastjson"
)

// tolerance is the two-decimal display tolerance of spec §2.3 rule 3, plus
// room for the float64 rounding of the sums themselves.
const tolerance = 0.01 + 1e-9

// maxAnswerDepth bounds the nesting of an upstream answer. The spec sets no
// limit for answers; this is the deepest nesting fastjson's parser follows
// (it counts the scalar leaves as a level too, hence the minus one), so
// extension fields may nest deeply but never deeper than the parser can go.
const maxAnswerDepth = fastjson.MaxDepth - 1

// ValidateAnswer checks an upstream success body against the validated
// request it answers (spec §2.3, §2.4): a JSON object with a string model, an
// answers object with exactly one entry per question, each entry shaped for
// its question type, and an optional usage object. Unknown members are
// allowed anywhere. The body is not modified and not rebuilt; a failure is
// code invalid_upstream_answer (status 502).
//
// req must come from the last Validate call on the same Validator; checking
// an answer does not invalidate it.
func (v *Validator) ValidateAnswer(req *Request, body []byte) *Error {
	if se := v.s.scan(body, maxAnswerDepth); se.code != "" {
		return v.fail(contract.InvalidUpstreamAnswer, nil, "the answer is not acceptable JSON: "+v.failScan(se).Message)
	}
	root, err := v.ap.ParseBytes(body)
	if err != nil { // unreachable after the scan; fails closed if fastjson changes
		return v.fail(contract.InvalidUpstreamAnswer, nil, "the answer is not valid JSON")
	}
	o := root.GetObject()
	if o == nil {
		return v.fail(contract.InvalidUpstreamAnswer, nil, "the answer must be a JSON object")
	}
	model, ok := stringOf(o.Get("model"))
	if !ok {
		return v.fail(contract.InvalidUpstreamAnswer, seg1("model"), "must be a string")
	}
	meta := AnswerMeta{Model: model, InputTokens: -1, OutputTokens: -1}
	if u := o.Get("usage"); u != nil && u.Type() != fastjson.TypeNull {
		uo := u.GetObject()
		if uo == nil {
			return v.fail(contract.InvalidUpstreamAnswer, seg1("usage"), "must be an object")
		}
		for _, k := range [...]string{"input_tokens", "output_tokens"} {
			t := uo.Get(k)
			if t == nil || t.Type() == fastjson.TypeNull {
				continue // unknown, stays unknown in the ledger
			}
			n, ok := v.num.Float(t)
			if !ok || n < 0 || n != math.Trunc(n) {
				return v.fail(contract.InvalidUpstreamAnswer, append(seg1("usage"), pathSeg{key: k, idx: -1}), "must be a non-negative integer")
			}
			// 120 exactly; 120.0 and 1.2e2 (which fastjson will not read as
			// integers) by their value; beyond int64, unknown.
			count, err := t.Int64()
			if err != nil {
				count = -1
				if n < 1<<63 {
					count = int64(n)
				}
			}
			if k == "input_tokens" {
				meta.InputTokens = count
			} else {
				meta.OutputTokens = count
			}
		}
	}
	as := o.Get("answers").GetObject()
	if as == nil || as.Len() != len(req.Questions) {
		return v.fail(contract.InvalidUpstreamAnswer, seg1("answers"), "must be an object with exactly one entry per question")
	}
	for i := range req.Questions {
		if e := v.answer(&req.Questions[i], as.Get(req.Questions[i].Name)); e != nil {
			return e
		}
	}
	// The parser's buffer is reused by the next answer; the model is kept
	// in the Validator's own, so accepting an answer allocates nothing.
	v.model = append(v.model[:0], meta.Model...)
	meta.Model = str(v.model)
	v.meta = meta
	return nil
}

// AnswerMeta is what the ledger records of an accepted answer.
type AnswerMeta struct {
	Model                     string // the answer's model, as the upstream resolved it
	InputTokens, OutputTokens int64  // -1: absent or null
}

// Answered returns the AnswerMeta of the last answer ValidateAnswer
// accepted, read while it was checked rather than by parsing it again. Its
// Model is valid until the next ValidateAnswer.
func (v *Validator) Answered() AnswerMeta { return v.meta }

func seg1(k string) []pathSeg { return []pathSeg{{key: k, idx: -1}} }

// answer checks the entry of one question.
func (v *Validator) answer(q *Question, a *fastjson.Value) *Error {
	at := func(k string) []pathSeg {
		p := []pathSeg{{key: "answers", idx: -1}, {key: q.Name, idx: -1}}
		if k != "" {
			p = append(p, pathSeg{key: k, idx: -1})
		}
		return p
	}
	o := a.GetObject()
	if o == nil {
		return v.fail(contract.InvalidUpstreamAnswer, at(""), "missing answer object")
	}
	if t, _ := stringOf(o.Get("type")); t != q.Type.String() {
		return v.fail(contract.InvalidUpstreamAnswer, at("type"), `must be "`+q.Type.String()+`"`)
	}
	if q.Type == Noul {
		if n, ok := v.num.Float(o.Get("noul")); !ok || n < 0 || n > 1 {
			return v.fail(contract.InvalidUpstreamAnswer, at("noul"), "must be a number from 0 to 1")
		}
		return nil
	}
	if _, ok := v.num.Float(o.Get("confidence")); !ok {
		return v.fail(contract.InvalidUpstreamAnswer, at("confidence"), "must be a number")
	}

	ps := o.Get("probabilities").GetObject()
	want := len(q.Options)
	if q.Type == Score {
		want = q.Levels
	}
	if ps == nil || ps.Len() != want {
		return v.fail(contract.InvalidUpstreamAnswer, at("probabilities"), "must be an object with one entry per "+q.Type.optionWord())
	}
	if q.Type == Choice {
		v.t.set.fill(len(q.Options), func(i int) string { return q.Options[i] })
	}
	// Keys are distinct (duplicates were rejected) and as many as wanted, so
	// each being a wanted key makes the two sets equal.
	var sum, weighted float64
	base := len(v.t.entries)
	defer func() { v.t.entries = v.t.entries[:base] }()
	for _, m := range v.t.members(ps) {
		var idx int
		if q.Type == Choice && !v.t.set.has(m.key) || q.Type == Score && !levelIndex(m.key, q.Levels, &idx) {
			return v.fail(contract.InvalidUpstreamAnswer, at("probabilities"), "key "+quote(m.key)+" is not a "+q.Type.optionWord()+" of the question")
		}
		p, ok := v.num.Float(m.val)
		if !ok || p < 0 || p > 1 {
			return v.fail(contract.InvalidUpstreamAnswer, append(at("probabilities"), pathSeg{key: m.key, idx: -1}), "must be a number from 0 to 1")
		}
		sum += p
		weighted += float64(idx) * p
	}
	if math.Abs(sum-1) > tolerance {
		return v.fail(contract.InvalidUpstreamAnswer, at("probabilities"), "must sum to 1")
	}

	if q.Type == Choice {
		if c, ok := stringOf(o.Get("choice")); !ok || !v.t.set.has(c) {
			return v.fail(contract.InvalidUpstreamAnswer, at("choice"), "must be one of the option names")
		}
		return nil
	}

	s, ok := v.num.Float(o.Get("score"))
	if !ok || s < 0 || s > float64(q.Levels-1) || math.Abs(s-weighted) > tolerance {
		return v.fail(contract.InvalidUpstreamAnswer, at("score"), "must be the probability-weighted level index")
	}
	lg := o.Get("legend").GetObject()
	if lg == nil || lg.Len() != q.Levels {
		return v.fail(contract.InvalidUpstreamAnswer, at("legend"), "must be an object with one entry per level")
	}
	for _, m := range v.t.members(lg) {
		var idx int
		if !levelIndex(m.key, q.Levels, &idx) {
			return v.fail(contract.InvalidUpstreamAnswer, at("legend"), "key "+quote(m.key)+" is not a level of the question")
		}
		if _, ok := stringOf(m.val); !ok {
			return v.fail(contract.InvalidUpstreamAnswer, append(at("legend"), pathSeg{key: m.key, idx: -1}), "must be a string")
		}
	}
	return nil
}

func (t QuestionType) optionWord() string {
	if t == Score {
		return "level"
	}
	return "option"
}

// Numbers reads the values of JSON numbers, correctly rounded from their
// text. Not fastjson's Value.Float64: its own parser is off by one unit in
// the last place for many numbers in exponent form (5e-07 read as
// 4.9999999999999996e-07), which an answer converted to the vendor's form
// then carried to the client. Only finite values are accepted: fastjson
// also takes NaN and Inf literals, which an untrusted answer may carry. The
// zero value is ready; it keeps the last number's text, so reading
// allocates nothing once that has grown.
type Numbers struct{ text []byte }

// Float returns v's value when v is a finite number.
func (n *Numbers) Float(v *fastjson.Value) (float64, bool) {
	if v == nil || v.Type() != fastjson.TypeNumber {
		return 0, false
	}
	n.text = v.MarshalTo(n.text[:0])
	// strconv keeps no reference to the text (an error clones it).
	f, err := strconv.ParseFloat(str(n.text), 64)
	return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// Float is Numbers.Float for a caller that reads one number now and then.
func Float(v *fastjson.Value) (float64, bool) {
	var n Numbers
	return n.Float(v)
}

// levelIndex parses a level key: the decimal index without sign or leading
// zeros ("0" to "9" for ten levels), below levels.
func levelIndex(k string, levels int, idx *int) bool {
	if k == "" || len(k) > 1 && k[0] == '0' || len(k) > 4 {
		return false
	}
	n := 0
	for i := 0; i < len(k); i++ {
		if !isDigit(k[i]) {
			return false
		}
		n = n*10 + int(k[i]-'0')
	}
	*idx = n
	return n < levels
}
