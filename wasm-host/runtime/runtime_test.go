package runtime

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/contract"
	"decisiongateway/testkit/testenv"
)

// fakeServices records what the guest asked for; the ledger answers
// SELECTs of literal arguments itself, which is all the test guest runs.
type fakeServices struct {
	mu      sync.Mutex
	logs    []abi.LogRecord
	out     bytes.Buffer
	configs map[string]int // config import calls by name
	// ledgerWait, when set before the first call, runs at the start of
	// every ledger batch: a test holds calls in the ledger with it.
	ledgerWait func()
	// fetchWait, likewise, runs at the start of every fetch.
	fetchWait func()
}

func (f *fakeServices) services() Services {
	return Services{
		Ledger: func(ctx context.Context, b *abi.Batch) abi.BatchResult {
			if f.ledgerWait != nil {
				f.ledgerWait()
			}
			var res abi.BatchResult
			for _, s := range b.Steps {
				res.Steps = append(res.Steps, abi.StepResult{Executed: true, Columns: []string{"a", "b", "c"}, Rows: [][]abi.Value{s.Args}})
			}
			return res
		},
		Fetch: func(ctx context.Context, r *abi.FetchRequest) abi.FetchResponse {
			if f.fetchWait != nil {
				f.fetchWait()
			}
			return abi.FetchResponse{Status: 201, Headers: abi.Headers{{Name: "x-credential", Value: r.Credential}}, Body: append([]byte("got:"), r.Body...)}
		},
		AI: func(ctx context.Context, a *abi.AIRequest) abi.AIResponse {
			return abi.AIResponse{Status: 200, Output: a.Input}
		},
		Config: func(name string) string {
			f.mu.Lock()
			if f.configs == nil {
				f.configs = map[string]int{}
			}
			f.configs[name]++
			f.mu.Unlock()
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
	return newGuestFunction(t, Options{CacheDir: t.TempDir()}, "testguests/testguest.wasm", size)
}

// newGuestFunction compiles the test guest module at wasm (relative to
// build/) on an engine with opts and pools it, one instance warm.
func newGuestFunction(t *testing.T, opts Options, wasm string, size int) (*Function, *fakeServices) {
	t.Helper()
	return newWarmedFunction(t, opts, wasm, size, 1)
}

// newWarmedFunction is newGuestFunction with warm instances made at once.
func newWarmedFunction(t *testing.T, opts Options, wasm string, size, warm int) (*Function, *fakeServices) {
	t.Helper()
	ctx := context.Background()
	fs := &fakeServices{}
	e, err := NewEngine(ctx, opts, fs.services())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(ctx) })
	m, err := e.Compile(ctx, "testguest", testenv.Wasm(t, wasm))
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFunction(ctx, m, size, warm)
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

// pooled is a pool of one instance of m, closed when the test ends.
func pooled(t *testing.T, m *Module) *Function {
	t.Helper()
	f, err := NewFunction(context.Background(), m, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// ask PUTs "hello" to f's /echo and checks the answer's body holds want.
func ask(t *testing.T, f *Function, want string) {
	t.Helper()
	resp := call(t, f, abi.Request{Method: "PUT", Path: "/echo", Body: []byte("hello")})
	if !bytes.Contains(resp.Body, []byte(want)) {
		t.Fatalf("answered %d %q, want %q in it", resp.Status, resp.Body, want)
	}
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

// holdLedger makes every ledger batch of fs wait until release is closed,
// and reports each batch that reached the ledger on entered.
func holdLedger(fs *fakeServices) (entered chan struct{}, release chan struct{}) {
	return hold(&fs.ledgerWait)
}

// holdFetch does the same to every fetch of fs.
func holdFetch(fs *fakeServices) (entered chan struct{}, release chan struct{}) {
	return hold(&fs.fetchWait)
}

func hold(wait *func()) (entered chan struct{}, release chan struct{}) {
	entered, release = make(chan struct{}, 64), make(chan struct{})
	*wait = func() {
		entered <- struct{}{}
		<-release
	}
	return entered, release
}

func TestCallWaitingOnLedgerLeavesItsRunSlot(t *testing.T) {
	f, fs := newTestFunction(t, 1)
	entered, release := holdLedger(fs)
	parked := make(chan abi.Response, 1)
	go func() {
		resp, err := f.Handle(context.Background(), &abi.Request{Path: "/ledger", Body: []byte("x")})
		if err != nil {
			t.Error(err)
		}
		parked <- resp
	}()
	<-entered
	// The pool runs one call at a time, and one call waits on the ledger:
	// another call still runs, on a second instance.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := f.Handle(ctx, &abi.Request{Path: "/echo"})
	if err != nil || resp.Headers.Get("x-echo-path") != "/echo" {
		t.Fatalf("a call beside one waiting on the ledger: %v %v", resp.Headers, err)
	}
	close(release)
	if got := <-parked; string(got.Body) != `{"err":"","int":-42,"textSame":true,"blobSame":true}` {
		t.Fatalf("the parked call answered %s", got.Body)
	}
	if st := f.Stats(); st.Created != 2 {
		t.Fatalf("created %d instances, want 2", st.Created)
	}
}

func TestParkedInstancesAreBounded(t *testing.T) {
	for _, parked := range []int{0, 16} {
		t.Run(fmt.Sprintf("ParkedPerSlot=%d", parked), func(t *testing.T) {
			f, fs := newGuestFunction(t, Options{CacheDir: t.TempDir(), ParkedPerSlot: parked}, "testguests/testguest.wasm", 1)
			testParkedBound(t, f, fs, cmp.Or(parked, defaultParked))
		})
	}
}

// testParkedBound parks parked calls of f, a pool of one run slot, in
// the ledger and checks that the next call finds no instance.
func testParkedBound(t *testing.T, f *Function, fs *fakeServices, parked int) {
	entered, release := holdLedger(fs)
	var wg sync.WaitGroup
	defer wg.Wait()
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	for i := 0; i < parked; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.Handle(context.Background(), &abi.Request{Path: "/ledger"}); err != nil {
				t.Error(err)
			}
		}()
	}
	for i := 0; i < parked; i++ {
		<-entered
	}
	// Every instance the pool may keep is parked: the next call waits for
	// one, until its deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := f.Handle(ctx, &abi.Request{Path: "/echo"}); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("a call past %d parked instances: err = %v, want ErrOverloaded", parked, err)
	}
	if st := f.Stats(); st.Created != int64(parked) {
		t.Fatalf("created %d instances, want %d", st.Created, parked)
	}
	close(release)
	released = true
	wg.Wait()
	// Once they are back, calls find them idle.
	call(t, f, abi.Request{Path: "/echo"})
	if st := f.Stats(); st.Created != int64(parked) {
		t.Fatalf("created %d instances after the wait, want %d", st.Created, parked)
	}
}

func TestUnparkedCallWaitsForTheRunSlot(t *testing.T) {
	f, fs := newTestFunction(t, 1)
	entered, release := holdLedger(fs)
	var timing Timing
	parked := make(chan time.Time, 1)
	go func() {
		if _, err := f.Handle(WithTiming(context.Background(), &timing), &abi.Request{Path: "/ledger"}); err != nil {
			t.Error(err)
		}
		parked <- time.Now()
	}()
	<-entered
	// A second call takes the run slot and holds it for a second.
	sleeping := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(sleeping)
		f.Handle(context.Background(), &abi.Request{Path: "/sleep", Query: "ms=1000"})
	}()
	defer func() { <-sleeping }()
	for deadline := time.Now().Add(10 * time.Second); f.Stats().InUse < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(release)
			t.Fatal("no second call ran while one waited on the ledger")
		}
	}
	// The parked call's batch is answered: it goes on only once the
	// sleeper has left the slot, at least a second after the sleeper began,
	// and its wait for the slot counts as queueing, not as its own time.
	close(release)
	if done := <-parked; done.Sub(start) < time.Second {
		t.Fatalf("the unparked call finished %v after the sleeper began, within its second", done.Sub(start))
	}
	if q := timing.Queue(); q < 300*time.Millisecond {
		t.Fatalf("the unparked call's queueing: %v, want most of the sleeper's second", q)
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

// A call starts from the state _initialize left, whatever earlier calls on
// the same instance did to globals and the heap (schema/abi.md, "The
// arena"), and an instance's memory stays at what its largest call needed:
// no instance is replaced because calls filled its heap.
// Settings are fixed for a host's life: a module asks for each once, while
// it initialises, and its calls find them in what init left (schema/abi.md,
// "Settings").
func TestSettingsAreReadOncePerInstanceAtInit(t *testing.T) {
	f, fs := newTestFunction(t, 1)
	for range 5 {
		if got := call(t, f, abi.Request{Path: "/config", Query: "name=SERVICE_RATE_LIMIT"}); string(got.Body) != "77" {
			t.Fatalf("config = %q, want 77", got.Body)
		}
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, name := range contract.ModuleSettings() {
		if fs.configs[name] != 1 {
			t.Errorf("%s asked for %d times, want once at init", name, fs.configs[name])
		}
	}
}

func TestEveryCallStartsFromInitsState(t *testing.T) {
	f, _ := newTestFunction(t, 1)
	for i := range 50 {
		resp := call(t, f, abi.Request{Path: "/remember", RequestID: "r" + strconv.Itoa(i), Body: bytes.Repeat([]byte{'x'}, 64<<10)})
		if string(resp.Body) != "1 init" {
			t.Fatalf("call %d saw %q, want %q (the state init left)", i, resp.Body, "1 init")
		}
	}
	body := make([]byte, 1<<20)
	for i := range body {
		body[i] = byte(i)
	}
	var size uint32
	for i := range 40 {
		resp := call(t, f, abi.Request{Path: "/echo", Body: body})
		if !bytes.Equal(resp.Body, body) {
			t.Fatalf("call %d: echo differs", i)
		}
		inst, _, _ := f.stock.take()
		if i == 0 {
			size = inst.mod.Memory().Size()
		} else if got := inst.mod.Memory().Size(); got != size {
			t.Fatalf("call %d: memory %d bytes, after the first call %d", i, got, size)
		}
		f.stock.put(inst)
	}
	if s := f.Stats(); s.Created != 1 || s.Recycled != 0 || s.Discarded != 0 {
		t.Fatalf("stats %+v: want one instance serving every call", s)
	}
}

// An arena whose state a guest broke is not reset, and so its instance is
// not reused (Function.run discards it).
func TestBrokenArenaIsNotReset(t *testing.T) {
	f, _ := newTestFunction(t, 1)
	call(t, f, abi.Request{Path: "/echo"})
	inst, _, _ := f.stock.take()
	defer f.stock.put(inst)
	if inst.arena == nil {
		t.Fatal("testguest has no arena: is it built by scripts/build-functions.sh?")
	}
	if !inst.arena.reset(inst.mod) {
		t.Fatal("an intact arena was not reset")
	}
	mem := inst.mod.Memory()
	for _, next := range []uint32{inst.arena.mark - 16, mem.Size() + 16} {
		mem.WriteUint32Le(inst.arena.nextAddr, next)
		if inst.arena.reset(inst.mod) {
			t.Errorf("next=%d (mark %d, memory %d): reset", next, inst.arena.mark, mem.Size())
		}
	}
	mem.WriteUint32Le(inst.arena.nextAddr, inst.arena.mark)
}

// Randomness never comes from memory the arena puts back: wasi-libc's
// arc4random keeps its generator in globals, which would give every call the
// same bytes (shared/guest/arena.go).
func TestRandomnessDiffersFromCallToCall(t *testing.T) {
	f, _ := newTestFunction(t, 1)
	seen := map[string]bool{}
	for i := range 20 {
		words := strings.Fields(string(call(t, f, abi.Request{Path: "/random"}).Body))
		if len(words) != 2 {
			t.Fatalf("call %d: %q", i, words)
		}
		for _, w := range words {
			if seen[w] {
				t.Fatalf("call %d repeated %s", i, w)
			}
			seen[w] = true
		}
	}
}

// Modules hash through the host (shared/digest, schema/abi.md): the
// import's digests are SHA-256's, the empty input and a body larger than
// the guest's scratch included.
func TestModuleDigestsAreTheHostsSHA256(t *testing.T) {
	f, _ := newTestFunction(t, 1)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<14)
	for _, body := range [][]byte{nil, []byte("abc"), big} {
		want := sha256.Sum256(body)
		if got := string(call(t, f, abi.Request{Path: "/sha256", Body: body}).Body); got != hex.EncodeToString(want[:]) {
			t.Errorf("sha256 of %d bytes = %q, want %x", len(body), got, want)
		}
	}
}

// The byte search the project puts into TinyGo (scripts/tinygo/bytealg,
// tested natively there) finds the first byte wherever it is once compiled
// to wasm: at every position of bodies of every length up to 40, with the
// byte a second time after it.
func TestGuestByteSearchFindsTheFirst(t *testing.T) {
	f, _ := newTestFunction(t, 1)
	ctx := context.Background()
	for n := 1; n <= 40; n++ {
		for at := range n {
			body := bytes.Repeat([]byte{0x01}, n)
			body[at] = 0
			if at+9 < n {
				body[at+9] = 0
			}
			resp, err := f.Handle(ctx, &abi.Request{Path: "/scan", Query: "n=1", Body: body})
			if err != nil || resp.Status != 200 || string(resp.Body) != strconv.Itoa(at) {
				t.Fatalf("length %d, byte at %d: %d %q %v", n, at, resp.Status, resp.Body, err)
			}
		}
	}
}
