// Package validate checks POST /v1/service bodies (spec §2.1, §2.2, §8) and
// the upstream answers to them (§2.3, §2.4) without allocating in steady
// state, in standard Go and under TinyGo.
//
// A body is checked with memory the Validator keeps between calls, in two
// steps. A strict iterative scan reads every byte once: grammar, UTF-8,
// depth, number range, duplicate keys after escape decoding, and where each
// root member's value lies. Then fastjson parses only the questions member
// into a reusable tree for the question rules; model and state need no
// parse. fastjson alone is lax and recursive, so it never sees text the scan
// has not accepted; and parsing only what the rules look into, rather than
// the whole body, halves the time on bodies whose bulk is state (see
// BenchmarkValidate). ValidateTree parses the whole body instead, for a
// caller that needs its tree anyway: the decision function canonicalises
// every request, and parsing once saves a second parse of the questions.
//
// The results alias the Validator's buffers: a Request and every string in
// it stay valid only until the next Validate call on the same Validator. The
// input body is never modified. A Validator is not safe for concurrent use;
// a function module serves one request at a time and keeps one.
package validate

import (
	"strconv"
	"unicode"
	"unicode/utf8"

	"decisiongateway/shared/contract"
	"decisiongateway/shared/jsonw"
	"decisiongateway/shared/policy"
	"github.com/valyala/fastjson"
)

// QuestionType is the wire type of a question.
type QuestionType uint8

// The three question types of spec §1.2. The wire value "boolean" is not one
// of them.
const (
	Choice QuestionType = iota + 1
	Score
	Noul
)

var typeNames = [...]string{Choice: "choice", Score: "score", Noul: "noul"}

// String returns the wire value.
func (t QuestionType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return ""
}

// Question is the part of a validated question the decision function needs.
type Question struct {
	Name string
	Type QuestionType
	// Options are the choice option names in request order (choice only).
	Options []string
	// Levels is the number of ordered score levels (score only).
	Levels int
}

// Request summarises a validated decision request.
type Request struct {
	// Model is the explicit model, valid when HasModel is true.
	Model    string
	HasModel bool
	// Questions in request order.
	Questions []Question
	// Extensions reports top-level members other than model, state and
	// questions. The vendor path forwards them; the edge and router paths
	// reject them (spec §2.1).
	Extensions bool
	// InsertAt is the byte offset in the body just after the root '{',
	// where a default model member can be inserted without touching any
	// other byte (spec §2.2 rule 3).
	InsertAt int
}

// Validator validates request bodies and upstream answers. The zero value is
// ready to use.
type Validator struct {
	s     scanner
	p     fastjson.Parser // the questions member of a request
	ap    fastjson.Parser // answer tree, so answers never clobber the Request
	t     tree
	req   Request
	opt   []string // option names of all choice questions, back to back
	str   []byte   // decoded model
	err   Error
	meta  AnswerMeta // of the last accepted answer
	model []byte     // meta.Model's bytes
	num   Numbers    // an answer's numbers
}

// Validate checks a decision request body. On success it returns the
// summary and a nil *Error; on failure a nil *Request and the first rule the
// body breaks. Rules are checked in a fixed order (size, JSON text in text
// order, then the fields model, state, questions) so the same body always
// gets the same code.
func (v *Validator) Validate(body []byte) (*Request, *Error) {
	r, _, err := v.validate(body, false)
	return r, err
}

// ValidateTree is Validate for a caller that needs the whole body parsed
// anyway (the decision function, for the canonical form): fastjson parses
// the body once, the question rules read its questions member, and the
// root of that tree is returned beside the Request. The tree aliases the
// Validator's memory like the Request, until the next Validate or
// ValidateTree; ValidateAnswer uses memory of its own and leaves it intact.
func (v *Validator) ValidateTree(body []byte) (*Request, *fastjson.Value, *Error) {
	return v.validate(body, true)
}

func (v *Validator) validate(body []byte, whole bool) (*Request, *fastjson.Value, *Error) {
	if len(body) > policy.MaxBodyBytes {
		return nil, nil, v.fail(contract.BodyTooLarge, nil, "the body is larger than 65536 bytes")
	}
	if se := v.s.scan(body, policy.MaxDepth); se.code != "" {
		return nil, nil, v.failScan(se)
	}
	open := skipSpace(body, 0)
	if body[open] != '{' {
		return nil, nil, v.fail(contract.BodyNotObject, nil, "the body must be a JSON object")
	}
	r := &v.req
	*r = Request{Questions: r.Questions[:0], InsertAt: open + 1}
	v.opt, v.str = v.opt[:0], v.str[:0]

	var model, state, questions []byte
	for _, m := range v.s.root {
		val := body[m.start:m.end]
		switch m.key {
		case "model":
			model = val
		case "state":
			state = val
		case "questions":
			questions = val
		default:
			r.Extensions = true
		}
	}

	if model != nil {
		if model[0] == '"' {
			v.str = appendUnescaped(v.str, model[1:len(model)-1])
			r.Model, r.HasModel = str(v.str), true
		}
		if !r.HasModel || !validModel(r.Model) {
			return nil, nil, v.fail(contract.InvalidModel, []pathSeg{{key: "model", idx: -1}},
				"model must be a non-blank string of 1 to 128 characters without control characters")
		}
	}

	switch {
	case state == nil:
		return nil, nil, v.fail(contract.MissingState, []pathSeg{{key: "state", idx: -1}}, "state is required (it may be null)")
	case state[0] != '"' && state[0] != '{' && state[0] != '[' && state[0] != 'n':
		return nil, nil, v.fail(contract.InvalidState, []pathSeg{{key: "state", idx: -1}}, "state must be a string, object, array or null")
	}

	// The scan accepted the text, so fastjson cannot refuse it; an error
	// here would mean fastjson changed, and fails closed.
	var tree *fastjson.Value
	if whole {
		root, err := v.p.ParseBytes(body)
		if err != nil {
			return nil, nil, v.fail(contract.InvalidJSON, nil, "the body is not valid JSON")
		}
		tree = root
	}
	var qs *fastjson.Object
	if questions != nil && questions[0] == '{' {
		if whole {
			qs = tree.GetObject().Get("questions").GetObject()
		} else {
			root, err := v.p.ParseBytes(questions)
			if err != nil {
				return nil, nil, v.fail(contract.InvalidJSON, nil, "the body is not valid JSON")
			}
			qs = root.GetObject()
		}
	}
	if qs == nil || qs.Len() < policy.MinQuestions {
		return nil, nil, v.fail(contract.InvalidQuestions, []pathSeg{{key: "questions", idx: -1}},
			"questions must be an object with 1 to 32 entries")
	}
	if qs.Len() > policy.MaxQuestions {
		return nil, nil, v.fail(contract.TooManyQuestions, []pathSeg{{key: "questions", idx: -1}},
			"questions has more than 32 entries")
	}
	v.t.entries = v.t.entries[:0]
	for _, q := range v.t.members(qs) {
		if e := v.question(q.key, q.val); e != nil {
			return nil, nil, e
		}
	}
	return r, tree, nil
}

// question checks one entry of questions and appends its summary.
func (v *Validator) question(name string, q *fastjson.Value) *Error {
	at := func(k string) []pathSeg {
		return []pathSeg{{key: "questions", idx: -1}, {key: name, idx: -1}, {key: k, idx: -1}}
	}
	if !validName(name) {
		return v.fail(contract.InvalidQuestionName, at("")[:2], "a question name must contain a non-whitespace character and have at most 128 characters")
	}
	o := q.GetObject()
	if o == nil {
		return v.fail(contract.InvalidQuestion, at("")[:2], "a question must be an object")
	}
	typ, _ := stringOf(o.Get("type"))
	out := Question{Name: name}
	switch typ {
	case "choice":
		out.Type = Choice
	case "score":
		out.Type = Score
	case "noul":
		out.Type = Noul
	default:
		return v.fail(contract.InvalidQuestionType, at("type"), `type must be one of "choice", "score", "noul"`)
	}
	if in := o.Get("instructions"); in != nil && !structured(in) {
		return v.fail(contract.InvalidInstructions, at("instructions"), "instructions must be a string, object, array or null")
	}

	c := o.Get("criteria")
	switch out.Type {
	case Choice:
		co := c.GetObject()
		if co == nil || co.Len() < policy.MinChoiceOptions {
			return v.fail(contract.InvalidCriteria, at("criteria"), "choice criteria must be an object with 1 to 255 options")
		}
		if co.Len() > policy.MaxChoiceOptions {
			return v.fail(contract.TooManyOptions, at("criteria"), "choice criteria has more than 255 options")
		}
		start := len(v.opt)
		base := len(v.t.entries)
		for _, m := range v.t.members(co) {
			if !validName(m.key) {
				return v.fail(contract.InvalidOptionName, append(at("criteria"), pathSeg{key: m.key, idx: -1}),
					"an option name must contain a non-whitespace character and have at most 128 characters")
			}
			v.opt = append(v.opt, m.key)
		}
		v.t.entries = v.t.entries[:base]
		out.Options = v.opt[start:len(v.opt):len(v.opt)]
	case Score:
		if c == nil || c.Type() != fastjson.TypeArray || len(c.GetArray()) < policy.MinScoreLevels {
			return v.fail(contract.InvalidCriteria, at("criteria"), "score criteria must be an array of 2 to 10 level descriptions")
		}
		out.Levels = len(c.GetArray())
		if out.Levels > policy.MaxScoreLevels {
			return v.fail(contract.TooManyLevels, at("criteria"), "score criteria has more than 10 levels")
		}
	case Noul:
		// Omitted, null, or an object whose optional true and false members
		// are descriptions; descriptions may be any JSON (spec §2.2).
		if c != nil && c.Type() != fastjson.TypeNull && c.Type() != fastjson.TypeObject {
			return v.fail(contract.InvalidCriteria, at("criteria"), "noul criteria must be an object or null")
		}
	}
	v.req.Questions = append(v.req.Questions, out)
	return nil
}

// stringOf returns the decoded string value of v, if v is a string.
func stringOf(v *fastjson.Value) (string, bool) {
	if v == nil || v.Type() != fastjson.TypeString {
		return "", false
	}
	b, _ := v.StringBytes()
	return str(b), true
}

// structured reports the types spec §2.1 allows for state and instructions.
func structured(v *fastjson.Value) bool {
	switch v.Type() {
	case fastjson.TypeString, fastjson.TypeObject, fastjson.TypeArray, fastjson.TypeNull:
		return true
	}
	return false
}

// validName is the rule for question and option names: at most 128
// characters (Unicode code points, not bytes) and at least one that is not
// white space.
func validName(s string) bool {
	return utf8.RuneCountInString(s) <= policy.MaxNameChars && !blank(s)
}

// ValidModel reports whether s is a model name a request may send (spec
// §2.1, §8): the hosts check SERVICE_DEFAULT_MODEL by it.
func ValidModel(s string) bool { return validModel(s) }

// validModel: 1 to 128 characters, not blank, no C0 or C1 control
// character and no DEL.
func validModel(s string) bool {
	n := 0
	for _, r := range s {
		if r < 0x20 || r >= 0x7F && r <= 0x9F {
			return false
		}
		n++
	}
	return n >= 1 && n <= policy.MaxModelChars && !blank(s)
}

func blank(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// fail fills the Validator's error. The message is only built here, on the
// failure path, so success never allocates.
func (v *Validator) fail(code contract.Code, path []pathSeg, msg string) *Error {
	if len(path) > 0 {
		msg = renderPath(path) + ": " + msg
	}
	v.err = Error{Code: code, Message: msg}
	return &v.err
}

// failScan turns a scanner error into the Validator's error.
func (v *Validator) failScan(se scanError) *Error {
	if se.code == contract.DuplicateKey {
		return v.fail(se.code, v.s.dupPath(), "duplicate object key "+quote(v.s.dup))
	}
	return v.fail(se.code, nil, se.what+" at byte "+strconv.Itoa(se.off))
}

func quote(s string) string {
	if r := []rune(s); len(r) > maxPathNameInMessages {
		s = string(r[:maxPathNameInMessages]) + "…"
	}
	return string(jsonw.AppendString(nil, s))
}
