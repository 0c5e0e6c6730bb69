//go:build !(linux || darwin)

package ledger

import "time"

// processCPU is not measured here; the benchmarks then report 0.
func processCPU() time.Duration { return 0 }
