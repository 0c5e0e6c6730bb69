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

// arena is the host's side of a module's resettable heap: the address of the
// guest's arena state and a copy of memory [start, mark) as _initialize
// left it.
type arena struct {
	state       uint32 // address of the guest's {start, mark, next, end}
	start, mark uint32
	snapshot    []byte
}

// openArena asks a freshly initialized instance where its arena is and
// copies the state a call must start from. A module without the export
// (the socket build, which has a collector) has no arena: nil, nil.
func openArena(ctx context.Context, mod api.Module) (*arena, error) {
	fn := mod.ExportedFunction(exportArena)
	if fn == nil {
		return nil, nil
	}
	res, err := fn.Call(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", exportArena, err)
	}
	a := &arena{state: uint32(res[0])}
	mem, ok := mod.Memory().Read(0, mod.Memory().Size())
	if !ok || uint64(a.state)+16 > uint64(len(mem)) {
		return nil, fmt.Errorf("%s: state at %d is outside memory", exportArena, a.state)
	}
	a.start = binary.LittleEndian.Uint32(mem[a.state:])
	a.mark = binary.LittleEndian.Uint32(mem[a.state+4:])
	if next := binary.LittleEndian.Uint32(mem[a.state+8:]); a.start > a.mark || next != a.mark || uint64(a.mark) > uint64(len(mem)) || a.state < a.start || a.state+16 > a.mark {
		return nil, fmt.Errorf("%s: inconsistent state start=%d mark=%d next=%d", exportArena, a.start, a.mark, next)
	}
	a.snapshot = append([]byte(nil), mem[a.start:a.mark]...)
	return a, nil
}

// reset puts back what init left in [start, mark) and zeroes what the call
// allocated, [mark, next). It reports false when the guest's state is not
// one a reset can trust; the instance must then be discarded.
func (a *arena) reset(mod api.Module) bool {
	mem, ok := mod.Memory().Read(0, mod.Memory().Size())
	if !ok {
		return false
	}
	next := binary.LittleEndian.Uint32(mem[a.state+8:])
	if next < a.mark || uint64(next) > uint64(len(mem)) {
		return false
	}
	copy(mem[a.start:a.mark], a.snapshot)
	clear(mem[a.mark:next])
	return true
}
