package egress

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// containsFold agrees with a plain search of both sides lower-cased, for
// needles with a caseless byte (searched by it) and letters only (searched
// by the first letter in either case), at every place in the text.
func TestContainsFoldAgreesWithLowerCasing(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := "aAbBsSkK-_0159/+="
	for _, needle := range []string{"sk-Live_9", "abc", "SkKs", "9", "k", "a/b+c=="} {
		for range 2000 {
			text := make([]byte, r.IntN(40))
			for i := range text {
				text[i] = alphabet[r.IntN(len(alphabet))]
			}
			if r.IntN(3) == 0 && len(text) >= len(needle) { // plant it, in a random case
				at := r.IntN(len(text) - len(needle) + 1)
				for i := range len(needle) {
					c := needle[i]
					if isASCIILetter(c) && r.IntN(2) == 0 {
						c ^= 0x20
					}
					text[at+i] = c
				}
			}
			want := bytes.Contains(bytes.ToLower(text), []byte(strings.ToLower(needle)))
			if got := containsFold(string(text), needle); got != want {
				t.Fatalf("containsFold(%q, %q) = %v, want %v", text, needle, got, want)
			}
		}
	}
}
