package runtime

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/tetratelabs/wazero/api"
)

// exportArena is the export of a module whose heap the host resets after
// every call (schema/abi.md, "The arena"; shared/guest/arena.go).
const exportArena = "gateway_arena"

// arena is the host's side of a module's resettable heap: where the guest
// keeps its heap pointer and heap end, and a copy of memory [start, mark)
// as _initialize left it.
type arena struct {
	start, mark       uint32
	nextAddr, endAddr uint32
	// from is where the restore begins: start, or the end of the module's
	// read-only data when it lies in the arena (interrupt.ReadOnlyEnd).
	from     uint32
	snapshot []byte // memory [from, mark) as _initialize left it
}

// openArena asks a freshly initialized instance where its arena is and
// copies the state a call must start from. roEnd is where the module's
// read-only data ends (interrupt.ReadOnlyEnd), 0 when unknown. A module without the
// export (the socket build, which has a collector) has no arena: nil, nil.
func openArena(ctx context.Context, mod api.Module, roEnd uint32) (*arena, error) {
	fn := mod.ExportedFunction(exportArena)
	if fn == nil {
		return nil, nil
	}
	res, err := fn.Call(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", exportArena, err)
	}
	mem, _ := mod.Memory().Read(0, mod.Memory().Size())
	state := uint64(uint32(res[0]))
	if state+16 > uint64(len(mem)) {
		return nil, fmt.Errorf("%s: state at %d is outside memory", exportArena, state)
	}
	u32 := func(at uint64) uint32 { return binary.LittleEndian.Uint32(mem[at:]) }
	a := &arena{start: u32(state), mark: u32(state + 4), nextAddr: u32(state + 8), endAddr: u32(state + 12)}
	inside := func(addr uint32) bool { return addr >= a.start && uint64(addr)+4 <= uint64(a.mark) }
	if a.start > a.mark || uint64(a.mark) > uint64(len(mem)) || !inside(a.nextAddr) || !inside(a.endAddr) ||
		u32(uint64(a.nextAddr)) != a.mark || uint64(u32(uint64(a.endAddr))) > uint64(len(mem)) {
		return nil, fmt.Errorf("%s: inconsistent state %+v", exportArena, *a)
	}
	a.from = a.start
	if roEnd > a.start && roEnd <= a.mark {
		a.from = roEnd
	}
	a.snapshot = append([]byte(nil), mem[a.from:a.mark]...)
	return a, nil
}

// reset puts back what init left in [start, mark), zeroes what the call
// allocated, [mark, next), and sets the heap's end to the memory's size. It
// reports false when the guest's heap pointer is not one a reset can trust;
// the instance must then be discarded.
func (a *arena) reset(mod api.Module) bool {
	mem, ok := mod.Memory().Read(0, mod.Memory().Size())
	if !ok {
		return false
	}
	next := binary.LittleEndian.Uint32(mem[a.nextAddr:])
	if next < a.mark || uint64(next) > uint64(len(mem)) {
		return false
	}
	copy(mem[a.from:a.mark], a.snapshot)
	clear(mem[a.mark:next])
	binary.LittleEndian.PutUint32(mem[a.endAddr:], uint32(len(mem)))
	return true
}
