package sqldtest

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// CPU is the CPU time (user and system) the sqld process has used so far,
// read from /proc; 0 where that cannot be read. Benchmarks report the
// server's share of a decision with it: with sqld on the same machine,
// ns/op mixes the server's work with whatever else the machine runs.
func (s *Server) CPU() time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(s.PID) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may
	// contain spaces: state is the first, utime the 12th, stime the 13th.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	// /proc counts in clock ticks, 100 per second on Linux.
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// CPU is the sqld process's CPU time so far; 0 for the embedded file.
func (b Backend) CPU() time.Duration {
	if b.Server == nil {
		return 0
	}
	return b.Server.CPU()
}
