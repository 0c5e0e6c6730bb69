package runtime

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"decisiongateway/shared/abi"
)

// newQueuedFunction is a pool of one instance running at a time whose new
// requests wait at most queue for it.
func newQueuedFunction(t *testing.T, queue time.Duration) (*Function, *fakeServices) {
	t.Helper()
	return newGuestFunction(t, Options{CacheDir: t.TempDir(), QueueTimeout: queue}, "testguests/testguest.wasm", 1)
}

// occupy runs a call that keeps the only run slot for hold, once inUse
// calls are in the pool (the caller's parked ones and this one), and
// returns a channel closed when it has finished.
func occupy(t *testing.T, f *Function, hold time.Duration, inUse int64) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := f.Handle(context.Background(), &abi.Request{Path: "/sleep", Query: "ms=" + strconv.FormatInt(hold.Milliseconds(), 10)}); err != nil {
			t.Error(err)
		}
	}()
	for f.Stats().InUse < inUse {
		time.Sleep(time.Millisecond)
	}
	return done
}

func TestNewRequestIsRefusedAfterItsQueueTimeout(t *testing.T) {
	f, _ := newQueuedFunction(t, 100*time.Millisecond)
	busy := occupy(t, f, 2*time.Second, 1)
	defer func() { <-busy }()
	// The deadline is far; the queue timeout is what ends the wait, before
	// the sleeper gives the slot back, and nothing of the request runs.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := f.Handle(ctx, &abi.Request{Path: "/echo"})
	if !errors.Is(err, ErrOverloaded) || !errors.Is(err, errNoneWithinQueue) {
		t.Fatalf("a new request behind a 2 s call with a 100 ms queue timeout: %v %v, want ErrOverloaded (queue timeout)", resp.Status, err)
	}
	if st := f.Stats(); st.Created != 1 {
		t.Fatalf("created %d instances, want 1: a refused request makes none", st.Created)
	}
}

func TestWithoutQueueTimeoutANewRequestWaitsForTheSlot(t *testing.T) {
	f, _ := newQueuedFunction(t, 0)
	busy := occupy(t, f, 300*time.Millisecond, 1)
	defer func() { <-busy }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if resp, err := f.Handle(ctx, &abi.Request{Path: "/echo"}); err != nil || resp.Headers.Get("x-echo-path") != "/echo" {
		t.Fatalf("a new request behind a 300 ms call, no queue timeout: %v %v", resp.Headers, err)
	}
}

func TestCallBackFromTheLedgerIsNotRefused(t *testing.T) {
	f, fs := newQueuedFunction(t, 50*time.Millisecond)
	entered, release := holdLedger(fs)
	parked := make(chan error, 1)
	go func() {
		resp, err := f.Handle(context.Background(), &abi.Request{Path: "/ledger", Body: []byte("x")})
		if err == nil && string(resp.Body) != `{"err":"","int":-42,"textSame":true,"blobSame":true}` {
			err = errors.New("answered " + string(resp.Body))
		}
		parked <- err
	}()
	<-entered
	// The parked call gave its slot back; a sleeper takes it for far longer
	// than the queue timeout, and then the ledger answers: the call going
	// back into its instance has reserved, so it waits for the slot (a call
	// that cannot get one goes on without, so the wait is what shows), and
	// finishes once the sleeper is done.
	hold := 2 * time.Second
	busy := occupy(t, f, hold, 2)
	slept := time.Now()
	close(release)
	if err := <-parked; err != nil {
		t.Fatalf("the call back from the ledger: %v", err)
	}
	if waited := time.Since(slept); waited < hold*3/4 {
		t.Fatalf("the call back from the ledger finished %v after the %v sleeper started: it did not wait for the run slot", waited, hold)
	}
	<-busy
}

func TestResumedCallIsNotRefused(t *testing.T) {
	f, fs := newQueuedFunction(t, 50*time.Millisecond)
	entered, release := holdFetch(fs)
	answered := make(chan abi.Response, 1)
	go func() {
		resp, err := f.Handle(context.Background(), &abi.Request{Path: "/await", Body: []byte("x")})
		if err != nil {
			t.Error(err)
		}
		answered <- resp
	}()
	<-entered
	// The request awaits its fetch holding nothing; a sleeper takes the
	// only slot; the fetch answers and the continuation waits for the
	// slot past the queue timeout: it made its outbound call, so it is
	// not refused.
	busy := occupy(t, f, 2*time.Second, 1)
	close(release)
	if resp := <-answered; resp.Status != 200 || string(resp.Body) != "resumed:got:x" {
		t.Fatalf("the resumed call answered %d %q", resp.Status, resp.Body)
	}
	<-busy
}

// A resumed call that finds no instance before its request's deadline is
// out of time, not "overloaded": its first call ran (and a decision's
// reserved and called its upstream), so the host must not answer it as a
// refusal that ran nothing.
func TestResumedCallWithoutAnInstanceBeforeItsDeadlineIsOutOfTime(t *testing.T) {
	f, fs := newQueuedFunction(t, 50*time.Millisecond)
	entered, release := holdFetch(fs)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	failed := make(chan error, 1)
	go func() {
		_, err := f.Handle(ctx, &abi.Request{Path: "/await", Body: []byte("x")})
		failed <- err
	}()
	<-entered
	busy := occupy(t, f, 2*time.Second, 1) // holds the only slot past the deadline
	close(release)
	err := <-failed
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrOverloaded) {
		t.Fatalf("the resumed call without an instance: %v, want a deadline, not ErrOverloaded", err)
	}
	<-busy
}
