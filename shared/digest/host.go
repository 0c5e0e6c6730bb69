//go:build tinygo

package digest

import "unsafe"

//go:wasmimport gateway sha256
func sha256Import(ptr, n, outPtr uint32) uint32

// SHA256 is the SHA-256 of p, computed by the host.
func SHA256(p []byte) [32]byte {
	var sum [32]byte
	var ptr uint32
	if len(p) > 0 {
		ptr = uint32(uintptr(unsafe.Pointer(&p[0])))
	}
	if sha256Import(ptr, uint32(len(p)), uint32(uintptr(unsafe.Pointer(&sum[0])))) != 1 {
		// Every host answers it (schema/abi.md); one that does not cannot
		// run this module.
		panic("digest: the host does not answer gateway.sha256")
	}
	return sum
}
