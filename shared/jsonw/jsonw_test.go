package jsonw

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
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

// bytewise is the plainest escaper: each byte looked up and written on its
// own. The word-at-a-time appendEscaped must write exactly what it writes.
func bytewise(b []byte, s string, esc *escaping) []byte {
	for i := 0; i < len(s); i++ {
		switch c, e := s[i], esc.table[s[i]]; e {
		case 0:
			b = append(b, c)
		case 'u':
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, '\\', e)
		}
	}
	return b
}

// Every byte value, alone or beside another, at every offset of strings
// of up to two sixteen-byte steps and a rest, and random text: both tables
// write what the byte-at-a-time escaper writes.
func TestWordAtATimeEscapesAsBytewise(t *testing.T) {
	check := func(s string) {
		t.Helper()
		for _, tab := range []*escaping{minimal, htmlSafe} {
			if got, want := appendEscaped(nil, s, tab), bytewise(nil, s, tab); string(got) != string(want) {
				t.Fatalf("%q (html %v): got %q, want %q", s, tab == htmlSafe, got, want)
			}
		}
	}
	for n := 0; n <= 34; n++ {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				b := []byte(strings.Repeat("abcdefgh", 5)[:n])
				b[pos] = byte(c)
				check(string(b))
				if pos+1 < n {
					b[pos+1] = byte(255 - c) // a neighbour the borrow could reach
					check(string(b))
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab \"\\<>&\x00\x1f\x7f\xc3\xa9\xe2\x82\xac\n\t")
	for range 20000 {
		b := make([]byte, r.IntN(72))
		for i := range b {
			if r.IntN(4) == 0 {
				b[i] = byte(r.IntN(256))
			} else {
				b[i] = alphabet[r.IntN(len(alphabet))]
			}
		}
		check(string(b))
	}
}

// BenchmarkEscape measures the escaper on a request's kind of text (plain
// words, a few escapes), beside the byte-at-a-time one in the same run:
//
//	go test ./shared/jsonw -run '^$' -bench Escape
func BenchmarkEscape(b *testing.B) {
	s := strings.Repeat("a ripe red apple lies on the kitchen table beside a green pear and two dark plums ", 50) + "\"quoted\"\n"
	for _, c := range []struct {
		name string
		f    func([]byte, string, *escaping) []byte
	}{{"words", appendEscaped}, {"bytewise", bytewise}} {
		b.Run(c.name, func(b *testing.B) {
			buf := make([]byte, 0, 2*len(s))
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				buf = c.f(buf[:0], s, minimal)
			}
		})
	}
}
