package canon

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"decisiongateway/shared/pricing"
	"decisiongateway/shared/validate"
)

const defaultModel = "model-latest"

// canonical validates body (canon's precondition) and returns its canonical
// form with the effective model the gateway would use.
func canonical(t *testing.T, body string) string {
	t.Helper()
	var v validate.Validator
	req, verr := v.Validate([]byte(body))
	if verr != nil {
		t.Fatalf("invalid test body: %v\n%s", verr, body)
	}
	model := defaultModel
	if req.HasModel {
		model = req.Model
	}
	out, err := Append(nil, []byte(body), model)
	if err != nil {
		t.Fatal(err)
	}
	// The decision function's way: the tree the validator parsed, after
	// its rules read the questions, gives the same form.
	_, tree, verr := v.ValidateTree([]byte(body))
	if verr != nil {
		t.Fatalf("ValidateTree refused what Validate accepted: %v", verr)
	}
	var e Encoder
	if fromTree, err := e.AppendTree(nil, tree, model); err != nil || string(fromTree) != string(out) {
		t.Fatalf("AppendTree differs from Append (%v):\n%s\n%s", err, fromTree, out)
	}
	if !json.Valid(out) {
		t.Fatalf("canonical form is not JSON: %s", out)
	}
	return string(out)
}

func TestCanonicalEqual(t *testing.T) {
	base := `{"state":{"a":1,"b":[1,2]},"questions":{"q":{"type":"noul"}}}`
	for name, other := range map[string]string{
		"key order":           `{"questions":{"q":{"type":"noul"}},"state":{"b":[1,2],"a":1}}`,
		"whitespace":          " {\n\t\"state\" : { \"a\" : 1 , \"b\" : [ 1 , 2 ] } ,\r\n \"questions\":{\"q\":{\"type\":\"noul\"}}} ",
		"escaped keys":        `{"st\u0061te":{"\u0061":1,"b":[1,2]},"questions":{"q":{"type":"n\u006fu\u006c"}}}`,
		"1e2 style numbers":   `{"state":{"a":1.0,"b":[10e-1,0.2e1]},"questions":{"q":{"type":"noul"}}}`,
		"explicit default":    `{"model":"model-latest","state":{"a":1,"b":[1,2]},"questions":{"q":{"type":"noul"}}}`,
		"escaped default":     `{"model":"model\u002dlatest","state":{"a":1,"b":[1,2]},"questions":{"q":{"type":"noul"}}}`,
		"exponent upper case": `{"state":{"a":1E0,"b":[1e+0,2E-0]},"questions":{"q":{"type":"noul"}}}`,
	} {
		if a, b := canonical(t, base), canonical(t, other); a != b {
			t.Errorf("%s: canonical forms differ:\n%s\n%s", name, a, b)
		}
	}
}

func TestCanonicalNumbersByExactValue(t *testing.T) {
	same := [][]string{
		{"100", "1e2", "100.0", "1.00e+2", "1E2", "10e1", "1000e-1", "0.1e3"},
		{"0", "-0", "0.0", "0e5", "-0.000e-7"},
		{"0.5", "5e-1", "50e-2", "0.50"},
		{"-12.5", "-1.25e1", "-125e-1"},
		{"1e-400", "0.1e-399", "10e-401"},
		{"123456789012345678901234567890", "1.2345678901234567890123456789e29"},
	}
	for _, group := range same {
		want := canonical(t, numberBody(group[0]))
		for _, n := range group[1:] {
			if got := canonical(t, numberBody(n)); got != want {
				t.Errorf("%s and %s differ:\n%s\n%s", group[0], n, want, got)
			}
		}
	}
	different := [][2]string{
		{"0.1000000000000000055511151231257827", "0.1"}, // the same float64
		{"9007199254740993", "9007199254740992"},        // the same float64
		{"1e-400", "1e-401"},                            // both underflow to 0
		{"1", "1.0000000000000000000000001"},
		{"-1", "1"},
		{"1e21", "1e22"},
	}
	for _, d := range different {
		if canonical(t, numberBody(d[0])) == canonical(t, numberBody(d[1])) {
			t.Errorf("%s and %s share a canonical form", d[0], d[1])
		}
	}
}

func numberBody(n string) string {
	return `{"state":[` + n + `],"questions":{"q":{"type":"noul"}}}`
}

func TestCanonicalNumberText(t *testing.T) {
	for in, want := range map[string]string{
		"0":                                    "0",
		"-0.0":                                 "0",
		"1e2":                                  "100",
		"1.5":                                  "1.5",
		"-0.001":                               "-0.001",
		"1e-6":                                 "0.000001",
		"1e-7":                                 "1e-7",
		"123e-9":                               "1.23e-7",
		"1e20":                                 "100000000000000000000",
		"1e21":                                 "1e+21",
		"1e22":                                 "1e+22",
		"123456e16":                            "1.23456e+21",
		"123456e15":                            "123456000000000000000",
		"0.1000000000000000055511151231257827": "0.1000000000000000055511151231257827",
		"1e-400":                               "1e-400",
		"1.7976931348623157e308":               "1.7976931348623157e+308",
		"5e-99999999999999999999":              "5e-99999999999999999999",
		"50e-99999999999999999999":             "5e-99999999999999999998",
		"0.05e-1000000000000000000":            "5e-1000000000000000002",
		"123.45e-100000000000000000000":        "1.2345e-99999999999999999998",
		"1e99999999999999999999":               "1e+99999999999999999999",
		"99e99999999999999999999":              "9.9e+100000000000000000000",
		"10e-100000000000000000000":            "1e-99999999999999999999",
	} {
		got, _, ok := appendNumber(nil, in)
		if !ok || string(got) != want {
			t.Errorf("appendNumber(%s) = %s, %v; want %s", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "-", "01", "1.", ".5", "1e", "+1", "NaN", "Infinity", "1e+", "0x1", "1 "} {
		if _, _, ok := appendNumber(nil, bad); ok {
			t.Errorf("appendNumber(%q) accepted", bad)
		}
	}
}

func TestCanonicalDiffers(t *testing.T) {
	base := `{"state":"s","questions":{"q":{"type":"score","criteria":["low","mid","high"]}}}`
	for name, other := range map[string]string{
		"rubric order":   `{"state":"s","questions":{"q":{"type":"score","criteria":["high","mid","low"]}}}`,
		"other model":    `{"model":"model-2","state":"s","questions":{"q":{"type":"score","criteria":["low","mid","high"]}}}`,
		"string content": `{"state":"S","questions":{"q":{"type":"score","criteria":["low","mid","high"]}}}`,
		"extension":      `{"state":"s","x":1,"questions":{"q":{"type":"score","criteria":["low","mid","high"]}}}`,
		"null vs string": `{"state":null,"questions":{"q":{"type":"score","criteria":["low","mid","high"]}}}`,
	} {
		if canonical(t, base) == canonical(t, other) {
			t.Errorf("%s: canonical forms are equal", name)
		}
	}
}

func TestCanonicalIncludesEffectiveModel(t *testing.T) {
	body := []byte(`{"state":null,"questions":{"q":{"type":"noul"}}}`)
	a, _ := Append(nil, body, "model-latest")
	b, _ := Append(nil, body, "vendor/model")
	if string(a) == string(b) {
		t.Fatal("different effective models share a canonical form")
	}
	if !strings.Contains(string(a), `"model":"model-latest"`) {
		t.Fatalf("effective model missing: %s", a)
	}
	// The effective model replaces the body's, so a caller passing the
	// body's own model gets the body's meaning.
	c, _ := Append(nil, []byte(`{"model":"m","state":null,"questions":{"q":{"type":"noul"}}}`), "model-latest")
	if string(c) != string(a) {
		t.Fatalf("effective model did not replace the body's:\n%s\n%s", c, a)
	}
}

func TestCanonicalStrings(t *testing.T) {
	got := canonical(t, `{"state":"\u0041\/\"\\\b\f\n\r\t\u0001\u001f\u007f\u00e9\u2028\ud83d\ude00<>&","questions":{"q":{"type":"noul"}}}`)
	want := `{"model":"model-latest","questions":{"q":{"type":"noul"}},"state":"A/\"\\\b\f\n\r\t\u0001\u001f` + "\u007fé\u2028😀<>&" + `"}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestCanonicalSortsByDecodedKeyBytes(t *testing.T) {
	got := canonical(t, `{"state":{"b":1,"a":2,"\u00e9":3,"B":4,"":5,"aa":6},"questions":{"q":{"type":"noul"}}}`)
	want := `{"model":"model-latest","questions":{"q":{"type":"noul"}},"state":{"":5,"B":4,"a":2,"aa":6,"b":1,"é":3}}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestFingerprint(t *testing.T) {
	fp := Fingerprint([]byte(`{}`))
	if fp != "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" {
		t.Fatalf("Fingerprint({}) = %s", fp)
	}
	if Fingerprint([]byte(`{"a":1}`)) == fp {
		t.Fatal("different canonical forms share a fingerprint")
	}
}

func TestCostIgnoresFormatting(t *testing.T) {
	compact := `{"state":"` + strings.Repeat("x", 4000) + `","questions":{"q":{"type":"noul"}}}`
	spaced := strings.Replace(compact, `,"questions"`, strings.Repeat(" ", 3000)+`,"questions"`, 1)
	priced := func(body string) int64 {
		var e Encoder
		if _, err := e.Append(nil, []byte(body), defaultModel); err != nil {
			t.Fatal(err)
		}
		return pricing.Cost(1, e.PricedLen())
	}
	if a, b := priced(compact), priced(spaced); a != b || a != 1 {
		t.Fatalf("cost depends on whitespace: %d vs %d", a, b)
	}
}

// spellings returns JSON spellings of ±digits × 10^x: plain notation, and
// the point after each of the digits with an exponent, written with and
// without "+", and padded with a zero at either end.
func spellings(neg bool, digits string, x int) []string {
	sign := ""
	if neg {
		sign = "-"
	}
	k := len(digits)
	var out []string
	switch n := k + x; {
	case x >= 0:
		out = append(out, digits+strings.Repeat("0", x))
	case n > 0:
		out = append(out, digits[:n]+"."+digits[n:], digits[:n]+"."+digits[n:]+"0")
	default:
		out = append(out, "0."+strings.Repeat("0", -n)+digits)
	}
	for p := 1; p <= k; p++ {
		m := digits[:p]
		if p < k {
			m += "." + digits[p:]
		}
		e := x + k - p
		out = append(out, m+"e"+strconv.Itoa(e), m+"E"+strconv.Itoa(e))
		if e >= 0 {
			out = append(out, m+"e+"+strconv.Itoa(e))
		}
		if p < k {
			out = append(out, m+"0e"+strconv.Itoa(e))
		} else {
			out = append(out, m+"0e"+strconv.Itoa(e-1))
		}
	}
	out = append(out, "0."+digits+"e"+strconv.Itoa(x+k))
	for i := range out {
		out[i] = sign + out[i]
	}
	return out
}

func TestShortestSpellingIsNoLongerThanAnyAndIsOne(t *testing.T) {
	// 95 digits at x = -100 are where "d.dd…e-6" is shorter than both
	// plain notation and the digits with an exponent.
	long := strings.Repeat("1234567891", 9) + "23457"
	for _, digits := range []string{"1", "5", "15", "123", "1234567", "12345678901234567890123", long} {
		for x := -120; x <= 40; x++ {
			for _, neg := range []bool{false, true} {
				all := spellings(neg, digits, x)
				shortest := len(all[0])
				canonical, short, ok := appendNumber(nil, all[0])
				if !ok {
					t.Fatalf("appendNumber(%s) refused", all[0])
				}
				for _, s := range all {
					c, sh, ok := appendNumber(nil, s)
					if !ok || string(c) != string(canonical) || sh != short {
						t.Fatalf("%s: canonical %s short %d, want %s %d (same value as %s)", s, c, sh, canonical, short, all[0])
					}
					shortest = min(shortest, len(s))
				}
				// The spellings above include the shortest there is, so
				// short must be exactly it: never longer than a client's
				// spelling, never shorter than any spelling can be.
				if short != shortest {
					t.Errorf("%v %s×10^%d: short %d, the shortest spelling has %d (%q)", neg, digits, x, short, shortest, all)
				}
				if short > len(canonical) {
					t.Errorf("%s: short %d longer than canonical %s", all[0], short, canonical)
				}
			}
		}
	}
}

func TestPricedLenCountsNumbersAtTheirShortest(t *testing.T) {
	var e Encoder
	for _, c := range []struct {
		body string
		want int // PricedLen
	}{
		// 1e20 is written out as 21 digits in the canonical form; priced at
		// its own 4 bytes.
		{`{"model":"m","state":[1e20,1e20],"questions":{"q":{"type":"noul"}}}`, len(`{"model":"m","questions":{"q":{"type":"noul"}},"state":[1e20,1e20]}`)},
		// 100000000000000000000 is priced as 1e20, whitespace not at all.
		{`{ "model" : "m", "state" : [100000000000000000000], "questions":{"q":{"type":"noul"}}}`, len(`{"model":"m","questions":{"q":{"type":"noul"}},"state":[1e20]}`)},
		{`{"model":"m","state":[1e-6,-0.0,1.5e+300],"questions":{"q":{"type":"noul"}}}`, len(`{"model":"m","questions":{"q":{"type":"noul"}},"state":[1e-6,0,15e299]}`)},
		// An exponent too long for shortestLen is counted as the client
		// wrote it, not as the canonical 1.2e-1999999999999999.
		{`{"model":"m","state":[12e-2000000000000000],"questions":{"q":{"type":"noul"}}}`, len(`{"model":"m","questions":{"q":{"type":"noul"}},"state":[12e-2000000000000000]}`)},
	} {
		form, err := e.Append(nil, []byte(c.body), "m")
		if err != nil {
			t.Fatal(err)
		}
		if got := e.PricedLen(); got != c.want || got > len(form) {
			t.Errorf("%s: PricedLen %d, want %d (canonical %d bytes: %s)", c.body, got, c.want, len(form), form)
		}
	}
	// The body the price was once several times: 12,960 numbers of 1e20
	// under 32 questions, 65,531 bytes. Priced at most at its own length.
	var b strings.Builder
	b.WriteString(`{"model":"m","state":[`)
	for i := range 12960 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("1e20")
	}
	b.WriteString(`],"questions":{`)
	for i := range 32 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"q%d":{"type":"noul"}`, i)
	}
	b.WriteString(`}}`)
	form, err := e.Append(nil, []byte(b.String()), "m")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.PricedLen(); got > b.Len() || len(form) < 4*b.Len() {
		t.Errorf("PricedLen %d for a %d-byte body (canonical %d bytes)", got, b.Len(), len(form))
	}
}

func TestEncoderSteadyStateAllocatesNothing(t *testing.T) {
	body := []byte(`{"state":{"z":[1e2,-0.5,"a\nb",{"y":null,"x":true}]},"questions":{"q":{"type":"choice","criteria":{"b":"B","a":"A"}}}}`)
	var e Encoder
	dst, err := e.Append(nil, body, "model-latest")
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(20, func() { dst, _ = e.Append(dst[:0], body, "model-latest") }); n != 0 {
		t.Errorf("%v allocations per Append", n)
	}
	var v validate.Validator
	if n := testing.AllocsPerRun(20, func() {
		_, tree, _ := v.ValidateTree(body)
		dst, _ = e.AppendTree(dst[:0], tree, "model-latest")
	}); n != 0 {
		t.Errorf("%v allocations per ValidateTree and AppendTree", n)
	}
}

func TestAppendRejectsNonObjects(t *testing.T) {
	for _, b := range []string{`[]`, `1`, `{"a":`, `{"a":NaN}`} {
		if _, err := Append(nil, []byte(b), "m"); err == nil {
			t.Errorf("%s accepted", b)
		}
	}
}

func TestCanonicalFormIsAFixedPoint(t *testing.T) {
	for _, body := range []string{
		`{"state":{"b":[1e2,-0,0.000001,1e-7,"\u00e9\n"],"a":{"z":null,"y":true}},"questions":{"q":{"type":"noul"}}}`,
		`{"model":"m","state":[12345678901234567890123e-30,5e-99999999999999999999],"questions":{"q":{"type":"score","criteria":["a","b"]}},"x":{"\u0000":1}}`,
	} {
		once := canonical(t, body)
		twice := canonical(t, once)
		if once != twice {
			t.Errorf("canonical form changes when canonicalised again:\n%s\n%s", once, twice)
		}
	}
}
