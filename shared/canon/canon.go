// Package canon computes the canonical form of a decision request and its
// fingerprint (spec §3.1, §4.1; its price is shared/pricing's), and inserts a
// default model into request text without reserialising it (§2.2 rule 3).
//
// Two requests are the same request, for idempotency and for billing, when
// their canonical forms are equal. The canonical form keeps what a request
// means and drops how it was written:
//
//   - no whitespace; object members sorted by their decoded keys, compared
//     as UTF-8 bytes; array order kept (a rubric's order is meaningful);
//   - strings decoded and re-encoded one way: only '"', '\\' and the
//     control characters U+0000–U+001F are escaped (as \b \t \n \f \r or
//     \u00xx), everything else is literal UTF-8;
//   - numbers by exact decimal value (see appendNumber): 1e2 == 100 ==
//     100.0, -0 == 0, and high-precision numbers that share a float64 stay
//     different;
//   - the root member "model" set to the effective model, so an omitted
//     model and the deployment default written out are the same request.
//
// The input must be a body that package validate accepted (valid UTF-8,
// no duplicate keys, no lone surrogate escapes); canon relies on that and
// does not check it again.
package canon

import (
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"unsafe"

	"decisiongateway/shared/digest"
	"decisiongateway/shared/jsonw"

	"github.com/valyala/fastjson"
)

// ErrNotRequest is returned for text that is not a JSON object with valid
// numbers; it cannot happen for a body package validate accepted.
var ErrNotRequest = errors.New("canon: body is not a validated JSON object")

// Encoder computes canonical forms with reusable memory: after warm-up,
// Append does not allocate beyond growing dst. The zero value is ready. An
// Encoder is not safe for concurrent use.
type Encoder struct {
	p       fastjson.Parser
	members []member
	num     []byte
	n       int // length of the last form
	longer  int // by how much its numbers are longer than their shortest spellings
}

type member struct {
	key string
	val *fastjson.Value
}

// Append appends the canonical form of body with effectiveModel as its root
// "model" member. An empty effectiveModel keeps the body's own model member,
// if any, as it is.
func (e *Encoder) Append(dst, body []byte, effectiveModel string) ([]byte, error) {
	root, err := e.p.ParseBytes(body)
	if err != nil {
		return dst, ErrNotRequest
	}
	return e.AppendTree(dst, root, effectiveModel)
}

// AppendTree is Append of a body already parsed by fastjson (validate's
// ValidateTree), so a request that is validated and canonicalised is
// parsed once.
func (e *Encoder) AppendTree(dst []byte, root *fastjson.Value, effectiveModel string) ([]byte, error) {
	o := root.GetObject()
	if o == nil {
		return dst, ErrNotRequest
	}
	e.members = e.members[:0]
	e.n, e.longer = 0, 0
	out, ok := e.object(dst, o, effectiveModel, true)
	if !ok {
		return dst, ErrNotRequest
	}
	e.n = len(out) - len(dst)
	return out, nil
}

// PricedLen is the length a decision's price counts (shared/pricing): the
// last canonical form's, each number counted at its shortest spelling
// rather than at its canonical one. Canonical numbers follow ECMAScript's
// layout, which writes 1e20 out as 21 digits; priced at that, a body of
// many such numbers would cost several times its own size. So the price
// is of the request's meaning (whitespace, key order and spelling never
// change it) and never above its bytes as the client sent them, the
// effective model's member aside.
func (e *Encoder) PricedLen() int { return e.n - e.longer }

// Append is Encoder.Append on a fresh Encoder, for callers that
// canonicalise rarely.
func Append(dst, body []byte, effectiveModel string) ([]byte, error) {
	var e Encoder
	return e.Append(dst, body, effectiveModel)
}

// Fingerprint is the lower-case hex SHA-256 of a canonical form: the key of
// an idempotency record's request.
func Fingerprint(canonical []byte) string {
	sum := digest.SHA256(canonical)
	return hex.EncodeToString(sum[:])
}

func (e *Encoder) value(dst []byte, v *fastjson.Value) ([]byte, bool) {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		return e.object(dst, o, "", false)
	case fastjson.TypeArray:
		dst = append(dst, '[')
		for i, x := range v.GetArray() {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = e.value(dst, x); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case fastjson.TypeString:
		s, _ := v.StringBytes()
		return appendString(dst, str(s)), true
	case fastjson.TypeNumber:
		// MarshalTo of a number copies its text unchanged; the copy goes
		// into reusable scratch memory instead of a new string.
		e.num = v.MarshalTo(e.num[:0])
		start := len(dst)
		dst, short, ok := appendNumber(dst, str(e.num))
		e.longer += len(dst) - start - short
		return dst, ok
	case fastjson.TypeTrue:
		return append(dst, "true"...), true
	case fastjson.TypeFalse:
		return append(dst, "false"...), true
	case fastjson.TypeNull:
		return append(dst, "null"...), true
	}
	return dst, false
}

// object writes o with sorted members. Members of open objects share one
// stack in e.members, so nesting costs no per-object slice.
func (e *Encoder) object(dst []byte, o *fastjson.Object, model string, root bool) ([]byte, bool) {
	base := len(e.members)
	defer func() { e.members = e.members[:base] }()
	o.Visit(func(k []byte, v *fastjson.Value) {
		if root && model != "" && string(k) == "model" {
			return // replaced by the effective model below
		}
		e.members = append(e.members, member{str(k), v})
	})
	if root && model != "" {
		e.members = append(e.members, member{key: "model"})
	}
	ms := e.members[base:]
	slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
	dst = append(dst, '{')
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, m.key)
		dst = append(dst, ':')
		if m.val == nil {
			dst = appendString(dst, model)
			continue
		}
		var ok bool
		if dst, ok = e.value(dst, m.val); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// str views parser-owned bytes as a string without copying; they are not
// written again before the next parse.
func str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// appendString appends s as a canonical JSON string: only what JSON
// requires is escaped, with the short escapes where JSON has them
// (jsonw's minimal escaping, the project's one escaper).
//
//go:inline
func appendString(dst []byte, s string) []byte { return jsonw.AppendMinimal(dst, s) }
