package validate

import (
	"strings"
	"testing"
)

const answerRequest = `{"state":"s","questions":{` +
	`"pick":{"type":"choice","criteria":{"red":"r","green":"g","blue":"b"}},` +
	`"rate":{"type":"score","criteria":["low","mid","high"]},` +
	`"holds":{"type":"noul"}}}`

const goodAnswer = `{"model":"vendor/model-1","answers":{` +
	`"pick":{"type":"choice","choice":"green","probabilities":{"red":0.1,"green":0.7,"blue":0.2},"confidence":0.7},` +
	`"rate":{"type":"score","score":1.2,"probabilities":{"0":0.1,"1":0.6,"2":0.3},"legend":{"0":"low","1":"mid","2":"high"},"confidence":0.6},` +
	`"holds":{"type":"noul","noul":0.25}},` +
	`"usage":{"input_tokens":10,"output_tokens":3},"x-vendor":{"trace":[1,2]}}`

// answerCheck validates answerRequest, then answer, and asserts acceptance
// or the invalid_upstream_answer code with a message containing path.
func answerCheck(t *testing.T, answer string, path string) {
	t.Helper()
	var v Validator
	req, err := v.Validate([]byte(answerRequest))
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(answer)
	e := v.ValidateAnswer(req, body)
	if string(body) != answer {
		t.Fatalf("ValidateAnswer modified the body")
	}
	switch {
	case path == "" && e != nil:
		t.Fatalf("rejected: %s\n%s", e.Message, answer)
	case path != "" && e == nil:
		t.Fatalf("accepted, want a failure at %s\n%s", path, answer)
	case path != "" && (e.Code != "invalid_upstream_answer" || e.Status() != 502 || !strings.Contains(e.Message, path)):
		t.Fatalf("got %d %s %q, want invalid_upstream_answer at %s", e.Status(), e.Code, e.Message, path)
	}
}

// edit replaces old by new in goodAnswer, failing if old is absent.
func edit(t *testing.T, old, new string) string {
	t.Helper()
	if !strings.Contains(goodAnswer, old) {
		t.Fatalf("%q not in goodAnswer", old)
	}
	return strings.Replace(goodAnswer, old, new, 1)
}

func TestAnswerAccepted(t *testing.T) {
	answerCheck(t, goodAnswer, "")
	answerCheck(t, edit(t, `,"usage":{"input_tokens":10,"output_tokens":3}`, ``), "")
	answerCheck(t, edit(t, `"output_tokens":3`, `"output_tokens":null`), "")
	answerCheck(t, edit(t, `"green"`, `"gr\u0065en"`), "") // escaped names decode to the option
}

func TestAnswerShape(t *testing.T) {
	answerCheck(t, `[]`, "JSON object")
	answerCheck(t, `{"model":"m","answers":{}`, "not acceptable JSON")
	answerCheck(t, edit(t, `"model":"vendor/model-1"`, `"model":1`), "model")
	answerCheck(t, edit(t, `"model":"vendor/model-1",`, ``), "model")
	answerCheck(t, edit(t, `"usage":{"input_tokens":10`, `"usage":{"input_tokens":1.5`), "usage.input_tokens")
	answerCheck(t, edit(t, `"usage":{"input_tokens":10`, `"usage":{"input_tokens":-1`), "usage.input_tokens")
	answerCheck(t, edit(t, `"usage":{"input_tokens":10,"output_tokens":3}`, `"usage":[]`), "usage")
	answerCheck(t, edit(t, `"holds":{"type":"noul","noul":0.25}`, `"holds":{"type":"noul","noul":0.25},"extra":{"type":"noul","noul":0}`), "answers")
	answerCheck(t, edit(t, `,"holds":{"type":"noul","noul":0.25}`, ``), "answers")
	answerCheck(t, edit(t, `"holds":{"type":"noul","noul":0.25}`, `"other":{"type":"noul","noul":0.25}`), "answers.holds")
	answerCheck(t, edit(t, `"noul":0.25}`, `"noul":0.25,"noul":0.5}`), "duplicate")
}

func TestAnswerChoice(t *testing.T) {
	answerCheck(t, edit(t, `"type":"choice"`, `"type":"score"`), "answers.pick.type")
	answerCheck(t, edit(t, `"choice":"green"`, `"choice":"purple"`), "answers.pick.choice")
	answerCheck(t, edit(t, `"choice":"green",`, ``), "answers.pick.choice")
	answerCheck(t, edit(t, `,"confidence":0.7`, ``), "answers.pick.confidence")
	answerCheck(t, edit(t, `"confidence":0.7`, `"confidence":"high"`), "answers.pick.confidence")
	answerCheck(t, edit(t, `"red":0.1,`, ``), "answers.pick.probabilities")
	answerCheck(t, edit(t, `"red":0.1`, `"Red":0.1`), "answers.pick.probabilities")
	answerCheck(t, edit(t, `"blue":0.2}`, `"blue":0.2,"pink":0}`), "answers.pick.probabilities")
	answerCheck(t, edit(t, `"red":0.1`, `"red":"0.1"`), "answers.pick.probabilities.red")
	answerCheck(t, edit(t, `"red":0.1,"green":0.7`, `"red":-0.1,"green":0.9`), "answers.pick.probabilities.red")
	answerCheck(t, edit(t, `"red":0.1,"green":0.7`, `"red":0.1,"green":0.75`), "answers.pick.probabilities")
}

func TestAnswerProbabilitiesSumTolerance(t *testing.T) {
	answerCheck(t, edit(t, `"green":0.7`, `"green":0.709`), "") // sum 1.009
	answerCheck(t, edit(t, `"green":0.7`, `"green":0.691`), "") // sum 0.991
	answerCheck(t, edit(t, `"green":0.7`, `"green":0.71`), "")  // sum 1.01 exactly, float rounding included
	answerCheck(t, edit(t, `"green":0.7`, `"green":0.7101`), "answers.pick.probabilities")
	answerCheck(t, edit(t, `"green":0.7`, `"green":0.6899`), "answers.pick.probabilities")
}

func TestAnswerScore(t *testing.T) {
	answerCheck(t, edit(t, `"score":1.2`, `"score":1.21`), "") // Σ i·p = 1.2, within 0.01
	answerCheck(t, edit(t, `"score":1.2`, `"score":1.19`), "")
	answerCheck(t, edit(t, `"score":1.2`, `"score":1.2101`), "answers.rate.score")
	answerCheck(t, edit(t, `"score":1.2`, `"score":"1.2"`), "answers.rate.score")
	answerCheck(t, edit(t, `"0":0.1,"1":0.6,"2":0.3},"legend"`, `"0":0,"1":0,"2":1},"legend"`), "answers.rate.score")
	answerCheck(t, edit(t, `"score":1.2,"probabilities":{"0":0.1,"1":0.6,"2":0.3}`, `"score":2,"probabilities":{"0":0,"1":0,"2":1}`), "")
	answerCheck(t, edit(t, `"score":1.2,"probabilities":{"0":0.1,"1":0.6,"2":0.3}`, `"score":0,"probabilities":{"0":1,"1":0,"2":0}`), "")
	answerCheck(t, edit(t, `"0":0.1,"1":0.6,"2":0.3},"legend"`, `"0":0.1,"1":0.6,"3":0.3},"legend"`), "answers.rate.probabilities")
	answerCheck(t, edit(t, `"0":0.1,"1":0.6,"2":0.3},"legend"`, `"0":0.1,"1":0.6,"02":0.3},"legend"`), "answers.rate.probabilities")
	answerCheck(t, edit(t, `"0":0.1,"1":0.6,"2":0.3},"legend"`, `"0":0.1,"1":0.9},"legend"`), "answers.rate.probabilities")
	answerCheck(t, edit(t, `"legend":{"0":"low","1":"mid","2":"high"}`, `"legend":{"0":"low","1":"mid"}`), "answers.rate.legend")
	answerCheck(t, edit(t, `"legend":{"0":"low","1":"mid","2":"high"}`, `"legend":{"0":"low","1":"mid","x":"high"}`), "answers.rate.legend")
	answerCheck(t, edit(t, `"legend":{"0":"low","1":"mid","2":"high"}`, `"legend":{"0":"low","1":"mid","2":3}`), "answers.rate.legend.2")
	answerCheck(t, edit(t, `"legend":{"0":"low","1":"mid","2":"high"},`, ``), "answers.rate.legend")
	answerCheck(t, edit(t, `"confidence":0.6`, `"confidence":null`), "answers.rate.confidence")
}

func TestAnswerNoul(t *testing.T) {
	answerCheck(t, edit(t, `"noul":0.25`, `"noul":0`), "")
	answerCheck(t, edit(t, `"noul":0.25`, `"noul":1`), "")
	answerCheck(t, edit(t, `"noul":0.25`, `"noul":1.0001`), "answers.holds.noul")
	answerCheck(t, edit(t, `"noul":0.25`, `"noul":-0.1`), "answers.holds.noul")
	answerCheck(t, edit(t, `"noul":0.25`, `"noul":true`), "answers.holds.noul")
	answerCheck(t, edit(t, `"type":"noul",`, ``), "answers.holds.type")
}

// goodAnswered validates answerRequest and accepts goodAnswer for it.
func goodAnswered(t *testing.T) (*Validator, *Request) {
	t.Helper()
	v := new(Validator)
	req, err := v.Validate([]byte(answerRequest))
	if err != nil {
		t.Fatal(err)
	}
	if e := v.ValidateAnswer(req, []byte(goodAnswer)); e != nil {
		t.Fatal(e)
	}
	return v, req
}

func TestAnswerKeepsRequestValid(t *testing.T) {
	v, req := goodAnswered(t)
	if req.Questions[0].Name != "pick" || strings.Join(req.Questions[0].Options, ",") != "red,green,blue" {
		t.Fatalf("request summary changed after answer validation: %+v", req.Questions[0])
	}
	body := []byte(goodAnswer)
	if n := testing.AllocsPerRun(20, func() { v.ValidateAnswer(req, body) }); n != 0 {
		t.Errorf("%v allocations per ValidateAnswer", n)
	}
}

// An accepted answer's model and token counts are read while it is checked;
// a rejected one leaves the previous answer's.
func TestAnsweredReportsTheAcceptedAnswersMeta(t *testing.T) {
	v, req := goodAnswered(t)
	if got, want := v.Answered(), (AnswerMeta{Model: "vendor/model-1", InputTokens: 10, OutputTokens: 3}); got != want {
		t.Errorf("Answered() = %+v, want %+v", got, want)
	}
	noUsage := strings.Replace(strings.Replace(goodAnswer, `"usage":{"input_tokens":10,"output_tokens":3}`, `"usage":{"input_tokens":null}`, 1),
		`"model":"vendor/model-1"`, `"model":"m\u00e9"`, 1)
	if e := v.ValidateAnswer(req, []byte(noUsage)); e != nil {
		t.Fatal(e)
	}
	if got, want := v.Answered(), (AnswerMeta{Model: "mé", InputTokens: -1, OutputTokens: -1}); got != want {
		t.Errorf("Answered() = %+v, want %+v", got, want)
	}
	if e := v.ValidateAnswer(req, []byte(`{"model":"other","answers":{}}`)); e == nil {
		t.Fatal("an answer without its entries was accepted")
	}
	if got := v.Answered().Model; got != "mé" {
		t.Errorf("after a rejected answer Answered().Model = %q, want the accepted one's", got)
	}
}

// A token count spelled as a float that is an integer is that count, not 0.
func TestAnswerTokenCountsInAnyIntegerSpelling(t *testing.T) {
	v, req := goodAnswered(t)
	for usage, want := range map[string][2]int64{
		`{"input_tokens":120,"output_tokens":9007199254740993}`: {120, 9007199254740993},
		`{"input_tokens":120.0,"output_tokens":1.2e2}`:          {120, 120},
		`{"input_tokens":1e300,"output_tokens":0}`:              {-1, 0},
	} {
		body := strings.Replace(goodAnswer, `{"input_tokens":10,"output_tokens":3}`, usage, 1)
		if e := v.ValidateAnswer(req, []byte(body)); e != nil {
			t.Fatalf("%s: %v", usage, e)
		}
		if m := v.Answered(); m.InputTokens != want[0] || m.OutputTokens != want[1] {
			t.Errorf("%s: tokens %d / %d, want %d / %d", usage, m.InputTokens, m.OutputTokens, want[0], want[1])
		}
	}
}
