//go:build unix

package runtime

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// mmapMemory backs each instance's linear memory with its own anonymous
// mapping of the memory's maximum size, reserved but not committed: pages
// cost nothing until the guest touches them, growing never moves or copies
// the memory, and closing the instance gives the pages straight back to the
// kernel. With Go-allocated buffers every grow copied the whole memory into
// a new one, zeroed by Go first (about 15% of the CPU of a large decision,
// whose guest grows its arena on every request), and a recycled instance's
// memory lingered until the next garbage collection.
var mmapMemory experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
	return &mapping{max: max}
})

type mapping struct {
	buf    []byte
	max    uint64
	mapped bool // buf is an mmap of max bytes; otherwise a Go slice
}

func (m *mapping) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if m.buf == nil {
		// At least one page: a memory whose maximum is 0 still gets a
		// valid (empty) slice.
		n := max(m.max, 1<<16)
		b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
		if err == nil {
			m.buf, m.mapped = b, true
		}
	}
	if m.mapped {
		return m.buf[:size:m.max]
	}
	// A kernel that refuses to reserve the address space (strict
	// overcommit) gets what wazero does by default: a Go slice, copied
	// as it grows.
	if uint64(cap(m.buf)) < size {
		m.buf = append(m.buf[:cap(m.buf)], make([]byte, size-uint64(cap(m.buf)))...)
	}
	m.buf = m.buf[:size]
	return m.buf
}

func (m *mapping) Free() {
	if m.mapped {
		syscall.Munmap(m.buf[:cap(m.buf)])
	}
	m.buf, m.mapped = nil, false
}
