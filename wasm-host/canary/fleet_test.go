package canary_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"decisiongateway/wasm-host/canary"
)

// The acceptance tests of issue 14: two hosts on one real sqld, the
// analysis ticks driven by the test (no timing asserted).

// exposure sends one request per account, alternating between the hosts,
// and counts the answers the canary gave and how many of them failed.
func exposure(t *testing.T, hosts []*host, path string, from, n int, v2 canary.Version) (onCanary, failed int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		r := hosts[i%len(hosts)].asAccount(t, path, account(i))
		if r.version == v2.Label() {
			onCanary++
			if r.status >= 500 {
				failed++
			}
		}
	}
	return onCanary, failed
}

// TestBrokenCanaryIsStoppedAfterTheFleetWideSample: a canary that fails
// every request, on half the callers of two hosts, with a sample of 25 and
// no analysis at all while 600 requests arrive — the worst case, analysis
// stalled. The fleet admits 25 canary requests in total (not 25 per host);
// the rest of the canary's callers get stable. The next tick rolls it back;
// its version is refused by a later canary unless forced.
func TestBrokenCanaryIsStoppedAfterTheFleetWideSample(t *testing.T) {
	hosts := startFleet(t, 2)
	policy := canary.Policy{MaxErrorRate: 0.05, MinSamples: 25, MaxLatencyRatio: 1.5}
	v2 := hosts[0].rollout(t, canary.Rollout{Steps: []canary.Step{{Share: 5000}}, Policy: policy})
	tick(t, hosts...) // both hosts apply it

	onCanary, failed := exposure(t, hosts, "/trap", 0, 600, v2)
	t.Logf("exposure with the analysis stalled: %d of 600 callers reached the canary, %d got an error (sample %d, 2 hosts)", onCanary, failed, policy.MinSamples)
	if failed != onCanary || int64(onCanary) != policy.MinSamples {
		t.Fatalf("%d callers reached the broken canary (%d failed); want exactly the fleet-wide sample, %d", onCanary, failed, policy.MinSamples)
	}
	d := tick(t, hosts...)
	if len(d) != 1 || d[0].Action != "rollback" {
		t.Fatalf("analysis decided %+v, want a rollback", d)
	}
	t.Logf("decision: %s", d[0].Reason)
	if n, _ := exposure(t, hosts, "/trap", 600, 100, v2); n != 0 {
		t.Fatalf("%d callers reached the canary after its rollback", n)
	}

	ctx := context.Background()
	_, err := hosts[1].store.Canary(ctx, function, hosts[1].v2, canary.Rollout{Steps: []canary.Step{{Share: 100}}, Policy: policy})
	if !errors.Is(err, canary.ErrRefused) || !strings.Contains(err.Error(), "error rate") {
		t.Fatalf("the failed version canaried again: %v, want refused with the reason", err)
	}
	if _, err := hosts[1].store.Canary(ctx, function, hosts[1].v2, canary.Rollout{Steps: []canary.Step{{Share: 100}}, Policy: policy, Force: true}); err != nil {
		t.Fatalf("a forced canary of the failed version: %v", err)
	}
	failures, err := hosts[0].store.Failures(ctx, function)
	if err != nil || len(failures) != 1 || failures[0].Version != v2 {
		t.Fatalf("failed versions %+v (%v), want %s", failures, err, v2.Label())
	}
}

// TestBrokenCanaryWithTicksIsStoppedEarly is the production case: hosts
// tick every few seconds (here: after every 20 requests). The analysis
// declares the failure as soon as the errors exceed what the whole sample
// may hold, so far fewer callers than the sample meet the broken canary.
func TestBrokenCanaryWithTicksIsStoppedEarly(t *testing.T) {
	hosts := startFleet(t, 2)
	policy := canary.Policy{MaxErrorRate: 0.05, MinSamples: 100, MaxLatencyRatio: 1.5}
	v2 := hosts[0].rollout(t, canary.Rollout{Steps: []canary.Step{{Share: 1000}, {Share: 5000}}, Policy: policy})
	tick(t, hosts...)
	total := 0
	for round := 0; round < 50; round++ {
		_, failed := exposure(t, hosts, "/error", round*20, 20, v2)
		total += failed
		if d := tick(t, hosts...); len(d) == 1 && d[0].Action == "rollback" {
			t.Logf("rolled back after %d requests, %d callers got an error: %s", (round+1)*20, total, d[0].Reason)
			if total > int(policy.MinSamples) || total < 6 {
				t.Fatalf("%d callers got an error, want more than 5%% of the sample (6) and at most the sample (%d)", total, policy.MinSamples)
			}
			return
		}
	}
	t.Fatal("the broken canary was never rolled back")
}

// TestHealthyCanaryIsPromotedThroughItsSteps: a plan of 10% → 30% → 60%,
// each step judged on 40 canary requests against stable over the same
// window; 300 accounts send a request between ticks. Every step passes
// and the last promotes, each decision with its reason in the history.
func TestHealthyCanaryIsPromotedThroughItsSteps(t *testing.T) {
	hosts := startFleet(t, 2)
	steps, err := canary.ParseSteps("10,30,60")
	if err != nil {
		t.Fatal(err)
	}
	policy := canary.Policy{MaxErrorRate: 0.05, MinSamples: 40, MaxLatencyRatio: 1.5}
	v2 := hosts[0].rollout(t, canary.Rollout{Steps: steps, Policy: policy})
	tick(t, hosts...)
	var actions []string
	for round := 0; round < 10 && (len(actions) == 0 || actions[len(actions)-1] != "promote"); round++ {
		exposure(t, hosts, "/ok", 0, 300, v2)
		for _, d := range tick(t, hosts...) {
			t.Logf("round %d: %s: %s", round, d.Action, d.Reason)
			if d.Action != "wait" {
				actions = append(actions, d.Action)
			}
		}
	}
	if strings.Join(actions, ",") != "step,step,promote" {
		t.Fatalf("decisions %v, want step, step, promote", actions)
	}
	for _, h := range hosts {
		if r := h.asAccount(t, "/ok", account(1)); r.body != "v2" || r.version != v2.Label() {
			t.Fatalf("after the promotion a host answers %q from %s", r.body, r.version)
		}
	}
	events, err := hosts[0].store.Events(context.Background(), function, 0)
	if err != nil {
		t.Fatal(err)
	}
	var history []string
	for i := len(events) - 1; i >= 0; i-- {
		history = append(history, events[i].Action)
		if i < len(events)-1 && !strings.Contains(events[i].Detail, "automatic: ") {
			t.Errorf("automatic decision without its reason: %+v", events[i])
		}
	}
	if strings.Join(history, ",") != "canary,canary,canary,promote" {
		t.Errorf("history %v", history)
	}
}

// TestSlowCanaryIsRolledBack: a canary that answers correctly, but spends
// tens of milliseconds where stable spends microseconds, is rolled back
// for its latency, not its errors.
func TestSlowCanaryIsRolledBack(t *testing.T) {
	hosts := startFleet(t, 2)
	policy := canary.Policy{MaxErrorRate: 0.05, MinSamples: 20, MaxLatencyRatio: 1.5}
	v2 := hosts[0].rollout(t, canary.Rollout{Steps: []canary.Step{{Share: 5000}}, Policy: policy})
	tick(t, hosts...)
	onCanary, failed := exposure(t, hosts, "/slow", 0, 200, v2)
	if failed != 0 || onCanary == 0 {
		t.Fatalf("the slow canary served %d requests, %d failed; want some, none failed", onCanary, failed)
	}
	d := tick(t, hosts...)
	if len(d) != 1 || d[0].Action != "rollback" || !strings.Contains(d[0].Reason, "latency") {
		t.Fatalf("analysis decided %+v, want a rollback for latency", d)
	}
	t.Logf("decision: %s", d[0].Reason)
}

// TestQueueWaitIsNotFunctionTime runs eight slow requests at once on a
// pool of four, so some wait for an instance: the wait is counted apart
// from the function time, in a histogram of its own.
func TestQueueWaitIsNotFunctionTime(t *testing.T) {
	h := startHost(t)
	v2 := h.canary(t, 0, wideOpen)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.asAccount(t, "/slow", account(i), "X-Gateway-Version", "canary")
		}()
	}
	wg.Wait()
	s := versionMetrics(t, h.metrics(t), v2.Label())
	t.Logf("8 requests: function time %.3fs in all, queue wait %.3fs in all", s.LatencySum, s.QueueSum)
	if s.Requests != 8 || s.QueueSum <= 0 {
		t.Fatalf("counters %+v, want 8 requests and some queue wait", s)
	}
	if last := s.QueueBuckets[len(s.QueueBuckets)-1]; last.Count != 8 {
		t.Errorf("queue histogram holds %d requests, want 8", last.Count)
	}
}

// TestTrappedRequestIsAbandonedAtOnce: when a module stops without
// answering (a trap), the host hands the request's id to Abandon before it
// answers, so the attempt the module may have reserved is refunded now
// (ledgerq.Abandon) rather than after its lease; a module that answers,
// even with a 500, settled its own attempt and is left alone.
func TestTrappedRequestIsAbandonedAtOnce(t *testing.T) {
	var mu sync.Mutex
	var abandoned []string
	h := startHostOn(t, "file:"+t.TempDir()+"/ledger.db", func(_ context.Context, id string) {
		mu.Lock()
		abandoned = append(abandoned, id)
		mu.Unlock()
	})
	h.canary(t, 0, wideOpen)
	if r := h.asAccount(t, "/error", account(1), "X-Gateway-Version", "canary"); r.status != 500 {
		t.Fatalf("/error answered %d", r.status)
	}
	mu.Lock()
	if len(abandoned) != 0 {
		t.Fatalf("an answered 500 was abandoned: %v", abandoned)
	}
	mu.Unlock()
	if r := h.asAccount(t, "/trap", account(1), "X-Gateway-Version", "canary"); r.status != 500 {
		t.Fatalf("/trap answered %d", r.status)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(abandoned) != 1 || abandoned[0] == "" {
		t.Fatalf("abandoned %v after one trap, want its request id once", abandoned)
	}
}

// TestClientErrorsDoNotDiluteTheErrorRate: a canary that answers 400 to
// four requests in five and 500 to the fifth has a 20% failure rate if
// 4xx count as good answers — under this release's 30% bound. 4xx are left
// out of the rate, so its rate is 4 errors of 4 judged, and it fails.
func TestClientErrorsDoNotDiluteTheErrorRate(t *testing.T) {
	h := startHost(t)
	policy := canary.Policy{MaxErrorRate: 0.3, MinSamples: 20, MaxLatencyRatio: 1.5}
	v2 := h.canary(t, 5000, policy)
	onCanary := 0
	for i := range 200 {
		path := "/bad"
		if i%5 == 0 {
			path = "/error"
		}
		if r := h.asAccount(t, path, account(i)); r.version == v2.Label() {
			onCanary++
		}
	}
	d := tick(t, h)
	if len(d) != 1 || d[0].Action != "rollback" || !strings.Contains(d[0].Reason, "error rate 100.0%") {
		t.Fatalf("analysis decided %+v after %d canary requests, want a rollback at a 100%% error rate", d, onCanary)
	}
	t.Logf("decision: %s", d[0].Reason)
}

// TestGatedStepHoldsUntilAdvanced: a step written "50!" that passed is
// held: its admission limit is lifted (every caller assigned to the canary
// gets it, judged continuously), and only `release advance` promotes it.
func TestGatedStepHoldsUntilAdvanced(t *testing.T) {
	h := startHost(t)
	steps, err := canary.ParseSteps("50!")
	if err != nil {
		t.Fatal(err)
	}
	v2 := h.rollout(t, canary.Rollout{Steps: steps, Policy: canary.Policy{MaxErrorRate: 0.05, MinSamples: 10, MaxLatencyRatio: 3}})
	for i := range 100 {
		h.asAccount(t, "/ok", account(i))
	}
	for range 2 {
		d := tick(t, h)
		if len(d) != 1 || d[0].Action != "hold" || !strings.Contains(d[0].Reason, "release advance") {
			t.Fatalf("analysis decided %+v, want a hold for the gate", d)
		}
	}
	onCanary, _ := exposure(t, []*host{h}, "/ok", 0, 100, v2)
	if onCanary < 30 {
		t.Fatalf("%d of 100 callers reached the held 50%% canary; its admission limit (10) should be lifted", onCanary)
	}
	st, err := h.store.Advance(context.Background(), function)
	if err != nil || st.CanarySHA != "" || st.StableSHA != v2.SHA256 {
		t.Fatalf("advance past the gate: %+v, %v; want %s promoted", st, err, v2.Label())
	}
}
