package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// decisionRequest is one POST /v1/service with the body and a key. Both
// sides get the same request; the proxy forwards the key to the fake
// upstream, which ignores it.
func decisionRequest(ctx context.Context, base, key string, body []byte) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, "POST", base+vendorPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	return req
}

// load is one measured run against one side.
type load struct {
	url  string   // the side's root URL
	keys []string // spread over clients (closed) or requests (open)
	body []byte
	dur  time.Duration // requests are started only before dur has passed
	// grace is how long requests still in flight at dur may finish; those
	// left after it are cut (cancelled) and counted as unfinished.
	grace time.Duration
	// stagger, in a closed loop, starts client i at i/conns of it rather
	// than every client at once. With an upstream whose latency never
	// varies, clients that start together stay in step for the whole run:
	// every second the same herd reaches the gateway's one ledger writer.
	stagger time.Duration
}

// sample is one request's outcome.
type sample struct {
	at     time.Duration // its intended start, from the run's start
	lat    time.Duration // from its intended start; for a cut request, its age at the cut
	status int           // 0: transport error or cut
	code   string        // X-Service-Error-Code of an error answer
	cut    bool
	err    error // the transport error
}

// run is what a load collected.
type run struct {
	samples []sample
	elapsed time.Duration // from the first start to the last answer (or the cut)
	dur     time.Duration // requests were started before dur had passed (load.dur)
}

// client returns an HTTP client that keeps a connection per concurrent
// request, reads whole bodies, and never compresses.
func client(conns int) (*http.Client, *http.Transport) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0
	t.MaxIdleConnsPerHost = conns + 16
	t.DisableCompression = true
	t.ForceAttemptHTTP2 = false
	return &http.Client{Transport: t}, t
}

// do sends one request and reads its whole body. cutCtx ends at the cut.
func do(c *http.Client, cutCtx context.Context, l *load, key string, intended time.Time) sample {
	resp, err := c.Do(decisionRequest(cutCtx, l.url, key, l.body))
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	now := time.Now()
	switch {
	case cutCtx.Err() != nil:
		return sample{lat: now.Sub(intended), cut: true}
	case err != nil:
		return sample{lat: now.Sub(intended), err: err}
	}
	x := sample{lat: now.Sub(intended), status: resp.StatusCode}
	if x.status/100 != 2 {
		x.code = resp.Header.Get("X-Service-Error-Code")
	}
	return x
}

// closedLoop runs conns clients, each sending its next request as soon as
// the last one is answered, until l.dur has passed.
func closedLoop(l *load, conns int) run {
	c, t := client(conns)
	defer t.CloseIdleConnections()
	start := time.Now()
	deadline := start.Add(l.dur)
	cutCtx, cut := context.WithDeadline(context.Background(), deadline.Add(l.grace))
	defer cut()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		all     []sample
		lastEnd atomic.Int64
	)
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func(key string, delay time.Duration) {
			defer wg.Done()
			var mine []sample
			time.Sleep(delay)
			for time.Now().Before(deadline) && cutCtx.Err() == nil {
				intended := time.Now()
				s := do(c, cutCtx, l, key, intended)
				s.at = intended.Sub(start)
				mine = append(mine, s)
				lastEnd.Store(int64(time.Since(start)))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}(l.keys[i%len(l.keys)], l.stagger*time.Duration(i)/time.Duration(conns))
	}
	wg.Wait()
	return run{samples: all, elapsed: time.Duration(lastEnd.Load()), dur: l.dur}
}

// openLoop starts requests at rate per second on a fixed schedule, whether
// or not earlier ones have been answered, and measures each from the time
// it was due: a slow server cannot slow the schedule down and hide its
// queue (coordinated omission).
func openLoop(l *load, rate float64) run {
	interval := time.Duration(float64(time.Second) / rate)
	expected := int(l.dur/interval) + 1
	c, t := client(expected)
	defer t.CloseIdleConnections()
	start := time.Now()
	deadline := start.Add(l.dur)
	cutCtx, cut := context.WithDeadline(context.Background(), deadline.Add(l.grace))
	defer cut()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		all     = make([]sample, 0, expected)
		lastEnd atomic.Int64
	)
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if !due.Before(deadline) {
			break
		}
		time.Sleep(time.Until(due))
		wg.Add(1)
		go func(key string) {
			defer wg.Done()
			s := do(c, cutCtx, l, key, due)
			s.at = due.Sub(start)
			end := int64(time.Since(start))
			mu.Lock()
			all = append(all, s)
			if end > lastEnd.Load() {
				lastEnd.Store(end)
			}
			mu.Unlock()
		}(l.keys[i%len(l.keys)])
	}
	wg.Wait()
	return run{samples: all, elapsed: time.Duration(lastEnd.Load()), dur: l.dur}
}
