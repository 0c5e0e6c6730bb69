package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestListeningPortsOfTheProcess: only sockets in LISTEN state (0A) that
// belong to the process count, with their ports read from hex.
func TestListeningPortsOfTheProcess(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:9EE3 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1072614 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 999 1 0000000000000000 100 0 0 10 0
   2: 0100007F:9EE4 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 1072615 1 0000000000000000 20 4 30 10 -1
   3: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1072616 1 0000000000000000 100 0 0 10 0
`
	mine := map[string]bool{"1072614": true, "1072615": true, "1072616": true}
	got := parseListening(bufio.NewScanner(strings.NewReader(table)), mine)
	if want := []int{0x9EE3, 80}; !reflect.DeepEqual(got, want) {
		t.Errorf("ports %v, want %v (inode 999 is another process's, 1072615 is connected, not listening)", got, want)
	}
}

// TestWorkerTargetsAreTheDeployments: wrangler's and workerd's own services
// are not Workers of the deployment.
func TestWorkerTargetsAreTheDeployments(t *testing.T) {
	list := []inspectorTarget{
		{ID: "core:user:dg", URL: "ws://x/core:user:dg"},
		{ID: "core:user:dg-decide", URL: "ws://x/core:user:dg-decide"},
		{ID: "core:user:dgx", URL: "ws://x/core:user:dgx"},
		{ID: "core:user:miniflare-observability-collector", URL: "ws://x/m"},
		{ID: "outbound:0", URL: "ws://x/outbound:0"},
		{ID: "core:user:dg-keys"},
	}
	var got []string
	for _, t := range workerTargets(list, "dg") {
		got = append(got, t.ID)
	}
	if want := []string{"core:user:dg", "core:user:dg-decide"}; !reflect.DeepEqual(got, want) {
		t.Errorf("targets %v, want %v", got, want)
	}
}

// TestHeapAnswers: an event or another request's answer is not ours; an
// error answer is reported.
func TestHeapAnswers(t *testing.T) {
	h, mine, err := parseHeapAnswer([]byte(`{"id":3,"result":{"usedSize":10,"totalSize":20,"embedderHeapUsedSize":1,"backingStorageSize":5}}`), 3)
	if !mine || err != nil || h != (heapUsage{UsedSize: 10, TotalSize: 20, BackingStorageSize: 5}) || h.held() != 25 {
		t.Errorf("answer: %+v mine=%v err=%v", h, mine, err)
	}
	for _, other := range []string{`{"method":"Runtime.consoleAPICalled","params":{}}`, `{"id":2,"result":{}}`, `not json`} {
		if _, mine, _ := parseHeapAnswer([]byte(other), 3); mine {
			t.Errorf("%s taken for the answer to 3", other)
		}
	}
	if _, mine, err := parseHeapAnswer([]byte(`{"id":3,"error":{"code":-32601,"message":"nope"}}`), 3); !mine || err == nil {
		t.Errorf("error answer: mine=%v err=%v", mine, err)
	}
}

// TestIsolatesLineJudgesTheLargest: the largest isolate carries the verdict
// against 128 MB; one that could not be measured is named, not hidden.
func TestIsolatesLineJudgesTheLargest(t *testing.T) {
	peaks := []*isolatePeak{
		{worker: "dg-decide", samples: 9, peak: heapUsage{TotalSize: 120e6, BackingStorageSize: 10e6}},
		{worker: "dg", samples: 9, peak: heapUsage{TotalSize: 8 << 20}},
		{worker: "dg-keys", err: context.DeadlineExceeded},
	}
	line := isolatesLine(peaks)
	for _, want := range []string{"largest isolate dg-decide 124MiB (heap 114MiB + buffers 10MiB) [≤128MB FAIL]", ", dg 8MiB", "not measured: dg-keys"} {
		if !strings.Contains(line, want) {
			t.Errorf("%q lacks %q", line, want)
		}
	}
	peaks[0].peak.TotalSize = 100e6
	if line := isolatesLine(peaks); !strings.Contains(line, "[≤128MB PASS]") {
		t.Errorf("110 MB judged: %q", line)
	}
}

// TestSamplingSurvivesATakenSession: the inspector closes the session after
// one answer (as workerd does when wrangler takes it); sampling opens a new
// one and goes on, and the peak is the largest answer of either.
func TestSamplingSurvivesATakenSession(t *testing.T) {
	var sessions atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		n := sessions.Add(1)
		for answered := 0; ; answered++ {
			_, b, err := c.ReadMessage()
			if err != nil {
				return
			}
			if n == 1 && answered == 1 {
				c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "client closed connection"))
				return
			}
			var req struct{ ID int }
			json.Unmarshal(b, &req)
			c.WriteMessage(websocket.TextMessage, []byte(`{"method":"Runtime.executionContextCreated","params":{}}`))
			size := 10e6 * float64(n) // the second session reports more
			ans, _ := json.Marshal(map[string]any{"id": req.ID, "result": map[string]any{"usedSize": 1, "totalSize": size, "backingStorageSize": 1e6}})
			c.WriteMessage(websocket.TextMessage, ans)
		}
	}))
	defer srv.Close()

	w := watchIsolates([]inspectorTarget{{ID: "core:user:dg-decide", URL: "ws" + strings.TrimPrefix(srv.URL, "http")}})
	deadline := time.Now().Add(10 * time.Second)
	for sessions.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(3 * sampleEvery)
	p := w.stop()[0]
	if sessions.Load() < 2 || p.err != nil || p.samples < 2 {
		t.Fatalf("sessions %d, samples %d, err %v", sessions.Load(), p.samples, p.err)
	}
	if p.peak.held() != 21e6 {
		t.Errorf("peak %v, want 21e6 (the second session's 20e6 heap and 1e6 buffers)", p.peak.held())
	}
}
