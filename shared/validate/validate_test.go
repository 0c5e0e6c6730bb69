package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// minimal is a valid request the rule tests vary.
const minimal = `{"state":null,"questions":{"q1":{"type":"noul"}}}`

// expect validates body and asserts the error code ("" for success) and,
// for failures, the HTTP status.
func expect(t *testing.T, body string, code string) *Request {
	t.Helper()
	var v Validator
	req, err := v.Validate([]byte(body))
	sameWithTree(t, body, req, err)
	switch {
	case code == "" && err != nil:
		t.Fatalf("unexpected rejection %s (%d): %s\nbody: %.200s", err.Code, err.Status(), err.Message, body)
	case code != "" && err == nil:
		t.Fatalf("accepted, want %s\nbody: %.200s", code, body)
	case code != "" && string(err.Code) != code:
		t.Fatalf("code %s (%s), want %s\nbody: %.200s", err.Code, err.Message, code, body)
	case code != "":
		want := 400
		if code == "body_too_large" {
			want = 413
		}
		if err.Status() != want {
			t.Fatalf("status %d for %s, want %d", err.Status(), code, want)
		}
		if req != nil {
			t.Fatalf("rejected body returned a request")
		}
	}
	return req
}

// sameWithTree checks that ValidateTree decides body exactly as Validate
// did (req, err), and that the tree it returns is the whole body.
func sameWithTree(t *testing.T, body string, req *Request, err *Error) {
	t.Helper()
	var w Validator
	req2, tree, err2 := w.ValidateTree([]byte(body))
	if (err == nil) != (err2 == nil) || err != nil && *err != *err2 {
		t.Fatalf("ValidateTree disagrees with Validate: %v vs %v\nbody: %.200s", err2, err, body)
	}
	if err != nil {
		if req2 != nil || tree != nil {
			t.Fatalf("ValidateTree refused the body but returned a request or tree")
		}
		return
	}
	if fmt.Sprint(*req) != fmt.Sprint(*req2) {
		t.Fatalf("ValidateTree summary differs:\n%v\n%v", *req2, *req)
	}
	// The rules unescape strings in the tree, so its text may differ from
	// the body's: compare what both mean.
	if got := tree.MarshalTo(nil); !sameJSON(got, []byte(body)) {
		t.Fatalf("ValidateTree's tree is not the body:\n%.200s\n%.200s", got, body)
	}
}

func sameJSON(a, b []byte) bool {
	decode := func(p []byte) (v any, ok bool) {
		d := json.NewDecoder(bytes.NewReader(p))
		d.UseNumber()
		return v, d.Decode(&v) == nil
	}
	va, okA := decode(a)
	vb, okB := decode(b)
	return okA && okB && reflect.DeepEqual(va, vb)
}

type ruleCase struct {
	name, body, code string
}

func runCases(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { expect(t, c.body, c.code) })
	}
}

// withQuestions builds a request whose questions object is the given JSON.
func withQuestions(q string) string { return `{"state":"s","questions":` + q + `}` }

// choiceWith builds a request with one choice question of n options.
func choiceWith(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"o%d":"option %d"`, i, i)
	}
	return withQuestions(`{"q":{"type":"choice","criteria":{` + b.String() + `}}}`)
}

// scoreWith builds a request with one score question of n levels.
func scoreWith(n int) string {
	levels := make([]string, n)
	for i := range levels {
		levels[i] = fmt.Sprintf(`"level %d"`, i)
	}
	return withQuestions(`{"q":{"type":"score","criteria":[` + strings.Join(levels, ",") + `]}}`)
}

// questionsWith builds a request with n noul questions.
func questionsWith(n int) string {
	qs := make([]string, n)
	for i := range qs {
		qs[i] = fmt.Sprintf(`"q%d":{"type":"noul"}`, i)
	}
	return withQuestions(`{` + strings.Join(qs, ",") + `}`)
}

// nested wraps a valid state in depth-1 arrays so the whole body nests depth
// levels (the root object is level 1).
func nested(depth int) string {
	return `{"questions":{"q":{"type":"noul"}},"state":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
}

// padded returns a valid request of exactly n bytes.
func padded(n int) string {
	base := `{"questions":{"q":{"type":"noul"}},"state":""}`
	return base[:len(base)-3] + `"` + strings.Repeat("x", n-len(base)) + `"}`
}

func TestBodySizeLimit65536(t *testing.T) {
	runCases(t, []ruleCase{
		{"65536 bytes accepted", padded(65536), ""},
		{"65537 bytes rejected with 413", padded(65537), "body_too_large"},
		{"oversize checked before parsing", "{" + strings.Repeat(" ", 65536), "body_too_large"},
	})
}

func TestInvalidJSON(t *testing.T) {
	runCases(t, []ruleCase{
		{"empty body", ``, "invalid_json"},
		{"whitespace only", " \n", "invalid_json"},
		{"truncated", `{"state":null,"questions":{`, "invalid_json"},
		{"trailing comma in object", `{"state":null,}`, "invalid_json"},
		{"trailing comma in array", `{"state":[1,],"questions":{}}`, "invalid_json"},
		{"single quotes", `{'state':null}`, "invalid_json"},
		{"unquoted key", `{state:null}`, "invalid_json"},
		{"trailing data", minimal + `{}`, "invalid_json"},
		{"two values", minimal + ` 1`, "invalid_json"},
		{"NaN", `{"state":NaN}`, "invalid_json"},
		{"Infinity", `{"state":Infinity}`, "invalid_json"},
		{"leading plus", `{"state":+1}`, "invalid_json"},
		{"leading zero", `{"state":01}`, "invalid_json"},
		{"bare fraction", `{"state":.5}`, "invalid_json"},
		{"dot without digits", `{"state":1.}`, "invalid_json"},
		{"exponent without digits", `{"state":1e}`, "invalid_json"},
		{"hex number", `{"state":0x10}`, "invalid_json"},
		{"raw control character in string", "{\"state\":\"a\tb\"}", "invalid_json"},
		{"bad escape", `{"state":"\x"}`, "invalid_json"},
		{"short unicode escape", `{"state":"\u12"}`, "invalid_json"},
		{"comment", `{"state":null /* c */}`, "invalid_json"},
		{"byte order mark", "\xef\xbb\xbf" + minimal, "invalid_json"},
		{"literal typo", `{"state":nul}`, "invalid_json"},
		{"capitalised literal", `{"state":True}`, "invalid_json"},
		{"non-JSON whitespace", "{\"state\":\u00a0null}", "invalid_json"},
		{"surrounding JSON whitespace is fine", " \t\r\n" + minimal + " \n", ""},
	})
}

func TestInvalidUTF8(t *testing.T) {
	runCases(t, []ruleCase{
		{"invalid byte in string", "{\"state\":\"\xff\",\"questions\":{\"q\":{\"type\":\"noul\"}}}", "invalid_json"},
		{"truncated sequence", "{\"state\":\"\xe2\x82\",\"questions\":{\"q\":{\"type\":\"noul\"}}}", "invalid_json"},
		{"overlong encoding", "{\"state\":\"\xc0\xaf\",\"questions\":{\"q\":{\"type\":\"noul\"}}}", "invalid_json"},
		{"encoded surrogate", "{\"state\":\"\xed\xa0\x80\",\"questions\":{\"q\":{\"type\":\"noul\"}}}", "invalid_json"},
		{"lone high surrogate escape", `{"state":"\ud800","questions":{"q":{"type":"noul"}}}`, "invalid_json"},
		{"lone low surrogate escape", `{"state":"\udc00","questions":{"q":{"type":"noul"}}}`, "invalid_json"},
		{"high surrogate then non-surrogate", `{"state":"\ud800\u0041","questions":{"q":{"type":"noul"}}}`, "invalid_json"},
		{"surrogate pair escape", `{"state":"\ud83d\ude00","questions":{"q":{"type":"noul"}}}`, ""},
		{"multibyte UTF-8", `{"state":"héllo €😀","questions":{"q":{"type":"noul"}}}`, ""},
	})
}

func TestDepthLimit32(t *testing.T) {
	runCases(t, []ruleCase{
		{"depth 32 accepted", nested(32), ""},
		{"depth 33 rejected", nested(33), "json_too_deep"},
		{"objects count as levels", `{"questions":{"q":{"type":"noul"}},"state":` +
			strings.Repeat(`{"a":`, 32) + `1` + strings.Repeat(`}`, 32) + `}`, "json_too_deep"},
		{"deep inside a question counts", withQuestions(`{"q":{"type":"noul","x":` + strings.Repeat("[", 30) + strings.Repeat("]", 30) + `}}`), "json_too_deep"},
		{"64 KiB of brackets is rejected without recursion", "{\"state\":" + strings.Repeat("[", 65000), "json_too_deep"},
	})
}

func TestDuplicateKeyAfterEscapeDecoding(t *testing.T) {
	runCases(t, []ruleCase{
		{"plain duplicate at root", `{"state":1,"state":2,"questions":{"q":{"type":"noul"}}}`, "duplicate_key"},
		{"escaped duplicate at root", `{"state":null,"st\u0061te":null,"questions":{"q":{"type":"noul"}}}`, "duplicate_key"},
		{"a and \\u0061", `{"state":{"a":1,"\u0061":2},"questions":{"q":{"type":"noul"}}}`, "duplicate_key"},
		{"escaped solidus", `{"state":{"a/b":1,"a\/b":2},"questions":{"q":{"type":"noul"}}}`, "duplicate_key"},
		{"surrogate pair vs literal", `{"state":{"😀":1,"\ud83d\ude00":2},"questions":{"q":{"type":"noul"}}}`, "duplicate_key"},
		{"duplicate question name", `{"state":null,"questions":{"q":{"type":"noul"},"q":{"type":"noul"}}}`, "duplicate_key"},
		{"duplicate option", withQuestions(`{"q":{"type":"choice","criteria":{"x":"1","\u0078":"2"}}}`), "duplicate_key"},
		{"deep duplicate", `{"state":[[{"k":[{"z":1,"z":1}]}]],"questions":{"q":{"type":"noul"}}}`, "duplicate_key"},
		{"duplicate in a large object", `{"state":{` + manyKeys(500) + `,"k250":0},"questions":{"q":{"type":"noul"}}}`, "duplicate_key"},
		{"escaped duplicate in a large object", `{"state":{` + manyKeys(500) + `,"k\u0032\u00350":0},"questions":{"q":{"type":"noul"}}}`, "duplicate_key"},
		{"large object without duplicates", `{"state":{` + manyKeys(500) + `},"questions":{"q":{"type":"noul"}}}`, ""},
		{"same key in sibling objects is fine", `{"state":[{"a":1},{"a":2}],"questions":{"q":{"type":"noul"}}}`, ""},
		{"case differs is fine", `{"state":{"a":1,"A":2},"questions":{"q":{"type":"noul"}}}`, ""},
	})
}

func manyKeys(n int) string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf(`"k%d":%d`, i, i)
	}
	return strings.Join(ks, ",")
}

func TestDuplicateKeyMessageNamesPath(t *testing.T) {
	for body, want := range map[string]string{
		`{"state":null,"questions":{"q1":{"type":"choice","criteria":{"a":1,"\u0061":2}}}}`: `questions.q1.criteria: duplicate object key "a"`,
		`{"state":[0,{"k":[{"x":1,"x":2}]}],"questions":{}}`:                                `state[1].k[0]: duplicate object key "x"`,
		`{"a":1,"a":2}`: `duplicate object key "a"`,
	} {
		var v Validator
		_, err := v.Validate([]byte(body))
		if err == nil || err.Code != "duplicate_key" || err.Message != want {
			t.Errorf("%s: got %+v, want message %q", body, err, want)
		}
	}
}

func TestNumberRange(t *testing.T) {
	big := strings.Repeat("9", 2000)
	runCases(t, []ruleCase{
		{"1e308 accepted", `{"state":[1e308],` + minimal[14:], ""},
		{"max float64 accepted", `{"state":[1.7976931348623157e308, -1.7976931348623157e308],` + minimal[14:], ""},
		{"just below the overflow midpoint accepted", `{"state":[1.7976931348623158079372897140530341507993413271003782693617377898044496829276475094664901797758720709633028641669288791094655554785194040263065748867150582068190890200070838367627385484581771153176447573027006985557136695962284291481986083493647529271907416844436551070434271155969950809304288017790417449779e308],` + minimal[14:], ""},
		{"the overflow midpoint rejected", `{"state":[1.797693134862315807937289714053034150799341327100378269361737789804449682927647509466490179775872070963302864166928879109465555478519404026306574886715058206819089020007083836762738548458177115317644757302700698555713669596228429148198608349364752927190741684443655107043427115596995080930428801779041744977920e308],` + minimal[14:], "number_out_of_range"},
		{"1e309 rejected", `{"state":[1e309],` + minimal[14:], "number_out_of_range"},
		{"-1e309 rejected", `{"state":[-1e309],` + minimal[14:], "number_out_of_range"},
		{"1e400 rejected", `{"state":{"x":1e400},` + minimal[14:], "number_out_of_range"},
		{"huge exponent rejected", `{"state":[1e99999999999999999999999],` + minimal[14:], "number_out_of_range"},
		{"310-digit integer rejected", `{"state":[1` + strings.Repeat("0", 309) + `],` + minimal[14:], "number_out_of_range"},
		{"huge integer of 300 digits accepted", `{"state":[` + strings.Repeat("9", 300) + `],` + minimal[14:], ""},
		{"2000 nines as a fraction accepted", `{"state":[0.` + big + `],` + minimal[14:], ""},
		{"1e-400 accepted", `{"state":[1e-400],` + minimal[14:], ""},
		{"tiny exponent of 25 digits accepted", `{"state":[5e-9999999999999999999999999],` + minimal[14:], ""},
		{"zero with huge exponent accepted", `{"state":[0e99999999999,0.000e+400],` + minimal[14:], ""},
		{"fraction shifts the exponent", `{"state":[0.001e311],` + minimal[14:], ""},
		{"out-of-range number in a question", withQuestions(`{"q":{"type":"noul","x":2e308}}`), "number_out_of_range"},
	})
}

func TestStateRequired(t *testing.T) {
	runCases(t, []ruleCase{
		{"missing", `{"questions":{"q":{"type":"noul"}}}`, "missing_state"},
		{"null accepted", `{"state":null,"questions":{"q":{"type":"noul"}}}`, ""},
		{"string accepted", `{"state":"","questions":{"q":{"type":"noul"}}}`, ""},
		{"object accepted", `{"state":{},"questions":{"q":{"type":"noul"}}}`, ""},
		{"array accepted", `{"state":[],"questions":{"q":{"type":"noul"}}}`, ""},
		{"number rejected", `{"state":1,"questions":{"q":{"type":"noul"}}}`, "invalid_state"},
		{"boolean rejected", `{"state":false,"questions":{"q":{"type":"noul"}}}`, "invalid_state"},
	})
}

func TestRootMustBeObject(t *testing.T) {
	for _, b := range []string{`[]`, `"x"`, `1`, `null`, `true`} {
		expect(t, b, "body_not_object")
	}
}

func TestQuestionCount1To32(t *testing.T) {
	runCases(t, []ruleCase{
		{"1 accepted", questionsWith(1), ""},
		{"32 accepted", questionsWith(32), ""},
		{"33 rejected", questionsWith(33), "too_many_questions"},
		{"0 rejected", questionsWith(0), "invalid_questions"},
		{"missing", `{"state":null}`, "invalid_questions"},
		{"array instead of object", withQuestions(`[{"type":"noul"}]`), "invalid_questions"},
		{"null", withQuestions(`null`), "invalid_questions"},
	})
}

func TestQuestionNameRule(t *testing.T) {
	name := func(s string) string { return withQuestions(`{"` + s + `":{"type":"noul"}}`) }
	runCases(t, []ruleCase{
		{"128 multibyte characters accepted", name(strings.Repeat("é", 128)), ""},
		{"129 multibyte characters rejected", name(strings.Repeat("é", 129)), "invalid_question_name"},
		{"128 four-byte characters accepted (512 bytes)", name(strings.Repeat("😀", 128)), ""},
		{"129 ASCII characters rejected", name(strings.Repeat("a", 129)), "invalid_question_name"},
		{"128 escaped characters count decoded", name(strings.Repeat(`\u00e9`, 128)), ""},
		{"empty rejected", name(""), "invalid_question_name"},
		{"spaces rejected", name("   "), "invalid_question_name"},
		{"escaped whitespace rejected", name(`\t\n\u00a0\u2003`), "invalid_question_name"},
		{"inner space accepted", name(" a b "), ""},
	})
}

func TestQuestionType(t *testing.T) {
	q := func(s string) string { return withQuestions(`{"q":` + s + `}`) }
	runCases(t, []ruleCase{
		{"boolean is invalid", q(`{"type":"boolean"}`), "invalid_question_type"},
		{"missing", q(`{"criteria":null}`), "invalid_question_type"},
		{"not a string", q(`{"type":1}`), "invalid_question_type"},
		{"wrong case", q(`{"type":"Choice","criteria":{"a":"b"}}`), "invalid_question_type"},
		{"escaped type accepted", q(`{"type":"n\u006ful"}`), ""},
		{"question not an object", q(`"noul"`), "invalid_question"},
		{"question null", q(`null`), "invalid_question"},
	})
}

func TestInstructions(t *testing.T) {
	q := func(in string) string { return withQuestions(`{"q":{"type":"noul","instructions":` + in + `}}`) }
	runCases(t, []ruleCase{
		{"string", q(`"be brief"`), ""},
		{"object", q(`{"a":[1]}`), ""},
		{"array", q(`[]`), ""},
		{"null", q(`null`), ""},
		{"number rejected", q(`1`), "invalid_instructions"},
		{"boolean rejected", q(`true`), "invalid_instructions"},
	})
}

func TestChoiceOptions1To255(t *testing.T) {
	runCases(t, []ruleCase{
		{"1 accepted", choiceWith(1), ""},
		{"255 accepted", choiceWith(255), ""},
		{"256 rejected", choiceWith(256), "too_many_options"},
		{"0 rejected", choiceWith(0), "invalid_criteria"},
		{"missing criteria", withQuestions(`{"q":{"type":"choice"}}`), "invalid_criteria"},
		{"array criteria", withQuestions(`{"q":{"type":"choice","criteria":["a","b"]}}`), "invalid_criteria"},
		{"nested descriptions accepted", withQuestions(`{"q":{"type":"choice","criteria":{"a":{"x":[1,2]},"b":null}}}`), ""},
	})
}

func TestOptionNameRule(t *testing.T) {
	opt := func(s string) string { return withQuestions(`{"q":{"type":"choice","criteria":{"` + s + `":"d"}}}`) }
	runCases(t, []ruleCase{
		{"128 characters accepted", opt(strings.Repeat("ж", 128)), ""},
		{"129 characters rejected", opt(strings.Repeat("ж", 129)), "invalid_option_name"},
		{"blank rejected", opt(` \t`), "invalid_option_name"},
		{"empty rejected", opt(""), "invalid_option_name"},
	})
}

func TestScoreLevels2To10(t *testing.T) {
	runCases(t, []ruleCase{
		{"1 rejected", scoreWith(1), "invalid_criteria"},
		{"2 accepted", scoreWith(2), ""},
		{"10 accepted", scoreWith(10), ""},
		{"11 rejected", scoreWith(11), "too_many_levels"},
		{"object rejected", withQuestions(`{"q":{"type":"score","criteria":{"0":"a","1":"b"}}}`), "invalid_criteria"},
		{"missing rejected", withQuestions(`{"q":{"type":"score"}}`), "invalid_criteria"},
	})
}

func TestNoulCriteria(t *testing.T) {
	q := func(c string) string { return withQuestions(`{"q":{"type":"noul"` + c + `}}`) }
	runCases(t, []ruleCase{
		{"omitted", q(``), ""},
		{"null", q(`,"criteria":null`), ""},
		{"empty object", q(`,"criteria":{}`), ""},
		{"true and false", q(`,"criteria":{"true":"holds","false":"does not"}`), ""},
		{"extension member", q(`,"criteria":{"true":"x","weight":2}`), ""},
		{"string rejected", q(`,"criteria":"x"`), "invalid_criteria"},
		{"array rejected", q(`,"criteria":[]`), "invalid_criteria"},
	})
}

func TestModelRule(t *testing.T) {
	m := func(s string) string { return `{"model":` + s + `,"state":null,"questions":{"q":{"type":"noul"}}}` }
	runCases(t, []ruleCase{
		{"alias", m(`"model-latest"`), ""},
		{"128 characters", m(`"` + strings.Repeat("м", 128) + `"`), ""},
		{"129 characters", m(`"` + strings.Repeat("м", 129) + `"`), "invalid_model"},
		{"empty", m(`""`), "invalid_model"},
		{"blank", m(`"  "`), "invalid_model"},
		{"null", m(`null`), "invalid_model"},
		{"number", m(`1`), "invalid_model"},
		{"C0 control", m(`"a\u0001b"`), "invalid_model"},
		{"newline", m(`"a\nb"`), "invalid_model"},
		{"DEL", m(`"a\u007fb"`), "invalid_model"},
		{"C1 control", m(`"a\u0085b"`), "invalid_model"},
		{"just past C1", m(`"a\u00a0b"`), ""},
	})
}

func TestExtensionFieldsAllowedAndReported(t *testing.T) {
	if r := expect(t, minimal, ""); r.Extensions {
		t.Fatal("minimal request reported extensions")
	}
	r := expect(t, `{"state":null,"questions":{"q":{"type":"noul","x-extra":{"deep":[1]}}},"metadata":{"a":1}}`, "")
	if !r.Extensions {
		t.Fatal("root extension not reported")
	}
	r = expect(t, `{"state":null,"questions":{"q":{"type":"noul","extra":1}}}`, "")
	if r.Extensions {
		t.Fatal("a question's extension is not a root extension")
	}
}

func TestRequestSummary(t *testing.T) {
	body := "  \n{ \"model\":\"vendor/m\\u002d1\",\"state\":{\"k\":[1,2]},\"questions\":{" +
		`"pick":{"type":"choice","criteria":{"red":"r","gr\u0065en":{"why":"nested"},"blue":null}},` +
		`"rate":{"type":"score","criteria":["low","mid","high"]},` +
		`"holds":{"type":"noul","criteria":{"true":"yes"}}}}`
	r := expect(t, body, "")
	if !r.HasModel || r.Model != "vendor/m-1" {
		t.Fatalf("model %q %v", r.Model, r.HasModel)
	}
	if r.InsertAt != 4 || body[r.InsertAt-1] != '{' {
		t.Fatalf("InsertAt %d", r.InsertAt)
	}
	if len(r.Questions) != 3 {
		t.Fatalf("%d questions", len(r.Questions))
	}
	q := r.Questions
	if q[0].Name != "pick" || q[0].Type != Choice || strings.Join(q[0].Options, ",") != "red,green,blue" {
		t.Fatalf("choice summary %+v", q[0])
	}
	if q[1].Name != "rate" || q[1].Type != Score || q[1].Levels != 3 {
		t.Fatalf("score summary %+v", q[1])
	}
	if q[2].Name != "holds" || q[2].Type != Noul || q[2].Type.String() != "noul" {
		t.Fatalf("noul summary %+v", q[2])
	}
	if r := expect(t, minimal, ""); r.HasModel || r.Model != "" {
		t.Fatal("model reported for a request without one")
	}
}

func TestValidateDoesNotModifyBody(t *testing.T) {
	body := []byte(`{"state":"\u0041\n","questions":{"q\u0031":{"type":"choice","criteria":{"\u00e9":"x"}}}}`)
	orig := string(body)
	expect(t, string(body), "")
	var v Validator
	if _, err := v.Validate(body); err != nil {
		t.Fatal(err)
	}
	if string(body) != orig {
		t.Fatalf("body modified: %s", body)
	}
}

func TestErrorMessagesNamePath(t *testing.T) {
	cases := []struct{ body, path string }{
		{withQuestions(`{"q1":{"type":"choice","criteria":[]}}`), "questions.q1.criteria"},
		{withQuestions(`{"q1":{"type":"bool"}}`), "questions.q1.type"},
		{withQuestions(`{"a b":{"type":"noul","instructions":1}}`), `questions["a b"].instructions`},
		{`{"model":1,"state":null}`, "model"},
	}
	for _, c := range cases {
		var v Validator
		_, err := v.Validate([]byte(c.body))
		if err == nil || !strings.HasPrefix(err.Message, c.path+":") {
			t.Errorf("%s: message %v, want path %s", c.body, err, c.path)
		}
	}
}

func TestValidatorReuse(t *testing.T) {
	var v Validator
	bodies := []string{choiceWith(3), `{"state":1}`, scoreWith(4), minimal, choiceWith(200)}
	for round := 0; round < 3; round++ {
		for _, b := range bodies {
			var fresh Validator
			r1, e1 := v.Validate([]byte(b))
			r2, e2 := fresh.Validate([]byte(b))
			if (e1 == nil) != (e2 == nil) || e1 != nil && *e1 != *e2 {
				t.Fatalf("reused validator disagrees: %v vs %v", e1, e2)
			}
			if r1 != nil && fmt.Sprint(*r1) != fmt.Sprint(*r2) {
				t.Fatalf("reused validator summary differs:\n%v\n%v", *r1, *r2)
			}
		}
	}
}

func TestValidateSteadyStateAllocatesNothing(t *testing.T) {
	for name, body := range benchBodies() {
		var v Validator
		b := []byte(body)
		if _, err := v.Validate(b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := testing.AllocsPerRun(20, func() { v.Validate(b) }); n != 0 {
			t.Errorf("%s: %v allocations per Validate", name, n)
		}
		if n := testing.AllocsPerRun(20, func() { v.ValidateTree(b) }); n != 0 {
			t.Errorf("%s: %v allocations per ValidateTree", name, n)
		}
	}
}

func TestIsJSONContentType(t *testing.T) {
	for v, want := range map[string]bool{
		"application/json":                    true,
		"Application/JSON":                    true,
		"application/json; charset=utf-8":     true,
		"application/json;charset=UTF-8":      true,
		` application/json ; charset="utf-8"`: true,
		"application/json; foo=bar":           true,
		"application/json; charset=latin1":    false,
		"application/jsonx":                   false,
		"application/merge-patch+json":        false,
		"text/json":                           false,
		"text/plain":                          false,
		"":                                    false,
	} {
		if got := IsJSONContentType(v); got != want {
			t.Errorf("IsJSONContentType(%q) = %v, want %v", v, got, want)
		}
	}
}
