package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/testkit/testenv"
)

// fakeServices records what the guest asked for; the ledger answers
// SELECTs of literal arguments itself, which is all the test guest runs.
type fakeServices struct {
	mu   sync.Mutex
	logs []abi.LogRecord
	out  bytes.Buffer
}

func (f *fakeServices) services() Services {
	return Services{
		Ledger: func(ctx context.Context, b *abi.Batch) abi.BatchResult {
			var res abi.BatchResult
			for _, s := range b.Steps {
				res.Steps = append(res.Steps, abi.StepResult{Executed: true, Columns: []string{"a", "b", "c"}, Rows: [][]abi.Value{s.Args}})
			}
			return res
		},
		Fetch: func(ctx context.Context, r *abi.FetchRequest) abi.FetchResponse {
			return abi.FetchResponse{Status: 201, Headers: abi.Headers{{Name: "x-credential", Value: r.Credential}}, Body: append([]byte("got:"), r.Body...)}
		},
		AI: func(ctx context.Context, a *abi.AIRequest) abi.AIResponse {
			return abi.AIResponse{Status: 200, Output: a.Input}
		},
		Config: func(name string) string {
			if name == "SERVICE_RATE_LIMIT" {
				return "77"
			}
			return ""
		},
		Log: func(ctx context.Context, fn, rid string, rec *abi.LogRecord) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.logs = append(f.logs, *rec)
		},
		Output: func(fn string, p []byte) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.out.Write(p)
		},
	}
}

func newTestFunction(t *testing.T, size int) (*Function, *fakeServices) {
	t.Helper()
	ctx := context.Background()
	fs := &fakeServices{}
	e, err := NewEngine(ctx, Options{CacheDir: t.TempDir()}, fs.services())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(ctx) })
	m, err := e.Compile(ctx, "testguest", testenv.Wasm(t, "testguests/testguest.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFunction(ctx, m, size, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f, fs
}

func call(t *testing.T, f *Function, req abi.Request) abi.Response {
	t.Helper()
	resp, err := f.Handle(context.Background(), &req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.Path, err)
	}
	return resp
}

func TestRoundTripLargeBinaryBodyAndManyHeaders(t *testing.T) {
	f, _ := newTestFunction(t, 2)
	body := make([]byte, 3<<20) // larger than any import buffer, every byte value
	for i := range body {
		body[i] = byte(i)
	}
	var h abi.Headers
	for i := 0; i < 500; i++ {
		h.Add("x-h"+strconv.Itoa(i), strings.Repeat("v", i)+"\x00ü")
	}
	resp := call(t, f, abi.Request{Method: "PUT", Path: "/echo", Query: "a=1&b=%00", ClientAddr: "203.0.113.9", RequestID: "rid-1", Headers: h, Body: body})
	if resp.Status != 200 || !bytes.Equal(resp.Body, body) {
		t.Fatalf("status %d, body equal %v (len %d)", resp.Status, bytes.Equal(resp.Body, body), len(resp.Body))
	}
	for name, want := range map[string]string{
		"x-echo-method": "PUT", "x-echo-path": "/echo", "x-echo-query": "a=1&b=%00",
		"x-echo-client": "203.0.113.9", "x-echo-request-id": "rid-1", "x-echo-header-count": "500",
		"x-echo-x-h499": strings.Repeat("v", 499) + "\x00ü",
	} {
		if got := resp.Headers.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func TestRoundTripLargeResponse(t *testing.T) {
	f, _ := newTestFunction(t, 1)
	resp := call(t, f, abi.Request{Method: "GET", Path: "/big", Query: "n=5000000"})
	if len(resp.Body) != 5000000 || resp.Body[4999999] != byte(4999999*7%256) {
		t.Fatalf("got %d bytes", len(resp.Body))
	}
}

func TestImportsReachServices(t *testing.T) {
	f, fs := newTestFunction(t, 1)
	if got := call(t, f, abi.Request{Path: "/config", Query: "name=SERVICE_RATE_LIMIT"}); string(got.Body) != "77" {
		t.Errorf("config = %q", got.Body)
	}
	payload := []byte("ü\x00\xff binary")
	got := call(t, f, abi.Request{Path: "/ledger", Body: payload})
	if string(got.Body) != `{"err":"","int":-42,"textSame":true,"blobSame":true}` {
		t.Errorf("ledger = %s", got.Body)
	}
	got = call(t, f, abi.Request{Path: "/fetch", Query: "credential=upstream", Headers: abi.Headers{{Name: "x-target", Value: "http://u/x"}}, Body: payload})
	if got.Headers.Get("x-fetch-status") != "201" || got.Headers.Get("x-upstream-x-credential") != "upstream" || !bytes.Equal(got.Body, append([]byte("got:"), payload...)) {
		t.Errorf("fetch = %v %q", got.Headers, got.Body)
	}
	// A fetch result larger than the guest's scratch buffer goes through take.
	big := bytes.Repeat([]byte("z"), 200<<10)
	got = call(t, f, abi.Request{Path: "/fetch", Headers: abi.Headers{{Name: "x-target", Value: "http://u/x"}}, Body: big})
	if len(got.Body) != len(big)+4 {
		t.Errorf("large fetch result: %d bytes", len(got.Body))
	}
	call(t, f, abi.Request{Path: "/log"})
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.logs) != 1 || fs.logs[0].Message != "hello from the guest" || fs.logs[0].Attrs[0] != (abi.Header{Name: "answer", Value: "42"}) {
		t.Errorf("logs = %+v", fs.logs)
	}
}

func TestWallClockIsReal(t *testing.T) {
	f, _ := newTestFunction(t, 1)
	got := call(t, f, abi.Request{Path: "/time"})
	ts, err := time.Parse(time.RFC3339, string(got.Body))
	if err != nil || time.Since(ts).Abs() > time.Minute {
		t.Fatalf("guest time %q: %v", got.Body, err)
	}
}

func TestPoolNeverExceedsSizeUnderConcurrency(t *testing.T) {
	const size, requests = 3, 24
	f, _ := newTestFunction(t, size)
	var wg sync.WaitGroup
	errs := make(chan error, requests)
	for i := 0; i < requests; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := f.Handle(context.Background(), &abi.Request{Path: "/sleep", Query: "ms=20"})
			if err == nil && string(resp.Body) != "slept" {
				err = fmt.Errorf("body %q", resp.Body)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	st := f.Stats()
	if st.Created > size || st.PeakInUse > size {
		t.Fatalf("created %d instances, peak %d in use, pool size %d", st.Created, st.PeakInUse, size)
	}
	if st.PeakInUse < 2 {
		t.Fatalf("requests did not run concurrently: peak %d", st.PeakInUse)
	}
}

func TestWaitingForInstanceRespectsDeadline(t *testing.T) {
	f, _ := newTestFunction(t, 1)
	busy := make(chan struct{})
	go func() {
		defer close(busy)
		f.Handle(context.Background(), &abi.Request{Path: "/sleep", Query: "ms=300"})
	}()
	// The sleeper must be done before the engine closes at cleanup.
	defer func() { <-busy }()
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := f.Handle(ctx, &abi.Request{Path: "/echo"}); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("err = %v, want ErrOverloaded", err)
	}
}

func TestTrappingGuestIsDiscardedNotReused(t *testing.T) {
	f, fs := newTestFunction(t, 1)
	_, err := f.Handle(context.Background(), &abi.Request{Path: "/trap"})
	if err == nil {
		t.Fatal("a panicking guest returned no error")
	}
	if st := f.Stats(); st.Discarded != 1 {
		t.Fatalf("discarded %d", st.Discarded)
	}
	fs.mu.Lock()
	printed := fs.out.String()
	fs.mu.Unlock()
	if !strings.Contains(printed, "panic") {
		t.Errorf("guest output %q does not show the panic", printed)
	}
	// The next request gets a fresh instance and works.
	if resp := call(t, f, abi.Request{Path: "/echo", Body: []byte("ok")}); string(resp.Body) != "ok" {
		t.Fatalf("after trap: %q", resp.Body)
	}
	if st := f.Stats(); st.Created != 2 {
		t.Fatalf("created %d instances, want a fresh one after the trap", st.Created)
	}
}

func TestDeadlineStopsRunawayGuest(t *testing.T) {
	f, _ := newTestFunction(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := f.Handle(ctx, &abi.Request{Path: "/spin", Query: "n=0"})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want deadline exceeded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a spinning guest was not stopped by its deadline")
	}
	if st := f.Stats(); st.Discarded != 1 {
		t.Fatalf("discarded %d", st.Discarded)
	}
	if resp := call(t, f, abi.Request{Path: "/echo", Body: []byte("alive")}); string(resp.Body) != "alive" {
		t.Fatalf("after deadline: %q", resp.Body)
	}
}

func TestModuleWithoutABIExportsIsRefused(t *testing.T) {
	ctx := context.Background()
	e, err := NewEngine(ctx, Options{}, (&fakeServices{}).services())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	// The smallest valid module: magic and version, no exports.
	if _, err := e.Compile(ctx, "empty", []byte("\x00asm\x01\x00\x00\x00")); err == nil || !strings.Contains(err.Error(), "gateway_abi_version") {
		t.Fatalf("err = %v", err)
	}
}
