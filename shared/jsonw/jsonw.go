// Package jsonw appends JSON text to a byte slice. Functions build their
// bodies with it instead of encoding/json: no reflection, small TinyGo
// modules, and the field order the code states.
package jsonw

import "strconv"

// Writer appends JSON. The zero value is ready; B holds the text.
// Callers are responsible for the structure (commas are automatic).
type Writer struct {
	B     []byte
	comma bool
}

func (w *Writer) sep() {
	if w.comma {
		w.B = append(w.B, ',')
	}
	w.comma = true
}

// Open starts an object or array ('{' or '[').
func (w *Writer) Open(c byte) { w.sep(); w.B = append(w.B, c); w.comma = false }

// Close ends an object or array ('}' or ']').
func (w *Writer) Close(c byte) { w.B = append(w.B, c); w.comma = true }

// Key writes an object key; the next call writes its value.
func (w *Writer) Key(k string) {
	w.sep()
	w.B = AppendString(w.B, k)
	w.B = append(w.B, ':')
	w.comma = false
}

// String writes a string value.
func (w *Writer) String(s string) { w.sep(); w.B = AppendString(w.B, s) }

// Int writes an integer value.
func (w *Writer) Int(v int64) { w.sep(); w.B = strconv.AppendInt(w.B, v, 10) }

// Bool writes a boolean value.
func (w *Writer) Bool(v bool) { w.sep(); w.B = strconv.AppendBool(w.B, v) }

// Null writes null.
func (w *Writer) Null() { w.sep(); w.B = append(w.B, "null"...) }

// Raw writes already-valid JSON text as a value.
func (w *Writer) Raw(j []byte) { w.sep(); w.B = append(w.B, j...) }

// Field shorthands: key plus value.
func (w *Writer) FieldString(k, v string)    { w.Key(k); w.String(v) }
func (w *Writer) FieldInt(k string, v int64) { w.Key(k); w.Int(v) }
func (w *Writer) FieldBool(k string, v bool) { w.Key(k); w.Bool(v) }

const hex = "0123456789abcdef"

// AppendString appends s as a JSON string, escaping what JSON requires and
// the HTML-sensitive <, > and & so a body is safe to embed in a page.
// Safe bytes are copied in runs: under TinyGo every append is a runtime
// call, and a byte-at-a-time loop made this the slowest part of a handler.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
