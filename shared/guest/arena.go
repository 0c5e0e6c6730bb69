//go:build tinygo.wasm && gc.custom

package guest

// The module's heap (schema/abi.md, "The arena"). Modules are built with
// TinyGo's -gc=custom and this file is the collector: a bump allocator whose
// every call's allocations the host throws away when the call returns.
//
// After _initialize the host calls gateway_arena, which marks where the
// heap ends after init, and copies the module's globals and that heap
// [start, mark). After every call it copies them back and zeroes
// [mark, next), so each call starts from the state init left, on memory
// that stays allocated: nothing a call did outlives it, no instance has to
// be replaced because its heap filled up, and the host's own heap sees no
// new linear memories under load.

import (
	"runtime"
	"unsafe"
)

// arenaState is read by the host at the address gateway_arena returns: three
// little-endian u32s, in this order.
type arenaState struct {
	start uint32 // the first byte after the stack: globals, then the heap
	mark  uint32 // the heap's end after init: a call's allocations start here
	next  uint32 // the next free byte; memory above it is zero
	end   uint32 // linear memory's size as last seen
}

var arena arenaState

//go:extern __global_base
var globalBase [0]byte

//go:extern __heap_base
var heapBase [0]byte

//export llvm.wasm.memory.size.i32
func memorySize(index int32) int32

//export llvm.wasm.memory.grow.i32
func memoryGrow(index int32, delta int32) int32

//go:linkname runtimePanic runtime.runtimePanic
func runtimePanic(msg string)

const pageSize = 64 << 10

//go:linkname initHeap runtime.initHeap
func initHeap() {
	arena.start = uint32(uintptr(unsafe.Pointer(&globalBase)))
	arena.next = uint32(uintptr(unsafe.Pointer(&heapBase)))
	arena.mark = arena.next
	arena.end = uint32(memorySize(0)) * pageSize
}

// arenaAlloc is runtime.alloc. Memory above arena.next is zero (fresh pages,
// or zeroed by the host after the last call), so nothing is cleared here.
//
//go:linkname arenaAlloc runtime.alloc
func arenaAlloc(size uintptr, layout unsafe.Pointer) unsafe.Pointer {
	p := arena.next
	next := p + (uint32(size)+15)&^15
	if next > arena.end || next < p {
		arenaGrow(next, next < p)
	}
	arena.next = next
	return unsafe.Pointer(uintptr(p))
}

// arenaGrow makes linear memory reach need, doubling it when it can so a
// call that allocates a lot grows it a few times, not once per page.
func arenaGrow(need uint32, overflow bool) {
	if overflow {
		runtimePanic("out of memory")
	}
	have := uint32(memorySize(0)) * pageSize
	if need > have {
		pages := int32((need - have + pageSize - 1) / pageSize)
		double := memorySize(0)
		if double < pages || memoryGrow(0, double) < 0 {
			if memoryGrow(0, pages) < 0 {
				runtimePanic("out of memory")
			}
		}
		have = uint32(memorySize(0)) * pageSize
	}
	arena.end = have
}

//go:linkname arenaFree runtime.free
func arenaFree(ptr unsafe.Pointer) {}

//go:linkname markRoots runtime.markRoots
func markRoots(start, end uintptr) {}

//go:linkname arenaGC runtime.GC
func arenaGC() {}

//go:linkname setFinalizer runtime.SetFinalizer
func setFinalizer(obj interface{}, finalizer interface{}) {}

//go:linkname readMemStats runtime.ReadMemStats
func readMemStats(m *runtime.MemStats) {
	used := uint64(arena.next - arena.mark)
	*m = runtime.MemStats{
		HeapAlloc: used, HeapInuse: used, Alloc: used, TotalAlloc: used,
		HeapSys: uint64(arena.end - arena.mark), Sys: uint64(arena.end),
	}
}

// gateway_arena marks the end of init's heap and tells the host where the
// arena's state lives. The host calls it once, right after _initialize.
//
//go:wasmexport gateway_arena
func arenaExport() uint32 {
	arena.mark = arena.next
	return uint32(uintptr(unsafe.Pointer(&arena)))
}

// Randomness must not live in memory the host puts back. wasi-libc's
// arc4random, behind TinyGo's crypto/rand and runtime.rand, is a ChaCha20
// generator seeded once and kept in libc's globals: restored after every
// call, it would hand every call the same bytes (the same sign-in tokens,
// the same key secrets). These definitions take the linker's place of
// libc's, and ask the host for every byte (WASI random_get).

//go:wasmimport wasi_snapshot_preview1 random_get
func randomGet(buf unsafe.Pointer, n uint32) uint32

//export arc4random_buf
func arc4randomBuf(p unsafe.Pointer, n uintptr) {
	if n > 0 && randomGet(p, uint32(n)) != 0 {
		runtimePanic("random_get failed")
	}
}

//export arc4random
func arc4random() uint32 {
	var v uint32
	arc4randomBuf(unsafe.Pointer(&v), 4)
	return v
}
