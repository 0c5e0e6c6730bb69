package validate

import (
	"slices"
	"unsafe"

	"github.com/valyala/fastjson"
)

// entry is one object member as fastjson decoded it.
type entry struct {
	key string
	val *fastjson.Value
}

// tree holds reusable scratch memory for looking into a fastjson tree: the
// members of every open object (a stack, so nested objects never need their
// own slices) and a set of names.
type tree struct {
	entries []entry
	set     keySet
}

// str turns bytes that fastjson handed out into a string without copying.
// The bytes live in the parser's buffer, which nothing writes until the next
// parse; callers of this package are told not to keep results past that.
func str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// members appends the members of o to the entry stack and returns them.
// Visit decodes the keys in place, so "a" and "\u0061" come back equal.
func (t *tree) members(o *fastjson.Object) []entry {
	base := len(t.entries)
	o.Visit(func(k []byte, v *fastjson.Value) {
		t.entries = append(t.entries, entry{str(k), v})
	})
	return t.entries[base:]
}

// keySet answers membership questions about a set of names (a choice
// question's options), with memory reused across calls. Small sets use a
// linear search; larger ones are sorted for binary search.
type keySet struct {
	keys   []string
	sorted bool
}

const linearSetMax = 8

// fill makes the set hold exactly key(0)…key(n-1).
func (s *keySet) fill(n int, key func(i int) string) {
	s.keys = s.keys[:0]
	for i := range n {
		s.keys = append(s.keys, key(i))
	}
	s.sorted = n > linearSetMax
	if s.sorted {
		slices.Sort(s.keys)
	}
}

// has reports whether k is in the set.
func (s *keySet) has(k string) bool {
	if s.sorted {
		_, found := slices.BinarySearch(s.keys, k)
		return found
	}
	return slices.Contains(s.keys, k)
}
