package jsonw

import (
	"encoding/json"
	"testing"
)

func TestAppendStringRoundTripsThroughEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote\back`, "tab\tnl\nret\r", "\x00\x1f\x7f", "<b>&amp;</b>", "ü€😀", "end\\"} {
		var got string
		if err := json.Unmarshal(AppendString(nil, s), &got); err != nil || got != s {
			t.Errorf("%q: got %q, %v (text %s)", s, got, err, AppendString(nil, s))
		}
	}
}

func TestWriterBuildsNestedStructure(t *testing.T) {
	var w Writer
	w.Open('{')
	w.FieldString("a", "x")
	w.Key("b")
	w.Open('[')
	w.Int(1)
	w.Bool(true)
	w.Null()
	w.Raw([]byte(`{"r":1}`))
	w.Close(']')
	w.FieldInt("c", -5)
	w.Close('}')
	if got := string(w.B); got != `{"a":"x","b":[1,true,null,{"r":1}],"c":-5}` {
		t.Fatal(got)
	}
}
