//go:build wasip1

package guest

import (
	"unsafe"

	"decisiongateway/shared/abi"
)

// The buffers and exports both builds share (the ABI one in guest.go, the
// socket one in socket.go).
var (
	// inBuf holds the request the host wrote through gateway_alloc; outBuf the
	// last encoded response. Both stay referenced so the GC keeps them while
	// the host reads or writes them.
	inBuf  []byte
	outBuf []byte
)

// gateway_alloc returns a buffer of n bytes for the next request.
//
//go:wasmexport gateway_alloc
func alloc(n uint32) uint32 {
	if uint32(cap(inBuf)) < n {
		inBuf = make([]byte, n)
	}
	inBuf = inBuf[:n]
	if n == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&inBuf[0])))
}

// respond encodes resp into outBuf and returns it as gateway_handle's
// ptr<<32 | len.
func respond(resp *abi.Response) uint64 {
	outBuf = abi.AppendResponse(outBuf[:0], resp)
	if len(outBuf) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&outBuf[0])))<<32 | uint64(len(outBuf))
}
