//go:build unix

package runtime

import "testing"

// TestMappingGrowsInPlaceAndZeroed: a linear memory on its own mapping keeps
// its address as it grows, reads zero where the guest has not written, and
// keeps what it wrote.
func TestMappingGrowsInPlaceAndZeroed(t *testing.T) {
	m := mmapMemory.Allocate(0, 4<<16).(*mapping)
	defer m.Free()
	a := m.Reallocate(1 << 16)
	a[100] = 7
	b := m.Reallocate(3 << 16)
	if &a[0] != &b[0] || len(b) != 3<<16 || b[100] != 7 || b[2<<16] != 0 {
		t.Fatalf("grown memory moved or lost its contents: len %d, b[100]=%d", len(b), b[100])
	}
	if m.Reallocate(5<<16) != nil {
		t.Fatal("grew past the maximum")
	}
}

// TestSliceFallbackGrowsAndKeepsContents: without a mapping (a kernel that
// refuses the reservation), the memory is a Go slice that keeps its
// contents as it grows.
func TestSliceFallbackGrowsAndKeepsContents(t *testing.T) {
	m := &mapping{max: 4 << 16}
	m.buf = make([]byte, 0) // not mapped: the fallback path
	a := m.Reallocate(1 << 16)
	a[5] = 9
	b := m.Reallocate(2 << 16)
	if len(b) != 2<<16 || b[5] != 9 || b[1<<16] != 0 {
		t.Fatalf("len %d b[5]=%d", len(b), b[5])
	}
	m.Free()
}
