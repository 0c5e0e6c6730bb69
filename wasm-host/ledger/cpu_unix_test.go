//go:build linux || darwin

package ledger

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used, user and system. The
// benchmarks report it per decision: unlike ns/op it does not grow when
// other processes compete for the machine's cores.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
