// Package bytealg holds the byte search the project's TinyGo uses in place
// of its own (scripts/install-tinygo.sh copies this file into TinyGo's
// src/internal/bytealg, where strings.IndexByte and bytes.IndexByte land).
//
// TinyGo's IndexByte is a loop over one byte at a time. Compiled to wasm and
// run by wazero it costs about 4.5 ns a byte on a 2.5 GHz Xeon
// (BenchmarkGuestCall/scan, wasm-host/interrupt), and it is what fastjson
// runs over every string of a request to find its closing quote and again
// to look for escapes: on a 60 KB decision, a quarter of the gateway's CPU
// (perf with wazero's perfmap build tag). These look at eight bytes per
// step. The file has no imports, so that internal/bytealg keeps none.
package bytealg

const (
	lows  = 0x0101010101010101
	highs = 0x8080808080808080
)

// IndexByte returns the index of the first c in b, or -1.
func IndexByte(b []byte, c byte) int { return indexByte(b, c) }

// IndexByteString returns the index of the first c in s, or -1.
func IndexByteString(s string, c byte) int { return indexByte(s, c) }

func indexByte[T string | []byte](s T, c byte) int {
	i := 0
	if len(s) >= 8 {
		rep := lows * uint64(c)
		for ; i+8 <= len(s); i += 8 {
			w := uint64(s[i+7])<<56 | uint64(s[i+6])<<48 | uint64(s[i+5])<<40 | uint64(s[i+4])<<32 |
				uint64(s[i+3])<<24 | uint64(s[i+2])<<16 | uint64(s[i+1])<<8 | uint64(s[i])
			if hasZero(w ^ rep) {
				break // c is in s[i:i+8]: the loop below finds where
			}
		}
	}
	for ; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// hasZero reports whether a byte of w is zero: the subtraction borrows
// through a byte only where it was zero, and a byte of 0x80 or more is
// excluded by its own high bit. Exact for the word as a whole.
func hasZero(w uint64) bool { return (w-lows)&^w&highs != 0 }
