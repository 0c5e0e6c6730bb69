package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"decisiongateway/wasm-host/childproc"
)

// process is a child the benchmark measures (the proxy, the gateway) or
// needs (sqld): its address, its log file and its memory.
type process struct {
	name    string
	cmd     *exec.Cmd
	addr    string // host:port it serves on
	logPath string
	started time.Time // just before exec
	exited  chan struct{}
	group   bool // the process leads its own process group (stop ends all of it)
}

// startProcess execs path with args and env (added to this process's
// environment), its output appended to logPath.
func startProcess(name, logPath, addr string, env []string, path string, args ...string) (*process, error) {
	return start(&process{name: name, addr: addr, logPath: logPath}, env, path, args...)
}

// startGroup is startProcess for a program that runs children (wrangler
// runs workerd): it gets its own process group, and stop ends the group.
func startGroup(name, logPath, addr string, env []string, path string, args ...string) (*process, error) {
	return start(&process{name: name, addr: addr, logPath: logPath, group: true}, env, path, args...)
}

func start(p *process, env []string, path string, args ...string) (*process, error) {
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if p.group {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	// An interrupted benchmark (^C, a kill) takes its servers with it
	// instead of leaving them to load the machine.
	childproc.DieWithParent(cmd)
	p.cmd, p.exited = cmd, make(chan struct{})
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", p.name, err)
	}
	go func() {
		cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// stop asks the process (or its group) to end with SIGTERM, and kills it
// if it has not exited after a few seconds.
func (p *process) stop() {
	signal := func(sig syscall.Signal) {
		if p.group {
			syscall.Kill(-p.pid(), sig)
		} else {
			p.cmd.Process.Signal(sig)
		}
	}
	signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		signal(syscall.SIGKILL)
		<-p.exited
	}
	if p.group {
		// A child (workerd) may outlive its parent by a moment.
		signal(syscall.SIGKILL)
	}
}

// running reports whether the process has not exited.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// peakRSS is the process's peak resident set (VmHWM) since it started or
// since the last resetPeak, in bytes.
func (p *process) peakRSS() int64 { return peakRSS(p.pid()) }

// peakRSS is VmHWM of any process, in bytes (0 when it is gone).
func peakRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// resetPeak sets VmHWM back to the current RSS (clear_refs value 5), so
// the next peakRSS covers one case only. It reports whether the kernel
// allowed it; if not, peaks accumulate over the process's life.
func (p *process) resetPeak() bool { return resetPeak(p.pid()) }

func resetPeak(pid int) bool {
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0) == nil
}

// tail returns the last n lines of the process's log, for an error message.
func (p *process) tail(n int) string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitReady polls probe every interval until it returns true, the process
// exits or timeout passes. It returns the time from exec to the first true.
func (p *process) waitReady(probe func() bool, interval, timeout time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for {
		if probe() {
			return time.Since(p.started), nil
		}
		if !p.running() {
			return 0, fmt.Errorf("%s exited before it was ready; log:\n%s", p.name, p.tail(20))
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s not ready after %s; log:\n%s", p.name, timeout, p.tail(20))
		}
		time.Sleep(interval)
	}
}

// decisionProbe returns a probe that sends one decision and is true on a
// 2xx. Each probe opens a new connection, so a refused one costs little.
func decisionProbe(url, key string, body []byte) func() bool {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	return func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := client.Do(decisionRequest(ctx, url, key, body))
		if err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode/100 == 2
	}
}

// freeAddr returns a loopback address no one listens on now. Another
// process could take it before ours binds; the readiness probe then fails
// loudly rather than measuring the wrong server, because only our gateway
// and proxy answer decisions with a 2xx.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// lastLine returns the last non-empty line of a command's output (the
// operator commands print the value automation needs there).
func lastLine(out []byte) string {
	var last string
	s := bufio.NewScanner(strings.NewReader(string(out)))
	for s.Scan() {
		if t := strings.TrimSpace(s.Text()); t != "" {
			last = t
		}
	}
	return last
}

// discardLog silences net/http's server error log (client disconnects at
// the end of a cut run are expected).
func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }

// logDigest counts the log lines above INFO of a process that logs JSON
// (the gateway), grouped by message and error, most frequent first, so a
// report that shows 5xx answers also shows their cause. Requests cut at the
// end of a run show up here too ("no free instance", "context canceled").
// It returns "" when there are none.
func (p *process) logDigest() string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	counts := map[string]int{}
	var order []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var rec struct{ Level, Msg, Error string }
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Level == "" || rec.Level == "INFO" || rec.Level == "DEBUG" {
			continue
		}
		k := rec.Level + " " + strconv.Quote(rec.Msg)
		if rec.Error != "" {
			e := rec.Error
			if len(e) > 120 {
				e = e[:120] + "…"
			}
			k += " (" + e + ")"
		}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	sort.SliceStable(order, func(i, j int) bool { return counts[order[i]] > counts[order[j]] })
	var parts []string
	for i, k := range order {
		if i == 5 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, strconv.Itoa(counts[k])+"× "+k)
	}
	return strings.Join(parts, "; ")
}
