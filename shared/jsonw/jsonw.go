// Package jsonw appends JSON text to a byte slice. Functions build their
// bodies with it instead of encoding/json: no reflection, small TinyGo
// modules, and the field order the code states.
package jsonw

import (
	"math/bits"
	"strconv"
)

// Writer appends JSON. The zero value is ready; B holds the text.
// Callers are responsible for the structure (commas are automatic).
type Writer struct {
	B     []byte
	comma bool
}

//go:inline
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
//
//go:inline
func (w *Writer) String(s string) { w.sep(); w.B = AppendString(w.B, s) }

// Int writes an integer value.
func (w *Writer) Int(v int64) { w.sep(); w.B = strconv.AppendInt(w.B, v, 10) }

// Bool writes a boolean value.
func (w *Writer) Bool(v bool) { w.sep(); w.B = strconv.AppendBool(w.B, v) }

// Null writes null.
func (w *Writer) Null() { w.sep(); w.B = append(w.B, "null"...) }

// Raw writes already-valid JSON text as a value.
//
//go:inline
func (w *Writer) Raw(j []byte) { w.sep(); w.B = append(w.B, j...) }

// Field shorthands: key plus value.
func (w *Writer) FieldString(k, v string)    { w.Key(k); w.String(v) }
func (w *Writer) FieldInt(k string, v int64) { w.Key(k); w.Int(v) }
func (w *Writer) FieldBool(k string, v bool) { w.Key(k); w.Bool(v) }

// The one JSON string escaper of the project. Two escapings say which bytes
// are escaped and how; everything else is copied as UTF-8.
//
//   - minimal: only what JSON requires ('"', '\\' and U+0000–U+001F),
//     with JSON's short escapes (\b \f \n \r \t) where it has them and
//     \u00xx otherwise. The canonical form (shared/canon, whose bytes are
//     fingerprinted and must never change), and model output as models and
//     their encoders spell it (the router's log-probability matching and the
//     emulator that imitates it) use it.
//   - htmlSafe: minimal, plus <, > and & as \u00xx, so a response body is
//     safe to embed in a page.
var minimal, htmlSafe = escapes(false), escapes(true)

const hex = "0123456789abcdef"

// escaping is one of the two: which bytes are escaped and how (table: 0
// copies the byte, 'u' writes \u00xx, any other value c writes a backslash
// and c), and whether it escapes <, > and & beyond JSON's own set (html),
// which the word-at-a-time search looks for.
type escaping struct {
	table [256]byte
	html  bool
}

func escapes(html bool) *escaping {
	e := &escaping{html: html}
	extra := ""
	if html {
		extra = "<>&"
	}
	t := &e.table
	for c := 0; c < 0x20; c++ {
		t[c] = 'u'
	}
	t['"'], t['\\'] = '"', '\\'
	t['\b'], t['\f'], t['\n'], t['\r'], t['\t'] = 'b', 'f', 'n', 'r', 't'
	for i := 0; i < len(extra); i++ {
		t[extra[i]] = 'u'
	}
	return e
}

// appendEscaped writes s's bytes as e says. Safe bytes are copied in runs:
// under TinyGo every append is a runtime call, and a byte-at-a-time loop
// made this the slowest part of a handler. The run is found eight bytes at
// a time (specials) and a byte at a time only where a word holds a byte to
// escape: the canonical form of a request is mostly string text, and the
// table lookup per byte was 13% of a medium decision's work in the guest's
// code (measured natively, the module's hottest non-ledger function).
//
// Sixteen bytes are looked at per step while sixteen remain: in the
// guest, every loop iteration also runs the host's deadline check
// (wasm-host/interrupt), whose call makes wazero store the loop's values
// at each back-edge, so fewer iterations cost less.
func appendEscaped(b []byte, s string, e *escaping) []byte {
	start, i := 0, 0
	for i < len(s) {
		if i+16 <= len(s) {
			// Both words spelled out: TinyGo did not inline load64 called
			// three times, and a call in the loop cost more than it saved.
			w := uint64(s[i+7])<<56 | uint64(s[i+6])<<48 | uint64(s[i+5])<<40 | uint64(s[i+4])<<32 |
				uint64(s[i+3])<<24 | uint64(s[i+2])<<16 | uint64(s[i+1])<<8 | uint64(s[i])
			v := uint64(s[i+15])<<56 | uint64(s[i+14])<<48 | uint64(s[i+13])<<40 | uint64(s[i+12])<<32 |
				uint64(s[i+11])<<24 | uint64(s[i+10])<<16 | uint64(s[i+9])<<8 | uint64(s[i+8])
			// The first byte to escape is taken from the words at hand,
			// not looked for again eight at a time.
			if m := specials(w, e.html); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
			} else if m := specials(v, e.html); m != 0 {
				i += 8 + bits.TrailingZeros64(m)>>3
			} else {
				i += 16
				continue
			}
		} else if i+8 <= len(s) {
			m := specials(load64(s, i), e.html)
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3 // the first byte to escape
		}
		x := e.table[s[i]]
		if x == 0 {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		if c := s[i]; x == 'u' {
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		} else {
			b = append(b, '\\', x)
		}
		i++
		start = i
	}
	return append(b, s[start:]...)
}

// Word-at-a-time constants for specials.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// specials flags, by setting its high bit, each byte of w that JSON
// requires escaped (below 0x20, '"', '\\') or, with html, is <, > or &.
// Each test is the "has a zero byte" subtraction trick: a borrow can flag
// a byte above a true hit, never below one, so the lowest flag is exact.
// Bytes from 0x80 up (UTF-8) are never flagged. No loop: in the guest each
// loop iteration costs a deadline check.
//
//go:inline
func specials(w uint64, html bool) uint64 {
	m := (w-ones*0x20)&^w | zeroIn(w^(ones*'"')) | zeroIn(w^(ones*'\\'))
	if html {
		m |= zeroIn(w^(ones*'<')) | zeroIn(w^(ones*'>')) | zeroIn(w^(ones*'&'))
	}
	return m & highs
}

//go:inline
func zeroIn(x uint64) uint64 { return (x - ones) &^ x }

// load64 reads s[i:i+8] little-endian (one load on both compilers).
//
//go:inline
func load64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// AppendString appends s as a quoted JSON string for a response body
// (htmlSafe above).
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendEscaped(b, s, htmlSafe)
	return append(b, '"')
}

// AppendMinimal appends s as a quoted JSON string escaped minimally (see
// minimal above): the canonical form's one way to write a string.
func AppendMinimal(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendEscaped(b, s, minimal)
	return append(b, '"')
}

// AppendMinimalContent is AppendMinimal without the quotes: the text a
// model writes between them.
func AppendMinimalContent(b []byte, s string) []byte { return appendEscaped(b, s, minimal) }
