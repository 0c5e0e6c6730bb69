//go:build goexperiment.jsonv2

// The comparison with encoding/json/v2's jsontext needs
// GOEXPERIMENT=jsonv2 in Go 1.26:
//
//	GOEXPERIMENT=jsonv2 go test -run=^$ -fuzz=FuzzValidJSONAgreesWithJsontext -fuzztime=60s ./shared/validate
//	GOEXPERIMENT=jsonv2 go test -run=^$ -bench=BenchmarkValidate -benchtime=2s ./shared/validate
//
// Without the experiment this file is left out; the remaining tests and the
// other benchmark siblings still run.

package validate

import (
	"encoding/json/jsontext"
	"strings"
	"testing"

	"decisiongateway/shared/contract"
)

func init() {
	comparisons = append(comparisons, comparison{"jsontext-IsValid", func(b []byte) bool {
		return jsontext.Value(b).IsValid()
	}})
}

// fuzzSeeds are inputs where JSON implementations are known to differ:
// escapes that decode to the same key, surrogates, invalid UTF-8, number
// grammar corners, whitespace and trailing data.
var fuzzSeeds = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `null`, ` {"a":1} `, "\t[\r\n]\n",
	`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"\u00e9":1,"é":2}`, `{"😀":1,"\ud83d\ude00":2}`,
	`{"a/b":1,"a\/b":2}`, `{"a":{"a":1},"b":{"a":1}}`, `[{"x":1},{"x":1}]`,
	`{"a":1,"A":1}`, `{"":1,"":2}`, `{"\u0000":1,"\u0000 ":2}`,
	`"\ud800"`, `"\udc00"`, `"\ud800\udc00"`, `"\ud800\u0041"`, `"\ud800x"`, `"\uDBFF\uDFFF"`,
	"\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xe2\x82\"", "\xef\xbb\xbf{}",
	"\"a\tb\"", "\"\x7f\"", `"\x"`, `"\u12"`, `"\u12G4"`, `"\/"`, `"\'"`,
	`1e400`, `-1e-400`, `1.`, `.1`, `01`, `-`, `1e`, `1e+`, `+1`, `0x1`, `1E5`, `1.0e-5`, `NaN`, `Infinity`, `-Infinity`,
	`[1,]`, `{"a":1,}`, `[,1]`, `{,}`, `{"a"}`, `{"a":}`, `{1:2}`, `[1 2]`, `{"a":1 "b":2}`,
	`tru`, `nul`, `falsey`, `true false`, `{} {}`, `[]]`, `[[]`, "[\x00]", "\u00a0[]", `/*c*/[]`,
	strings.Repeat("[", 40) + strings.Repeat("]", 40),
	`{"state":null,"questions":{"q":{"type":"choice","criteria":{"a":1,"b":2}}}}`,
}

// FuzzValidJSONAgreesWithJsontext checks that the text checks of Validate
// (grammar, UTF-8, duplicate names after escape decoding) give the same
// verdict as jsontext, which implements RFC 7493 and rejects duplicate
// names by default.
//
// Deliberate differences, which the fuzz target skips rather than compares:
// our depth limit (jsontext allows 10,000 levels) and our number range
// (jsontext accepts 1e400; we reject numbers that round to ±Inf). Invalid
// UTF-8 and unpaired surrogate escapes are rejected by both: the body is
// specified as UTF-8 and a lone surrogate has no UTF-8 form, so there is no
// deliberate difference there.
func FuzzValidJSONAgreesWithJsontext(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	var v Validator
	f.Fuzz(func(t *testing.T, b []byte) {
		e := v.s.scan(b, maxAnswerDepth)
		if e.code == contract.JSONTooDeep || e.code == contract.NumberOutOfRange {
			t.Skip("outside jsontext's verdict: " + e.code)
		}
		ours := e.code == ""
		theirs := jsontext.Value(b).IsValid()
		if ours != theirs {
			t.Fatalf("validator %v (%+v), jsontext %v, input %q", ours, e, theirs, b)
		}
	})
}

func TestSeedsAgreeWithJsontext(t *testing.T) {
	var v Validator
	for _, s := range fuzzSeeds {
		e := v.s.scan([]byte(s), maxAnswerDepth)
		if e.code == contract.JSONTooDeep || e.code == contract.NumberOutOfRange {
			continue
		}
		if ours, theirs := e.code == "", jsontext.Value(s).IsValid(); ours != theirs {
			t.Errorf("%q: validator %v (%v), jsontext %v", s, ours, e, theirs)
		}
	}
}

// Strings of up to two sixteen-byte steps and a rest, with a byte that
// ends the plain run (a quote, a backslash escape, a control byte, UTF-8
// valid and not) at every offset: the word-at-a-time skipping in str
// agrees with jsontext.
func TestStringsAgreeWithJsontextAtEveryOffset(t *testing.T) {
	var v Validator
	for _, ins := range []string{`"`, `\n`, `\u00e9`, `\x`, "\x00", "\x1f", "\x7f", "é", "\xc3", "\xff", "€"} {
		for n := 0; n <= 36; n++ {
			for pos := 0; pos <= n; pos++ {
				plain := strings.Repeat("abcdefgh", 5)[:n]
				b := []byte(`["` + plain[:pos] + ins + plain[pos:] + `"]`)
				e := v.s.scan(b, maxAnswerDepth)
				if ours, theirs := e.code == "", jsontext.Value(b).IsValid(); ours != theirs {
					t.Fatalf("%q: validator %v (%+v), jsontext %v", b, ours, e, theirs)
				}
			}
		}
	}
}
