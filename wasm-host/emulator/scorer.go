package emulator

import (
	"math"
	"strings"
	"unicode"

	"github.com/valyala/fastjson"
)

// The scorer is deliberately simple and fully deterministic: it compares
// words. Each option's (or level's, or condition's) text is scored by how
// many of its distinct words also occur in the state, divided by the square
// root of its word count so long descriptions do not win by length alone.
// A softmax over those scores is the distribution. It knows nothing; it only
// makes answers that move when the texts move, which is what a local
// end-to-end run needs.

// sharpness is the softmax temperature's inverse: one shared word more is
// worth about e^2 ≈ 7× the odds.
const sharpness = 2.0

// question is one question in the form every protocol's input reduces to.
type question struct {
	name, typ    string
	instructions string
	// choices are option names (choice) or level indexes (score), with the
	// text each is judged by.
	names, texts []string
	// whenTrue and whenFalse describe a noul condition.
	whenTrue, whenFalse string
}

// answer is the scorer's verdict on one question.
type answer struct {
	probs      []float64 // choice: per option, score: per level
	pick       int       // most probable option or level
	score      float64   // score: Σ i·p_i
	confidence float64   // probability of pick
	noul       float64   // noul: probability the condition holds
}

// wordSet is the distinct words of a text.
type wordSet map[string]struct{}

var stopWords = map[string]bool{
	"the": true, "an": true, "and": true, "or": true, "of": true, "to": true, "in": true,
	"is": true, "for": true, "on": true, "with": true, "be": true, "it": true, "this": true,
	"that": true, "are": true, "as": true, "at": true, "by": true, "from": true, "was": true,
}

// words splits text into lower-case words of two or more letters or digits,
// without stop words, with a plural s removed ("refunds" counts as "refund").
func words(text string) wordSet {
	set := wordSet{}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		if len([]rune(w)) >= 2 && !stopWords[w] {
			set[w] = struct{}{}
		}
	}
	return set
}

// overlap scores a criterion's text against the state's words.
func overlap(state wordSet, text string) float64 {
	c := words(text)
	if len(c) == 0 {
		return 0
	}
	n := 0
	for w := range c {
		if _, ok := state[w]; ok {
			n++
		}
	}
	return float64(n) / math.Sqrt(float64(len(c)))
}

// decide answers q about a state whose words are given.
func decide(state wordSet, q *question) answer {
	if q.typ == "noul" {
		d := overlap(state, q.whenTrue) - overlap(state, q.whenFalse)
		p := round6(1 / (1 + math.Exp(-sharpness*d)))
		return answer{noul: p, confidence: math.Max(p, 1-p)}
	}
	a := answer{probs: make([]float64, len(q.texts))}
	var sum float64
	for i, t := range q.texts {
		a.probs[i] = math.Exp(sharpness * overlap(state, q.names[i]+" "+t))
		sum += a.probs[i]
	}
	for i := range a.probs {
		a.probs[i] = round6(a.probs[i] / sum)
	}
	for i, p := range a.probs {
		if p > a.probs[a.pick] {
			a.pick = i
		}
	}
	// Six decimals each; the most probable entry absorbs the rounding so
	// the distribution sums to one as exactly as decimals allow.
	var rest float64
	for i, p := range a.probs {
		if i != a.pick {
			rest += p
		}
	}
	a.probs[a.pick] = round6(1 - rest)
	a.confidence = a.probs[a.pick]
	for i, p := range a.probs {
		a.score += float64(i) * p
	}
	a.score = round6(a.score)
	return a
}

func round6(f float64) float64 { return math.Round(f*1e6) / 1e6 }

// text flattens a JSON value into the words it holds: keys, strings and
// number literals, in order. A description may be any JSON (spec §2.2).
func text(v *fastjson.Value) string {
	var b strings.Builder
	var walk func(v *fastjson.Value)
	walk = func(v *fastjson.Value) {
		if v == nil {
			return
		}
		switch v.Type() {
		case fastjson.TypeString:
			b.Write(v.GetStringBytes())
			b.WriteByte(' ')
		case fastjson.TypeNumber:
			b.WriteString(v.String())
			b.WriteByte(' ')
		case fastjson.TypeArray:
			for _, e := range v.GetArray() {
				walk(e)
			}
		case fastjson.TypeObject:
			v.GetObject().Visit(func(k []byte, e *fastjson.Value) {
				b.Write(k)
				b.WriteByte(' ')
				walk(e)
			})
		}
	}
	walk(v)
	return b.String()
}

// nativeQuestion reads a question in the decision API's own shape (the
// vendor request, and the router prompt the gateway writes).
func nativeQuestion(name string, v *fastjson.Value) question {
	q := question{name: name, typ: string(v.GetStringBytes("type")), instructions: text(v.Get("instructions"))}
	c := v.Get("criteria")
	switch q.typ {
	case "choice":
		c.GetObject().Visit(func(k []byte, d *fastjson.Value) {
			q.names = append(q.names, string(k))
			q.texts = append(q.texts, text(d))
		})
	case "score":
		for i, d := range c.GetArray() {
			q.names = append(q.names, itoa(i))
			q.texts = append(q.texts, text(d))
		}
	default:
		q.whenTrue, q.whenFalse = noulTexts(q.instructions, c)
	}
	return q
}

// noulTexts are the texts a noul condition is judged by: its criteria's
// true and false descriptions, or the instructions when there is no true
// description.
func noulTexts(instructions string, c *fastjson.Value) (whenTrue, whenFalse string) {
	whenTrue, whenFalse = text(c.Get("true")), text(c.Get("false"))
	if strings.TrimSpace(whenTrue) == "" {
		whenTrue = instructions
	}
	return whenTrue, whenFalse
}

// nativeQuestions reads the questions object of a native request, in order.
func nativeQuestions(qs *fastjson.Object) []question {
	var out []question
	qs.Visit(func(k []byte, v *fastjson.Value) { out = append(out, nativeQuestion(string(k), v)) })
	return out
}
