package validate

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// A request read back from its state is the one Validate returned, and
// answers are checked against it as they would be against that one.
func TestRequestStateRoundTrip(t *testing.T) {
	for _, body := range []string{
		answerRequest,
		`{"model":"m\u00e9","state":null,"x-ext":1,"questions":{"q":{"type":"noul"}}}`,
	} {
		var v Validator
		req, err := v.Validate([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err.Message)
		}
		want := *req
		want.Questions = append([]Question(nil), req.Questions...)
		state := req.AppendState(nil)

		var w Validator
		got, ok := w.RequestFromState(state)
		if !ok {
			t.Fatalf("%s: state not read back", body)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("read back %+v, want %+v", *got, want)
		}
	}
	var w Validator
	req, ok := w.RequestFromState(mustState(t, answerRequest))
	if !ok {
		t.Fatal("state not read back")
	}
	if e := w.ValidateAnswer(req, []byte(goodAnswer)); e != nil {
		t.Errorf("answer refused against the read-back request: %s", e.Message)
	}
	if e := w.ValidateAnswer(req, []byte(`{"model":"m","answers":{"pick":{}}}`)); e == nil {
		t.Error("an answer missing entries was accepted against the read-back request")
	}
}

// Bytes AppendState did not write are refused, never half read.
func TestRequestStateRefusesWhatItDidNotWrite(t *testing.T) {
	state := mustState(t, answerRequest)
	var v Validator
	for n := range len(state) {
		if _, ok := v.RequestFromState(state[:n]); ok {
			t.Errorf("a state cut to %d of %d bytes was read", n, len(state))
		}
	}
	if _, ok := v.RequestFromState(append(state, 0)); ok {
		t.Error("a state with a byte after it was read")
	}
	// 33 questions: more than Validate accepts.
	tooMany := binary.AppendUvarint(append(appendString(nil, ""), 0, 1), 33)
	if _, ok := v.RequestFromState(tooMany); ok {
		t.Error("a state of 33 questions was read")
	}
	// A question type that does not exist.
	bad := append(binary.AppendUvarint(append(appendString(nil, ""), 0, 1), 1), appendString(nil, "q")...)
	bad = append(bad, 9, 0, 0)
	if _, ok := v.RequestFromState(bad); ok {
		t.Error("a state with question type 9 was read")
	}
}

func mustState(t *testing.T, body string) []byte {
	t.Helper()
	var v Validator
	req, err := v.Validate([]byte(body))
	if err != nil {
		t.Fatal(err.Message)
	}
	return req.AppendState(nil)
}
