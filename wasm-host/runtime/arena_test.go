package runtime

import (
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/testenv"
	"decisiongateway/wasm-host/interrupt"
)

// The read-only data the reset skips ends where the writable data begins:
// in the instance, the first byte after it is the first a reset restores,
// and everything init left from there on is what a call starts from.
func TestResetSkipsOnlyReadOnlyData(t *testing.T) {
	for _, wasm := range []string{"testguests/testguest.wasm", "functions/decide.wasm"} {
		roEnd := interrupt.ReadOnlyEnd(testenv.Wasm(t, wasm))
		if roEnd <= 1<<16 {
			t.Errorf("%s: read-only data ends at %d, want past the stack at 64 KiB", wasm, roEnd)
		}
	}
	f, _ := newTestFunction(t, 1)
	call(t, f, abi.Request{Path: "/echo"})
	inst, _, _ := f.stock.take()
	defer f.stock.put(inst)
	a := inst.arena
	if a.from <= a.start || a.from > a.mark || uint32(len(a.snapshot)) != a.mark-a.from {
		t.Fatalf("arena start %d, from %d, mark %d, snapshot %d bytes: the read-only data is restored too", a.start, a.from, a.mark, len(a.snapshot))
	}
}
