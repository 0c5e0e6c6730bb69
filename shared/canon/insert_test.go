package canon

import (
	"encoding/json"
	"testing"

	"decisiongateway/shared/validate"
)

func TestInsertModelKeepsEveryOtherByte(t *testing.T) {
	body := " \n{ \"state\" : [123456789012345678901234567890, 1e-400, 1.10],\n  \"questions\":{\"q\":{\"type\":\"noul\"}}, \"x\":\"\\u0041\" }\n"
	var v validate.Validator
	req, err := v.Validate([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	out := InsertModel(nil, []byte(body), req.InsertAt, "model-latest")
	ins := `"model":"model-latest",`
	if got := string(out[:req.InsertAt]) + string(out[req.InsertAt+len(ins):]); got != body {
		t.Fatalf("bytes outside the insertion changed:\n%q\n%q", got, body)
	}
	if string(out[req.InsertAt:req.InsertAt+len(ins)]) != ins {
		t.Fatalf("inserted %q", out[req.InsertAt:req.InsertAt+len(ins)])
	}
	var v2 validate.Validator
	req2, err := v2.Validate(out)
	if err != nil || !req2.HasModel || req2.Model != "model-latest" {
		t.Fatalf("result does not validate with the model: %v %+v", err, req2)
	}
}

func TestInsertModelEmptyObject(t *testing.T) {
	for body, want := range map[string]string{
		`{}`:       `{"model":"m"}`,
		"{ \n}":    "{\"model\":\"m\" \n}",
		` {"a":1}`: ` {"model":"m","a":1}`,
	} {
		off := 1
		if body[0] == ' ' {
			off = 2
		}
		if got := string(InsertModel(nil, []byte(body), off, "m")); got != want {
			t.Errorf("InsertModel(%q) = %q, want %q", body, got, want)
		}
	}
}

func TestInsertModelEscapesTheName(t *testing.T) {
	model := "vendor/\"odd\"\\name\u2028é"
	out := InsertModel(nil, []byte(`{"state":null}`), 1, model)
	var m struct{ Model string }
	if err := json.Unmarshal(out, &m); err != nil || m.Model != model {
		t.Fatalf("%s: %v %q", out, err, m.Model)
	}
}
