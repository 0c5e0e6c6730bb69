package validate

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// utf8Len returns the length of the valid UTF-8 sequence at the start of b,
// or 0 if it is not one (overlong forms and encoded surrogates included).
func utf8Len(b []byte) int {
	r, n := utf8.DecodeRune(b)
	if r == utf8.RuneError && n <= 1 {
		return 0
	}
	return n
}

// appendUnescaped appends the decoded content of a string whose raw text
// (between the quotes) the scanner accepted, so every escape is known good.
func appendUnescaped(dst, raw []byte) []byte {
	for len(raw) > 0 {
		n := bytes.IndexByte(raw, '\\')
		if n < 0 {
			return append(dst, raw...)
		}
		dst = append(dst, raw[:n]...)
		raw = raw[n:]
		c := raw[1]
		switch c {
		case 'u':
			r, _ := hex4(raw, 2)
			raw = raw[6:]
			if utf16.IsSurrogate(r) {
				lo, _ := hex4(raw, 2)
				r = utf16.DecodeRune(r, lo)
				raw = raw[6:]
			}
			dst = utf8.AppendRune(dst, r)
			continue
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		}
		dst = append(dst, c) // '"', '\\' and '/' stand for themselves
		raw = raw[2:]
	}
	return dst
}
