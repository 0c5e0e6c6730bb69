//go:build !unix

package runtime

import "github.com/tetratelabs/wazero/experimental"

// mmapMemory is nil where there is no mmap: wazero then backs memories with
// Go slices.
var mmapMemory experimental.MemoryAllocator
