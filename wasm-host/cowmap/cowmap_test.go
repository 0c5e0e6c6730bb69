package cowmap

import (
	"strconv"
	"sync"
	"testing"
)

// A value is created once per key, by whichever caller comes first, and
// every caller gets that one; a limit stops the map growing but still
// answers.
func TestOneValuePerKeyWithinTheLimit(t *testing.T) {
	var m Map[string, *int]
	var created sync.Map
	create := func(k string) *int {
		if _, dup := created.LoadOrStore(k, true); dup {
			t.Errorf("%s created twice", k)
		}
		return new(int)
	}
	var wg sync.WaitGroup
	got := make([]*int, 8)
	for i := range got {
		wg.Go(func() { got[i] = m.Get("a", create) })
	}
	wg.Wait()
	for _, p := range got {
		if p != got[0] {
			t.Fatal("callers got different values for one key")
		}
	}
	if n := testing.AllocsPerRun(100, func() { m.Get("a", create) }); n != 0 {
		t.Fatalf("a present key allocated %v times", n)
	}

	var lim Map[string, string]
	id := func(k string) string { return k }
	for i := range 5 {
		if v := lim.Add(strconv.Itoa(i), id, 3); v != strconv.Itoa(i) {
			t.Fatalf("Add(%d) = %q", i, v)
		}
	}
	if n := len(lim.Load()); n != 3 {
		t.Fatalf("%d kept with a limit of 3", n)
	}
}
