package main

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc CPU times (USER_HZ, 100 on Linux).
const userHZ = 100

// cpuSnap is the machine's busy CPU time and the part of it the benchmark's
// own processes used, at one moment. Two snaps tell how much CPU something
// else on the machine took during a case: on a shared 2-core box another
// job's build or tests skew every figure, and the report must say so.
type cpuSnap struct {
	at         time.Time
	busy, ours float64 // CPU seconds
}

func snapCPU(pids ...int) cpuSnap {
	s := cpuSnap{at: time.Now(), busy: machineBusy()}
	for _, pid := range pids {
		if pid > 0 {
			s.ours += processCPU(pid)
		}
	}
	return s
}

// otherCores is the average number of cores used by processes other than
// ours between two snaps.
func otherCores(a, b cpuSnap) float64 {
	wall := b.at.Sub(a.at).Seconds()
	if wall <= 0 {
		return 0
	}
	return max(0, (b.busy-a.busy)-(b.ours-a.ours)) / wall
}

// machineBusy is the non-idle time of all CPUs from /proc/stat.
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal …
	var busy float64
	for i, v := range f {
		if i == 0 || i == 4 || i == 5 || i > 8 {
			continue
		}
		n, _ := strconv.ParseFloat(v, 64)
		busy += n
	}
	return busy / userHZ
}

// processCPU is a process's user and system time from /proc/PID/stat.
func processCPU(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields after it are plain.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / userHZ
}

// loadAverage is the first field of /proc/loadavg.
func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// waitQuiet waits until processes other than pids use less than
// busyMachine cores over a second, or max passes.
func waitQuiet(pids []int, max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		a := snapCPU(pids...)
		time.Sleep(time.Second)
		if otherCores(a, snapCPU(pids...)) < busyMachine {
			return
		}
	}
}

// sqldCPU is the CPU seconds sqld has used, when the ledger is sqld.
func (b *bench) sqldCPU() float64 {
	if b.sqldPID <= 0 {
		return 0
	}
	return processCPU(b.sqldPID)
}
