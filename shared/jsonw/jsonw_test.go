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

// Every byte value, alone and amid text, decodes back to itself from both
// escapings, and each escapes exactly its set: minimal only '"', '\\' and
// U+0000–U+001F (the canonical form depends on that), htmlSafe those and
// <, >, &.
func TestBothEscapingsRoundTripAndEscapeOnlyTheirSet(t *testing.T) {
	for c := 0; c < 0x80; c++ {
		s := "a" + string(rune(c)) + "z"
		for _, f := range []struct {
			name    string
			enc     func([]byte, string) []byte
			escaped bool
		}{
			{"minimal", AppendMinimal, c < 0x20 || c == '"' || c == '\\'},
			{"htmlSafe", AppendString, c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&'},
		} {
			text := f.enc(nil, s)
			var got string
			if err := json.Unmarshal(text, &got); err != nil || got != s {
				t.Errorf("%s %#x: %s decodes to %q, %v", f.name, c, text, got, err)
			}
			if escaped := len(text) != len(s)+2; escaped != f.escaped {
				t.Errorf("%s %#x: escaped %v, want %v (%s)", f.name, c, escaped, f.escaped, text)
			}
		}
	}
	if got := string(AppendMinimal(nil, "\b\f\n\r\t\x01")); got != `"\b\f\n\r\t\u0001"` {
		t.Errorf("short escapes: %s", got)
	}
	if got := string(AppendMinimalContent(nil, `a"b`)); got != `a\"b` {
		t.Errorf("content: %s", got)
	}
}
