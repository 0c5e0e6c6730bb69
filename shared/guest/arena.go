//go:build tinygo.wasm && gc.leaking

package guest

// The module's heap as an arena the host resets after every call
// (schema/abi.md, "The arena"). Modules are built with TinyGo's -gc=leaking:
// a bump allocator that never frees, and, unlike -gc=custom, no shadow stack
// of GC roots in every function (TinyGo keeps one on wasm for any collector
// that scans: 14% more code in the decision module, and work on every call).
//
// After _initialize the host calls gateway_arena, which reports where the
// heap ends after init and where TinyGo keeps its heap pointer and heap end,
// and copies the module's globals and init's heap [start, mark). After every
// call it copies them back, zeroes [mark, next) (TinyGo does not zero what it
// allocates on wasm: fresh pages are zero) and sets the heap end to the
// memory's size, which a call may have grown. So each call starts from the
// state init left, on memory that stays allocated: nothing a call did
// outlives it, and no instance is replaced because its heap filled up.

import "unsafe"

// arenaState is read by the host at the address gateway_arena returns: four
// little-endian u32s, in this order.
type arenaState struct {
	start    uint32 // the first byte after the stack: globals, then the heap
	mark     uint32 // the heap's end after init: a call's allocations start here
	nextAddr uint32 // where TinyGo keeps the next free byte (runtime.heapptr)
	endAddr  uint32 // where TinyGo keeps the heap's end (runtime.heapEnd)
}

var arena arenaState

//go:extern __global_base
var globalBase [0]byte

//go:extern runtime.heapptr
var heapptr uintptr

//go:extern runtime.heapEnd
var heapEnd uintptr

//go:linkname runtimePanic runtime.runtimePanic
func runtimePanic(msg string)

// gateway_arena marks the end of init's heap and tells the host where the
// arena's state lives. The host calls it once, right after _initialize.
//
//go:wasmexport gateway_arena
func arenaExport() uint32 {
	arena = arenaState{
		start:    uint32(uintptr(unsafe.Pointer(&globalBase))),
		mark:     uint32(heapptr),
		nextAddr: uint32(uintptr(unsafe.Pointer(&heapptr))),
		endAddr:  uint32(uintptr(unsafe.Pointer(&heapEnd))),
	}
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
