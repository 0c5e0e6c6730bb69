package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// The Workers' memory, per isolate.
//
// Cloudflare stops an isolate that holds more than 128 MB (its JavaScript
// heap and its WebAssembly memories). wrangler dev enforces no such limit,
// and its workerd runs every Worker of the deployment, and wrangler's own
// local services, in one process, so that process's RSS says nothing about
// one isolate. (wrangler dev also starts a second workerd, its inspector
// proxy, which is not where the Workers run.) What is measured instead is
// each Worker's isolate, through the V8 inspector that the Workers' workerd
// serves (miniflare starts it with --inspector-addr): one target per
// Worker, named core:user:<worker> (wrangler's own services have targets
// too, and are left out), asked Runtime.getHeapUsage every
// sampleEvery while the bursts run. An isolate's figure is totalSize (the
// heap V8 holds for it: live objects and garbage not yet collected) plus
// backingStorageSize (the backing stores of its ArrayBuffers, the wasm
// instances' linear memories among them), the larger of the two readings
// Cloudflare's limit could mean.

// isolateLimit is Cloudflare's memory limit per isolate.
const isolateLimit = 128e6

const sampleEvery = 100 * time.Millisecond

// inspectorTarget is one entry of an inspector's /json/list.
type inspectorTarget struct {
	ID  string `json:"id"`
	URL string `json:"webSocketDebuggerUrl"`
}

// workerTargets keeps the targets that are Workers of the deployment: the
// front, named prefix, and the others, named prefix-…, not workerd's or
// wrangler's own services (miniflare-…, cache:…, outbound:…).
func workerTargets(list []inspectorTarget, prefix string) []inspectorTarget {
	var out []inspectorTarget
	for _, t := range list {
		name, ok := strings.CutPrefix(t.ID, "core:user:")
		if ok && t.URL != "" && (name == prefix || strings.HasPrefix(name, prefix+"-")) {
			out = append(out, t)
		}
	}
	return out
}

// deploymentPrefix reads the Workers' name prefix from the manifest the
// generator wrote (wrangler-compat/workers, workers.json).
func deploymentPrefix(out string) (string, error) {
	b, err := os.ReadFile(filepath.Join(out, "workers.json"))
	if err != nil {
		return "", err
	}
	var m struct {
		Prefix string `json:"prefix"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Prefix == "" {
		return "", fmt.Errorf("%s/workers.json: no prefix (%v)", out, err)
	}
	return m.Prefix, nil
}

// listeningPorts returns the TCP ports pid listens on: the LISTEN entries
// of /proc/PID/net/tcp{,6} whose socket inode is one of pid's open files.
func listeningPorts(pid int) []int {
	inodes := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue
		}
		ports = append(ports, parseListening(bufio.NewScanner(f), inodes)...)
		f.Close()
	}
	sort.Ints(ports)
	return ports
}

// parseListening reads a /proc/net/tcp table and returns the local ports of
// the listening sockets (state 0A) among inodes.
func parseListening(sc *bufio.Scanner, inodes map[string]bool) []int {
	var ports []int
	sc.Scan() // the header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …
		if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil {
			ports = append(ports, int(p))
		}
	}
	return ports
}

// findWorkers looks among pids for the workerd that runs the Workers: the
// one whose inspector lists the deployment's Workers. It returns that pid
// and their targets, or 0.
func findWorkers(pids []int, prefix string) (int, []inspectorTarget) {
	c := &http.Client{Timeout: time.Second}
	for _, pid := range pids {
		for _, port := range listeningPorts(pid) {
			resp, err := c.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/json/list")
			if err != nil {
				continue
			}
			var list []inspectorTarget
			err = json.NewDecoder(resp.Body).Decode(&list)
			resp.Body.Close()
			if ts := workerTargets(list, prefix); err == nil && len(ts) > 0 {
				return pid, ts
			}
		}
	}
	return 0, nil
}

// heapUsage is the result of Runtime.getHeapUsage.
type heapUsage struct {
	UsedSize           float64 `json:"usedSize"`
	TotalSize          float64 `json:"totalSize"`
	BackingStorageSize float64 `json:"backingStorageSize"`
}

// held is the memory the isolate held: its heap and its buffers.
func (h heapUsage) held() float64 { return h.TotalSize + h.BackingStorageSize }

// isolatePeak is the most one Worker's isolate held while it was watched.
type isolatePeak struct {
	worker  string // the Worker's name, without core:user:
	peak    heapUsage
	samples int
	err     error // why not one sample was taken, if none was
}

// isolateWatch samples the heap of every Worker's isolate until stop.
type isolateWatch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	peaks  []*isolatePeak
}

// watchIsolates starts sampling targets. Its figures are read after stop.
func watchIsolates(targets []inspectorTarget) *isolateWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &isolateWatch{cancel: cancel}
	for _, t := range targets {
		p := &isolatePeak{worker: strings.TrimPrefix(t.ID, "core:user:")}
		w.peaks = append(w.peaks, p)
		w.wg.Add(1)
		go func(url string) {
			defer w.wg.Done()
			p.err = sampleHeap(ctx, url, func(h heapUsage) {
				p.samples++
				if h.held() > p.peak.held() {
					p.peak = h
				}
			})
		}(t.URL)
	}
	return w
}

// stop ends the sampling and returns the isolates, the one that held the
// most first.
func (w *isolateWatch) stop() []*isolatePeak {
	w.cancel()
	w.wg.Wait()
	sort.SliceStable(w.peaks, func(i, j int) bool { return w.peaks[i].peak.held() > w.peaks[j].peak.held() })
	return w.peaks
}

// sampleHeap asks the inspector at url for the isolate's heap usage every
// sampleEvery until ctx ends, and gives each answer to f. workerd keeps one
// inspector session per isolate, and wrangler dev takes its Workers'
// sessions now and then (it streams their console), which closes ours: it
// is opened again at the next tick. It returns the last error if not one
// sample was taken.
func sampleHeap(ctx context.Context, url string, f func(heapUsage)) error {
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	var (
		c       *websocket.Conn
		lastErr error
		taken   int
	)
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for id := 1; ; id++ {
		if c == nil {
			var err error
			if c, _, err = websocket.DefaultDialer.DialContext(ctx, url, nil); err != nil {
				c, lastErr = nil, err
			} else {
				c.SetReadLimit(1 << 20)
			}
		}
		if c != nil {
			h, err := askHeap(ctx, c, id)
			if err == nil {
				f(h)
				taken++
			} else {
				c.Close()
				c, lastErr = nil, err
			}
		}
		select {
		case <-ctx.Done():
			if taken == 0 {
				return lastErr
			}
			return nil
		case <-tick.C:
		}
	}
}

// askHeap sends Runtime.getHeapUsage as request id and reads its answer
// (the inspector may send events in between). The connection is closed if
// ctx ends first, which ends a read waiting on it.
func askHeap(ctx context.Context, c *websocket.Conn, id int) (heapUsage, error) {
	defer context.AfterFunc(ctx, func() { c.Close() })()
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"id":`+strconv.Itoa(id)+`,"method":"Runtime.getHeapUsage"}`)); err != nil {
		return heapUsage{}, err
	}
	for {
		_, b, err := c.ReadMessage()
		if err != nil {
			return heapUsage{}, err
		}
		if h, mine, err := parseHeapAnswer(b, id); mine {
			return h, err
		}
	}
}

// parseHeapAnswer reads one inspector message: whether it answers request
// id, and if so the heap usage it carries or the error it reports.
func parseHeapAnswer(b []byte, id int) (heapUsage, bool, error) {
	var m struct {
		ID     int        `json:"id"`
		Result *heapUsage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return heapUsage{}, false, nil // not an answer of ours
	}
	switch {
	case m.ID != id:
		return heapUsage{}, false, nil
	case m.Error != nil:
		return heapUsage{}, true, fmt.Errorf("Runtime.getHeapUsage: %s", m.Error.Message)
	case m.Result == nil:
		return heapUsage{}, true, fmt.Errorf("Runtime.getHeapUsage: no result")
	}
	return *m.Result, true, nil
}

// isolatesLine describes the isolates' peaks: the largest, with the limit's
// verdict, then the next two, then any that could not be measured.
func isolatesLine(peaks []*isolatePeak) string {
	var b strings.Builder
	var missed []string
	shown := 0
	for _, p := range peaks {
		if p.err != nil || p.samples == 0 {
			missed = append(missed, fmt.Sprintf("%s (%v)", p.worker, p.err))
			continue
		}
		switch {
		case shown == 0:
			fmt.Fprintf(&b, "largest isolate %s %s (heap %s + buffers %s)%s", p.worker, fmtMiB(int64(p.peak.held())),
				fmtMiB(int64(p.peak.TotalSize)), fmtMiB(int64(p.peak.BackingStorageSize)), verdict("≤128MB", p.peak.held() <= isolateLimit))
		case shown < 3:
			fmt.Fprintf(&b, ", %s %s", p.worker, fmtMiB(int64(p.peak.held())))
		}
		shown++
	}
	if shown == 0 {
		b.WriteString("no isolate measured")
	}
	if len(missed) > 0 {
		fmt.Fprintf(&b, "; not measured: %s", strings.Join(missed, ", "))
	}
	return b.String()
}
