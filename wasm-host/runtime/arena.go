package runtime

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

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
	// read-only data when it lies in the arena (readOnlyEnd).
	from     uint32
	snapshot []byte // memory [from, mark) as _initialize left it
}

// openArena asks a freshly initialized instance where its arena is and
// copies the state a call must start from. roEnd is where the module's
// read-only data ends (readOnlyEnd), 0 when unknown. A module without the
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

// readOnlyEnd returns where a module's read-only data ends: the highest end
// of its data segments named ".rodata" or ".rodata.N" in the name section,
// which the linker places below the writable ones. Go code never writes
// there (string literals, constant tables, type data), so a reset need not
// put it back: for decide.wasm that is 71 of the 107 KiB copied after every
// call. It returns 0 (restore everything) for a module without data segment
// names, or whose read-only segments do not all lie below the others.
func readOnlyEnd(wasm []byte) uint32 {
	type segment struct{ at, end uint64 }
	var segs []segment // active segments in index order; passive ones hold no place
	var active []bool
	names := map[uint32]string{}
	r := wasmReader{b: wasm, i: 8}
	if len(wasm) < 8 {
		return 0
	}
	for r.ok() && r.i < len(r.b) {
		id := r.byte()
		size := int(r.u32())
		end := r.i + size
		if !r.ok() || end > len(r.b) {
			return 0
		}
		switch id {
		case 11: // data
			for n := r.u32(); n > 0 && r.ok(); n-- {
				flags := r.u32()
				if flags == 2 {
					r.u32() // memory index
				}
				var at uint64
				isActive := flags != 1
				if isActive {
					if r.byte() != 0x41 { // i32.const
						return 0
					}
					at = uint64(uint32(r.s32()))
					if r.byte() != 0x0b {
						return 0
					}
				}
				l := r.u32()
				r.i += int(l)
				segs = append(segs, segment{at, at + uint64(l)})
				active = append(active, isActive)
			}
		case 0: // custom
			nameLen := int(r.u32())
			if r.i+nameLen > end || string(r.b[r.i:r.i+nameLen]) != "name" {
				break
			}
			r.i += nameLen
			for r.ok() && r.i < end {
				sub := r.byte()
				subEnd := r.i + int(r.u32())
				if sub == 9 { // data segment names
					for n := r.u32(); n > 0 && r.ok(); n-- {
						idx := r.u32()
						l := int(r.u32())
						if r.i+l > subEnd {
							return 0
						}
						names[idx] = string(r.b[r.i : r.i+l])
						r.i += l
					}
				}
				r.i = subEnd
			}
		}
		r.i = end
	}
	if !r.ok() {
		return 0
	}
	var roEnd, lowestOther uint64 = 0, 1 << 32
	for i, sg := range segs {
		if !active[i] {
			continue
		}
		name := names[uint32(i)]
		if name == ".rodata" || strings.HasPrefix(name, ".rodata.") {
			roEnd = max(roEnd, sg.end)
		} else {
			lowestOther = min(lowestOther, sg.at)
		}
	}
	if roEnd == 0 || roEnd > lowestOther || roEnd >= 1<<32 {
		return 0
	}
	return uint32(roEnd)
}

// wasmReader reads LEB128 numbers and bytes; a read past the end makes it
// not ok, and it stays so.
type wasmReader struct {
	b   []byte
	i   int
	bad bool
}

func (r *wasmReader) ok() bool { return !r.bad && r.i <= len(r.b) }

func (r *wasmReader) byte() byte {
	if r.i >= len(r.b) {
		r.bad = true
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

func (r *wasmReader) u32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= uint32(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
	r.bad = true
	return 0
}

func (r *wasmReader) s32() int32 {
	var v int64
	shift := 0
	for shift < 35 {
		c := r.byte()
		v |= int64(c&0x7f) << shift
		shift += 7
		if c < 0x80 {
			if c&0x40 != 0 && shift < 64 {
				v |= -1 << shift
			}
			return int32(v)
		}
	}
	r.bad = true
	return 0
}
