//go:build linux

package wranglercompat_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"decisiongateway/testkit/sqldtest"
)

// TestWorkersHoldNoInstanceOnTheUpstream: twenty decisions wait on the
// upstream at once in one function Worker, more than its eight instances
// (pool.js MAX_INSTANCES), because the upstream call runs outside the
// instance (schema/abi.md, "Awaiting"). The fake vendor answers only when
// all twenty are waiting, so a pool that held instances would never fill it.
func TestWorkersHoldNoInstanceOnTheUpstream(t *testing.T) {
	const n = 20
	var mu sync.Mutex
	arrived := 0
	full := make(chan struct{})
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		mu.Lock()
		if arrived++; arrived == n {
			close(full)
		}
		mu.Unlock()
		select {
		case <-full:
			answerVendor(w, r, body)
		case <-time.After(30 * time.Second):
			w.WriteHeader(599)
		}
	})
	url, key := startWorkersOnly(t, up)

	statuses := make([]string, n)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			req, _ := http.NewRequest("POST", url+"/v1/service", strings.NewReader(decisionBody))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Idempotency-Key", "op-"+strconv.Itoa(i))
			resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
			if err != nil {
				statuses[i] = err.Error()
				return
			}
			resp.Body.Close()
			statuses[i] = strconv.Itoa(resp.StatusCode) + " " + resp.Header.Get("X-Service-Credits")
		}(i)
	}
	wg.Wait()
	for i, s := range statuses {
		if s != "200 1" {
			t.Fatalf("decision %d: %s (all: %v)", i, s, statuses)
		}
	}
}

// TestWorkersFinishADecisionWhoseClientHungUp: on Workers too, a client
// that gives up while the upstream is thinking does not cancel its
// decision (function.js keeps it alive with waitUntil): it settles and is
// retained, so resending the key replays it without a second upstream call.
func TestWorkersFinishADecisionWhoseClientHungUp(t *testing.T) {
	gate := make(chan struct{})
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		<-gate
		answerVendor(w, r, body)
	})
	url, key := startWorkersOnly(t, up)
	send := func(ctx context.Context) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/service", strings.NewReader(decisionBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Idempotency-Key", "hung-up")
		return (&http.Client{Timeout: 30 * time.Second}).Do(req)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		resp, err := send(ctx)
		if err == nil {
			resp.Body.Close()
		}
		gone <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for len(up.seen()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the decision never reached the upstream")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-gone; err == nil {
		t.Fatal("the client's request finished although it was cancelled")
	}
	close(gate)
	for {
		resp, err := send(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			if resp.Header.Get("X-Idempotency-Replayed") != "true" || resp.Header.Get("X-Service-Credits") != "0" {
				t.Fatalf("resend: replayed %q credits %q", resp.Header.Get("X-Idempotency-Replayed"), resp.Header.Get("X-Service-Credits"))
			}
			break
		}
		if resp.StatusCode != 409 || resp.Header.Get("X-Service-Error-Code") != "request_in_progress" || time.Now().After(deadline) {
			t.Fatalf("resend: %d %q", resp.StatusCode, resp.Header.Get("X-Service-Error-Code"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(up.seen()); n != 1 {
		t.Fatalf("upstream calls %d, want 1", n)
	}
}

// startWorkersOnly runs the Workers alone on a fresh sqld, with the vendor
// upstream up, and returns their URL and an API key with 100 credits.
func startWorkersOnly(t *testing.T, up *recorder) (url, key string) {
	env := map[string]string{
		"LIBSQL_URL":              sqldtest.Start(t),
		"UPSTREAM_KIND":           "vendor",
		"UPSTREAM_URL":            up.srv.URL + "/v1",
		"UPSTREAM_API_KEY":        upstreamKey,
		"SERVICE_ORIGIN":          consoleOrigin,
		"SERVICE_WELCOME_CREDITS": "100",
		"SERVICE_RATE_LIMIT":      "100",
	}
	p := &pair{t: t}
	p.sides[1] = &side{ledger: env["LIBSQL_URL"], upstream: up, env: env}
	p.admin(1, "migrate")
	key = p.admin(1, "key", "workers-only@example.test")
	return startWrangler(t, env).url, key
}
