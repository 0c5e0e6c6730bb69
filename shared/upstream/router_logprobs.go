package upstream

import (
	"math"
	"strings"

	"github.com/valyala/fastjson"

	"decisiongateway/shared/validate"
)

// logprobs derives answer distributions from a Chat Completions reply's
// token log-probabilities (choices[0].logprobs.content). The schema puts
// each question's committed value (the choice name, the level index, the
// holds boolean) in a known place; the token where that value starts, and
// its top_logprobs alternatives, say how likely each other value was. That
// is the model's own uncertainty, which its stated numbers only describe.
//
// Everything here degrades to "unknown": a reply whose tokens do not spell
// its content, a value that cannot be found, or alternatives that match no
// option leave the stated distribution in place.
type logprobs struct {
	content []byte
	toks    []lpToken
	// at holds, per question, the content offset where its committed value
	// starts (after the opening quote of a choice name), or -1.
	at    []int
	texts []string
	obs   []float64
	cands []int
	key   fastjson.Parser
	num   validate.Numbers
}

// lpToken is one entry of logprobs.content and the content bytes it spells.
type lpToken struct {
	off, end int
	v        *fastjson.Value
}

// index aligns the token entries with content. Alignment stops at the first
// token that does not spell the next content bytes; offsets after it are
// unknown.
func (l *logprobs) index(content []byte, entries *fastjson.Value) {
	l.content, l.toks = content, l.toks[:0]
	off := 0
	for _, e := range entries.GetArray() {
		tok := e.GetStringBytes("token")
		if off+len(tok) > len(content) || string(content[off:off+len(tok)]) != string(tok) {
			break
		}
		l.toks = append(l.toks, lpToken{off, off + len(tok), e})
		off += len(tok)
	}
}

// locate finds each question's committed value in the content:
// answers.<name>.choice, .level or .holds.
func (l *logprobs) locate(content []byte, qs []questionView) {
	l.at = l.at[:0]
	for range qs {
		l.at = append(l.at, -1)
	}
	if len(l.toks) == 0 {
		return
	}
	i := skipWS(content, 0)
	if i < len(content) && content[i] == '{' {
		l.object(content, i, 0, -1, qs)
	}
}

// committedField is the member of an answer object whose value's first
// token carries the distribution.
func committedField(t validate.QuestionType) string {
	switch t {
	case validate.Choice:
		return "choice"
	case validate.Score:
		return "level"
	}
	return "holds"
}

// object walks the object at content[i] ('{') at depth 0 (root), 1
// (answers) or 2 (the answer of question q) and returns the offset after
// it, or -1 on text it does not understand.
func (l *logprobs) object(s []byte, i, depth, q int, qs []questionView) int {
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		return i + 1
	}
	for i < len(s) {
		if s[i] != '"' {
			return -1
		}
		end := skipString(s, i)
		if end < 0 {
			return -1
		}
		key := l.decodeKey(s[i:end])
		i = skipWS(s, end)
		if i >= len(s) || s[i] != ':' {
			return -1
		}
		v := skipWS(s, i+1)
		switch {
		case depth == 0 && key == "answers" && v < len(s) && s[v] == '{':
			i = l.object(s, v, 1, -1, qs)
		case depth == 1 && v < len(s) && s[v] == '{':
			i = l.object(s, v, 2, questionIndex(qs, key), qs)
		default:
			if depth == 2 && q >= 0 && key == committedField(qs[q].Type) {
				l.at[q] = v
				if v < len(s) && s[v] == '"' {
					l.at[q] = v + 1
				}
			}
			i = skipValue(s, v)
		}
		if i < 0 {
			return -1
		}
		i = skipWS(s, i)
		if i < len(s) && s[i] == '}' {
			return i + 1
		}
		if i >= len(s) || s[i] != ',' {
			return -1
		}
		i = skipWS(s, i+1)
	}
	return -1
}

// decodeKey returns a quoted key's text, escapes decoded.
func (l *logprobs) decodeKey(quoted []byte) string {
	if strings.IndexByte(string(quoted), '\\') < 0 {
		return string(quoted[1 : len(quoted)-1])
	}
	v, err := l.key.ParseBytes(quoted)
	if err != nil {
		return ""
	}
	return string(v.GetStringBytes())
}

func questionIndex(qs []questionView, name string) int {
	for i := range qs {
		if qs[i].Name == name {
			return i
		}
	}
	return -1
}

//go:inline
func skipWS(s []byte, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t') {
		i++
	}
	return i
}

// skipString returns the offset after the string starting at s[i] ('"').
func skipString(s []byte, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the offset after the value starting at s[i]. The text
// was parsed already, so only strings need care.
func skipValue(s []byte, i int) int {
	if i >= len(s) {
		return -1
	}
	if s[i] == '"' {
		return skipString(s, i)
	}
	depth := 0
	for ; i < len(s); i++ {
		switch s[i] {
		case '"':
			if i = skipString(s, i); i < 0 {
				return -1
			}
			i--
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	if depth == 0 {
		return i
	}
	return -1
}

// distribution overwrites out (which holds the stated distribution) with
// one derived from the alternatives of the token where the value at
// content offset at starts. text(i) is how value i is spelt in the content
// (a choice name JSON-escaped with its closing quote, a level index, true or
// false). Each alternative's probability goes to the one value it can begin;
// one that could begin several is shared among them by the stated
// distribution. The mass the top alternatives leave uncovered is spread by
// the stated distribution too, and the result is normalised. Nothing
// changes when no alternative matches a value.
func (l *logprobs) distribution(at, n int, text func(i int) string, quoted bool, stated, out []float64) {
	if at < 0 {
		return
	}
	k := -1
	for j := range l.toks {
		if l.toks[j].off <= at && at < l.toks[j].end {
			k = j
			break
		}
	}
	if k < 0 {
		return
	}
	l.texts = l.texts[:0]
	for i := 0; i < n; i++ {
		l.texts = append(l.texts, text(i))
	}
	l.obs = l.obs[:0]
	for i := 0; i < n; i++ {
		l.obs = append(l.obs, 0)
	}
	prefix := string(l.content[l.toks[k].off:at])
	var covered, matched float64
	consider := func(tok string, lp float64) {
		if lp > 1e-6 { // a probability above one: not a log-probability
			return
		}
		p := math.Exp(math.Min(lp, 0))
		if p <= 0 {
			return
		}
		covered += p
		if !strings.HasPrefix(tok, prefix) || len(tok) == len(prefix) {
			return
		}
		u := tok[len(prefix):]
		l.cands = l.cands[:0]
		var weight float64
		for i, t := range l.texts {
			if spells(u, t, quoted) {
				l.cands = append(l.cands, i)
				weight += stated[i]
			}
		}
		for _, i := range l.cands {
			share := 1 / float64(len(l.cands))
			if weight > 0 {
				share = stated[i] / weight
			}
			l.obs[i] += p * share
		}
		if len(l.cands) > 0 {
			matched += p
		}
	}
	e := l.toks[k].v
	chosen := string(e.GetStringBytes("token"))
	seen := false
	for _, alt := range e.GetArray("top_logprobs") {
		tok := string(alt.GetStringBytes("token"))
		if lp, ok := l.num.Float(alt.Get("logprob")); ok {
			consider(tok, lp)
			seen = seen || tok == chosen
		}
	}
	if !seen {
		if lp, ok := l.num.Float(e.Get("logprob")); ok {
			consider(chosen, lp)
		}
	}
	if matched <= 0 {
		return
	}
	rest := math.Max(0, 1-covered)
	for i := range out {
		out[i] = l.obs[i] + rest*stated[i]
	}
	if !normalize(out) {
		copy(out, stated)
	}
}

// spells reports whether a token's text u (after the bytes before the
// value) could be the start of value text t: u is a prefix of t, or u is t
// followed by what comes after the value. An unquoted value (a number or
// boolean) must then end at a non-word byte, so "1" never spells "10".
func spells(u, t string, quoted bool) bool {
	if strings.HasPrefix(t, u) {
		return true
	}
	if !strings.HasPrefix(u, t) {
		return false
	}
	if quoted {
		return true
	}
	c := u[len(t)]
	return !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '_')
}
