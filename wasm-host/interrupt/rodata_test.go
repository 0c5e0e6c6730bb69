package interrupt

import (
	"testing"

	"decisiongateway/testkit/testenv"
)

// Bytes that are not a module with data segment names give 0: restore all.
func TestReadOnlyEndOfWhatIsNoModule(t *testing.T) {
	wasm := testenv.Wasm(t, "testguests/testguest.wasm")
	for name, b := range map[string][]byte{
		"nothing":   nil,
		"header":    wasm[:8],
		"truncated": wasm[:len(wasm)/2],
		"garbage":   append(append([]byte(nil), wasm[:8]...), 0x0b, 0xff, 0xff, 0xff, 0xff, 0x7f),
	} {
		if got := ReadOnlyEnd(b); got != 0 {
			t.Errorf("%s: %d, want 0", name, got)
		}
	}
}
