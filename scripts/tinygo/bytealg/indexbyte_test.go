package bytealg

import (
	"bytes"
	"strings"
	"testing"
)

// Every length up to 40, the byte at every position (and twice, and
// absent), among neighbours that differ from it by one bit or by a borrow
// (0x00, 0x01, 0x7F, 0x80, 0xFF, c±1): the answer is the standard
// library's.
func TestIndexByteIsTheStandardOne(t *testing.T) {
	for _, c := range []byte{0, 1, '"', '\\', 0x7F, 0x80, 0xFE, 0xFF} {
		fill := []byte{0, 1, 0x7F, 0x80, 0xFF, c - 1, c + 1, c ^ 0x80, 'a'}
		for n := 0; n <= 40; n++ {
			for _, f := range fill {
				if f == c {
					continue
				}
				b := bytes.Repeat([]byte{f}, n)
				check(t, b, c)
				for at := range n {
					b[at] = c
					check(t, b, c)
					if at+3 < n {
						b[at+3] = c
						check(t, b, c)
						b[at+3] = f
					}
					b[at] = f
				}
			}
		}
	}
}

func check(t *testing.T, b []byte, c byte) {
	t.Helper()
	want := bytes.IndexByte(b, c)
	if got := IndexByte(b, c); got != want {
		t.Fatalf("IndexByte(%x, %#x) = %d, want %d", b, c, got, want)
	}
	if got := IndexByteString(string(b), c); got != strings.IndexByte(string(b), c) {
		t.Fatalf("IndexByteString(%x, %#x) = %d, want %d", b, c, got, want)
	}
}

func FuzzIndexByte(f *testing.F) {
	f.Add([]byte("a question with a \"quote\" and a \\ backslash"), byte('"'))
	f.Fuzz(func(t *testing.T, b []byte, c byte) { check(t, b, c) })
}
