package validate

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unsafe"

	"decisiongateway/shared/contract"
)

// scanner is the strict pass over a whole JSON text, and the part of the
// validator that sees every byte. fastjson's parser is deliberately lax (it
// accepts NaN and Inf, raw control characters and bad escapes in strings,
// invalid UTF-8, recurses up to 300 levels and keeps duplicate keys), so no
// client text reaches fastjson before the scanner accepted it.
//
// In one iterative pass (a body of 65,536 '[' costs a loop, not 65,536 stack
// frames, which matters on TinyGo's small wasm stacks) it checks RFC 8259
// grammar, UTF-8 of raw bytes and of \u escapes (an unpaired surrogate is
// rejected, as encoding/json/v2 does), the nesting depth, that every number
// is inside the finite float64 range, and that no object has two keys that
// are equal after escape decoding. It also records where each member of a
// root object starts and ends, so the request rules only hand fastjson the
// few members they look into instead of the whole body: measured, parsing
// the whole body with fastjson and walking its tree for duplicates cost
// twice the time of this pass.
type scanner struct {
	// keys of the open objects, innermost last; each is a view of the body
	// or, when it had escapes, of its decoded form in arena.
	keys  []string
	arena []byte
	root  []rootMember
	// Per nesting level: object or array, where the object's keys start in
	// keys, and the current key or element index (only for error paths).
	isObj [maxScanDepth]bool
	start [maxScanDepth]int32
	cur   [maxScanDepth]string
	idx   [maxScanDepth]int32
	// seen is a 64-bit Bloom filter of each open object's keys (length,
	// first and last byte). Most objects never set the same bit twice, and
	// those are known to be duplicate-free without comparing a single pair;
	// maybeDup marks the others for the exact check when they close.
	seen     [maxScanDepth]uint64
	maybeDup [maxScanDepth]bool
	// The duplicate found, and the level of the object that holds it.
	dup      string
	dupLevel int
	// err is the first problem found. Helpers set it and return -1, so the
	// hot paths move one int, not an error value.
	err scanError
}

// rootMember is a member of a root object: its decoded key and the byte
// range of its value in the body.
type rootMember struct {
	key        string
	start, end int
}

// scanError describes the first problem the scanner found. The zero value
// means none.
type scanError struct {
	code contract.Code // contract.InvalidJSON, contract.JSONTooDeep, contract.NumberOutOfRange or contract.DuplicateKey
	off  int           // byte offset of the problem
	what string        // constant description, no allocation
}

// maxScanDepth bounds the per-level arrays. It is above fastjson's own
// recursion limit (300), the largest limit any caller asks for.
const maxScanDepth = 320

//go:inline
func jsonSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// skipSpace returns the offset of the first non-whitespace byte at or after
// i. Compact JSON has none, so the first test settles the common case.
//
//go:inline
func skipSpace(b []byte, i int) int {
	if i < len(b) && b[i] > ' ' {
		return i
	}
	for i < len(b) && jsonSpace(b[i]) {
		i++
	}
	return i
}

// plain marks the bytes a string may contain without a closer look: printable
// ASCII other than '"' and '\\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scan validates b as one JSON value. maxDepth counts every object and array
// level, the root container being level 1. The keys and root members it
// records view b and stay valid while b is unchanged and until the next scan.
func (s *scanner) scan(b []byte, maxDepth int) scanError {
	if maxDepth > maxScanDepth {
		maxDepth = maxScanDepth
	}
	s.keys, s.arena, s.root, s.err = s.keys[:0], s.arena[:0], s.root[:0], scanError{}
	depth := 0
	i := skipSpace(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return scanError{contract.InvalidJSON, i, "unexpected end of input"}
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth == maxDepth {
				return scanError{contract.JSONTooDeep, i, "nesting deeper than the limit"}
			}
			if depth > 0 && s.isObj[depth-1] {
				// The member this container is the value of: kept for
				// the path of a duplicate-key message.
				s.cur[depth-1] = s.keys[len(s.keys)-1]
			}
			s.isObj[depth] = c == '{'
			s.start[depth] = int32(len(s.keys))
			s.idx[depth] = 0
			s.seen[depth], s.maybeDup[depth] = 0, false
			depth++
			i = skipSpace(b, i+1)
			if i < len(b) && (b[i] == '}' && c == '{' || b[i] == ']' && c == '[') {
				depth--
				i++
				break
			}
			if c == '{' {
				if i = s.key(b, i, depth); i < 0 {
					return s.err
				}
			}
			continue // the first member or element
		case c == '"':
			if j := shortString(b, i+1); j > 0 {
				i = j
			} else if i, _ = s.str(b, i+1); i < 0 {
				return s.err
			}
		case c == '-' || c >= '0' && c <= '9':
			if i = s.number(b, i); i < 0 {
				return s.err
			}
		case c == 't':
			if !hasLiteral(b, i, "true") {
				return scanError{contract.InvalidJSON, i, "invalid literal"}
			}
			i += 4
		case c == 'f':
			if !hasLiteral(b, i, "false") {
				return scanError{contract.InvalidJSON, i, "invalid literal"}
			}
			i += 5
		case c == 'n':
			if !hasLiteral(b, i, "null") {
				return scanError{contract.InvalidJSON, i, "invalid literal"}
			}
			i += 4
		default:
			return scanError{contract.InvalidJSON, i, "unexpected character where a value should start"}
		}

		// A value ended just before i: close containers or move on to the
		// next member or element.
		for {
			if depth == 1 && s.isObj[0] {
				s.root[len(s.root)-1].end = i
			}
			i = skipSpace(b, i)
			if depth == 0 {
				if i != len(b) {
					return scanError{contract.InvalidJSON, i, "unexpected data after the JSON value"}
				}
				return scanError{}
			}
			if i >= len(b) {
				return scanError{contract.InvalidJSON, i, "unexpected end of input"}
			}
			obj := s.isObj[depth-1]
			switch {
			case b[i] == ',':
				i = skipSpace(b, i+1)
				if obj {
					if i = s.key(b, i, depth); i < 0 {
						return s.err
					}
				} else {
					s.idx[depth-1]++
				}
			case b[i] == '}' && obj:
				if !s.distinct(depth - 1) {
					return scanError{contract.DuplicateKey, i, "duplicate object key"}
				}
				depth--
				i++
				continue
			case b[i] == ']' && !obj:
				depth--
				i++
				continue
			default:
				return scanError{contract.InvalidJSON, i, "expected ',' or the end of the container"}
			}
			break
		}
	}
}

// fail records the first problem and returns -1 for the caller to pass up.
func (s *scanner) fail(code contract.Code, off int, what string) int {
	s.err = scanError{code, off, what}
	return -1
}

// key checks `"key" :` at i inside the object at level depth-1, records the
// decoded key, and returns the offset of the member's value.
func (s *scanner) key(b []byte, i, depth int) int {
	if i >= len(b) || b[i] != '"' {
		return s.fail(contract.InvalidJSON, i, "expected a string object key")
	}
	end, escaped := shortString(b, i+1), false
	if end < 0 {
		if end, escaped = s.str(b, i+1); end < 0 {
			return -1
		}
	}
	raw := b[i+1 : end-1]
	var k string
	if !escaped {
		k = unsafe.String(unsafe.SliceData(raw), len(raw))
	} else {
		from := len(s.arena)
		s.arena = appendUnescaped(s.arena, raw)
		k = unsafe.String(&s.arena[from], len(s.arena)-from)
	}
	s.keys = append(s.keys, k)
	var bit uint64 = 1
	if len(k) > 0 {
		bit <<= (uint(len(k)) + uint(k[0])*7 + uint(k[len(k)-1])*13) & 63
	}
	if s.seen[depth-1]&bit != 0 {
		s.maybeDup[depth-1] = true
	}
	s.seen[depth-1] |= bit
	i = skipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		return s.fail(contract.InvalidJSON, i, "expected ':' after an object key")
	}
	i = skipSpace(b, i+1)
	if depth == 1 {
		s.root = append(s.root, rootMember{key: k, start: i})
	}
	return i
}

// distinct checks the keys of the object at level that is closing, and pops
// them. Unless the Bloom filter saw a possible repeat there is nothing to
// do. Otherwise small objects compare every pair; larger ones are
// sorted in place. Sorting, unlike an unseeded hash table, has no input a
// client could craft to make it quadratic: a 10,000-key object in a 64 KiB
// body costs n log n.
func (s *scanner) distinct(level int) bool {
	ks := s.keys[s.start[level]:]
	s.keys = s.keys[:s.start[level]]
	if !s.maybeDup[level] {
		return true
	}
	if len(ks) <= 8 {
		for i := 1; i < len(ks); i++ {
			for _, k := range ks[:i] {
				if k == ks[i] {
					s.dup, s.dupLevel = k, level
					return false
				}
			}
		}
		return true
	}
	slices.Sort(ks)
	for i := 1; i < len(ks); i++ {
		if ks[i] == ks[i-1] {
			s.dup, s.dupLevel = ks[i], level
			return false
		}
	}
	return true
}

// dupPath is the path of the object holding the duplicate key.
func (s *scanner) dupPath() []pathSeg {
	p := make([]pathSeg, 0, s.dupLevel)
	for d := 0; d < s.dupLevel; d++ {
		if s.isObj[d] {
			p = append(p, pathSeg{key: s.cur[d], idx: -1})
		} else {
			p = append(p, pathSeg{idx: int(s.idx[d])})
		}
	}
	return p
}

func hasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// Word-at-a-time constants for scanString: a string's bytes are checked
// eight at a time while none of them needs a closer look.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// specialMask flags the bytes of w that are '"', '\\', below 0x20 or
// non-ASCII by setting their high bit. Each test is the classic "has zero
// byte" subtraction trick: a borrow can flag a byte above a true hit, never
// below one, so the lowest flag is exact and the scan can jump straight to
// it.
func specialMask(w uint64) uint64 {
	q := w ^ (ones * '"')
	bs := w ^ (ones * '\\')
	return ((q-ones)&^q | (bs-ones)&^bs | (w - ones*0x20) | w) & highs
}

// shortString is the inlined fast path of str for the common short string:
// when the first byte needing a look within eight is the closing quote, it
// returns the offset after it; otherwise -1, and str does the full work.
func shortString(b []byte, i int) int {
	if i+8 <= len(b) {
		if m := specialMask(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			if j := i + bits.TrailingZeros64(m)>>3; b[j] == '"' {
				return j + 1
			}
		}
	}
	return -1
}

// str checks a string whose opening quote is at i-1 and returns the offset
// after its closing quote and whether it contains escapes.
func (s *scanner) str(b []byte, i int) (int, bool) {
	escaped := false
	for {
		// Skip plain bytes, sixteen at a time while sixteen remain (in the
		// guest every loop iteration also runs the host's deadline check,
		// wasm-host/interrupt), then eight, then one; the stop is taken
		// from the word that found it, not looked for again.
		for {
			if i+16 <= len(b) {
				if m := specialMask(binary.LittleEndian.Uint64(b[i:])); m != 0 {
					i += bits.TrailingZeros64(m) >> 3
				} else if m := specialMask(binary.LittleEndian.Uint64(b[i+8:])); m != 0 {
					i += 8 + bits.TrailingZeros64(m)>>3
				} else {
					i += 16
					continue
				}
			} else if i+8 <= len(b) {
				if m := specialMask(binary.LittleEndian.Uint64(b[i:])); m != 0 {
					i += bits.TrailingZeros64(m) >> 3
				} else {
					i += 8
					continue
				}
			} else {
				for i < len(b) && plain[b[i]] {
					i++
				}
			}
			break
		}
		if i >= len(b) {
			return s.fail(contract.InvalidJSON, i, "unterminated string"), false
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped
		case c == '\\':
			n, ok := scanEscape(b, i)
			if !ok {
				return s.fail(contract.InvalidJSON, i, "invalid escape sequence in string"), false
			}
			escaped = true
			i += n
		case c < 0x20:
			return s.fail(contract.InvalidJSON, i, "control character in string"), false
		default:
			n := utf8Len(b[i:])
			if n == 0 {
				return s.fail(contract.InvalidJSON, i, "invalid UTF-8 in string"), false
			}
			i += n
		}
	}
}

// scanEscape checks the escape sequence starting with the backslash at i and
// returns its length. A \u escape of a high surrogate must be followed by one
// of a low surrogate; a lone surrogate has no UTF-8 form and is rejected.
func scanEscape(b []byte, i int) (int, bool) {
	if i+1 >= len(b) {
		return 0, false
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, true
	case 'u':
		r, ok := hex4(b, i+2)
		if !ok {
			return 0, false
		}
		switch {
		case r < 0xD800 || r > 0xDFFF:
			return 6, true
		case r >= 0xDC00:
			return 0, false // low surrogate first
		}
		if i+7 >= len(b) || b[i+6] != '\\' || b[i+7] != 'u' {
			return 0, false
		}
		lo, ok := hex4(b, i+8)
		if !ok || lo < 0xDC00 || lo > 0xDFFF {
			return 0, false
		}
		return 12, true
	}
	return 0, false
}

// hex4 decodes the four hex digits at i.
func hex4(b []byte, i int) (rune, bool) {
	if len(b)-i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
