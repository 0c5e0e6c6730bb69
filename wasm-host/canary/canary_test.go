package canary_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/keys"
	"decisiongateway/wasm-host/canary"
)

// TestTenPercentOfAccountsLandOnTheCanaryAndStayThere releases the second
// build of a function to 10% of callers and sends one request for each of
// 1,000 accounts: about a hundred land on the canary, every account keeps its
// version on later requests made with another of its keys, and raising the
// share to 20% moves more accounts onto the canary but none off it.
func TestTenPercentOfAccountsLandOnTheCanaryAndStayThere(t *testing.T) {
	h := startHost(t)
	v1 := canary.VersionOf(function, h.v1)
	v2 := h.canary(t, 1000, wideOpen)
	const accounts = 1000

	served := func(r reply) bool {
		t.Helper()
		switch {
		case r.status == 200 && r.body == "v1" && r.version == v1.Label():
			return false
		case r.status == 200 && r.body == "v2" && r.version == v2.Label():
			return true
		}
		t.Fatalf("answer %d %q with X-Function-Version %q: want v1 from %s or v2 from %s", r.status, r.body, r.version, v1.Label(), v2.Label())
		return false
	}

	onCanary := map[string]bool{}
	for i := range accounts {
		acct := account(i)
		onCanary[acct] = served(h.asAccount(t, "/work", acct))
	}
	n := 0
	for _, c := range onCanary {
		if c {
			n++
		}
	}
	t.Logf("10%% split: %d of %d accounts on the canary (%.1f%%)", n, accounts, 100*float64(n)/accounts)
	// 1,000 independent draws at 10% have a standard deviation of 9.5:
	// 80–120 is more than two of them either side.
	if n < 80 || n > 120 {
		t.Fatalf("%d of %d accounts on a 10%% canary, want near 100", n, accounts)
	}

	for i := range accounts {
		acct := account(i)
		if got := served(h.asAccount(t, "/work", acct)); got != onCanary[acct] {
			t.Fatalf("account %s moved from canary=%v to canary=%v with another of its keys", acct, onCanary[acct], got)
		}
	}

	h.canary(t, 2000, wideOpen)
	n20 := 0
	for i := range accounts {
		acct := account(i)
		got := served(h.asAccount(t, "/work", acct))
		if onCanary[acct] && !got {
			t.Fatalf("account %s left the canary when its share grew from 10%% to 20%%", acct)
		}
		if got {
			n20++
		}
	}
	t.Logf("20%% split: %d of %d accounts on the canary", n20, accounts)
	if n20 < 160 || n20 > 240 {
		t.Fatalf("%d of %d accounts on a 20%% canary, want near 200", n20, accounts)
	}

	// Callers without an account are kept apart by client address; all of
	// this test's come from 127.0.0.1, so they all get one version.
	first := served(h.get(t, "/anonymous"))
	for range 20 {
		if served(h.get(t, "/anonymous")) != first {
			t.Fatal("an anonymous caller from one address flipped between versions")
		}
	}

	m := h.metrics(t)
	s1, s2 := versionMetrics(t, m, v1.Label()), versionMetrics(t, m, v2.Label())
	if want := int64(3*accounts + 21); s1.Requests+s2.Requests != want {
		t.Errorf("metrics count %d+%d requests, want %d", s1.Requests, s2.Requests, want)
	}
	if s2.Requests < int64(2*n+n20) || s1.Errors != 0 || s2.Errors != 0 {
		t.Errorf("metrics: stable %+v canary %+v", s1, s2)
	}
	if s1.Role != "stable" || s2.Role != "canary" || m.Share != 20 {
		t.Errorf("metrics roles %s/%s share %v, want stable/canary 20", s1.Role, s2.Role, m.Share)
	}
	if last := s2.Buckets[len(s2.Buckets)-1]; last.Count != s2.Requests {
		t.Errorf("latency histogram holds %d requests, want %d", last.Count, s2.Requests)
	}
}

// TestFailingCanaryIsRolledBackAutomaticallyAndItsFailuresCounted gives half
// the callers a canary whose every request fails (traps and 500s), with a
// sample of 20, and no analysis tick while 400 requests arrive: the step
// admits exactly 20 canary requests, every later canary caller is served by
// stable, and the next tick rolls the canary back with its counts in the
// reason; the host counts the 20 failures as the canary's.
func TestFailingCanaryIsRolledBackAutomaticallyAndItsFailuresCounted(t *testing.T) {
	h := startHost(t)
	v1 := canary.VersionOf(function, h.v1)
	policy := canary.Policy{MaxErrorRate: 0.2, MinSamples: 20, MaxLatencyRatio: 1.5}
	v2 := h.canary(t, 5000, policy)

	failures := 0
	for i := range 400 {
		path := "/trap"
		if i%2 == 1 {
			path = "/error"
		}
		r := h.asAccount(t, path, account(i))
		switch r.version {
		case v2.Label():
			if r.status != 500 {
				t.Fatalf("canary answered %s with %d, want 500", path, r.status)
			}
			failures++
		case v1.Label():
			if r.status != 200 || r.body != "v1" {
				t.Fatalf("stable answered %d %q", r.status, r.body)
			}
		default:
			t.Fatalf("X-Function-Version %q on a %d answer", r.version, r.status)
		}
	}
	if failures != int(policy.MinSamples) {
		t.Errorf("the canary served %d failing requests, want exactly %d (the step's sample)", failures, policy.MinSamples)
	}

	d := tick(t, h)
	if len(d) != 1 || d[0].Action != "rollback" || !strings.Contains(d[0].Reason, "20 errors") {
		t.Fatalf("analysis decided %+v, want a rollback for 20 errors", d)
	}
	m := h.metrics(t)
	s2 := versionMetrics(t, m, v2.Label())
	if s2.Requests != int64(failures) || s2.Errors != int64(failures) || s2.Role != "retired" {
		t.Errorf("canary metrics %+v, want %d requests, %d errors, role retired", s2, failures, failures)
	}
	if m.Canary != "" || m.Stable != v1.Label() {
		t.Errorf("release after rollback: %+v", m)
	}
	ctx := context.Background()
	st, _, err := h.store.Get(ctx, function)
	if err != nil {
		t.Fatal(err)
	}
	if st.CanarySHA != "" || st.RolledBackSHA != v2.SHA256 || !strings.Contains(st.RollbackReason, "error rate") {
		t.Fatalf("ledger after the rollback: %+v", st)
	}
	events, err := h.store.Events(ctx, function, 1)
	if err != nil || len(events) != 1 || events[0].Action != "auto-rollback" || events[0].SHA256 != v2.SHA256 {
		t.Fatalf("latest release event %+v (%v), want the auto-rollback of %s", events, err, v2.Label())
	}
	for i := range 40 {
		if r := h.asAccount(t, "/trap", account(i)); r.version != v1.Label() || r.status != 200 {
			t.Fatalf("after the rollback, account %d got %d from %s", i, r.status, r.version)
		}
	}
}

// TestPinHeaderServesTheNamedVersion releases a canary to 0% of callers, as
// for a smoke test before any real traffic: unpinned requests all get the
// stable version, and X-Gateway-Version reaches either version by role, label
// or short hash. A pin naming no current version is ignored.
func TestPinHeaderServesTheNamedVersion(t *testing.T) {
	h := startHost(t)
	v1 := canary.VersionOf(function, h.v1)
	v2 := h.canary(t, 0, canary.DefaultPolicy)
	for i := range 50 {
		if r := h.asAccount(t, "/x", account(i)); r.body != "v1" {
			t.Fatalf("account %d reached the canary at 0%%", i)
		}
	}
	cases := []struct{ pin, body, version string }{
		{"canary", "v2", v2.Label()},
		{v2.Label(), "v2", v2.Label()},
		{v2.Short(), "v2", v2.Label()},
		{"stable", "v1", v1.Label()},
		{v1.Label(), "v1", v1.Label()},
		{"decide@000000000000", "v1", v1.Label()},
	}
	for _, c := range cases {
		r := h.asAccount(t, "/x", account(7), "X-Gateway-Version", c.pin)
		if r.status != 200 || r.body != c.body || r.version != c.version {
			t.Errorf("pin %q: %d %q from %q, want %q from %q", c.pin, r.status, r.body, r.version, c.body, c.version)
		}
	}
}

// TestStickyKeyIsTheClaimedAccountElseTheAddress checks what assignment
// hashes: the account an API key or session cookie claims, so a caller keeps
// its version from any address and with any of its keys, and the client
// address only for callers with neither (or with a malformed key).
func TestStickyKeyIsTheClaimedAccountElseTheAddress(t *testing.T) {
	acct := account(1)
	cases := []struct {
		name    string
		headers abi.Headers
		want    string
	}{
		{"api key", abi.Headers{{Name: "authorization", Value: "Bearer " + keys.New(keys.APIKey, acct)}}, "account:" + acct},
		{"session cookie", abi.Headers{{Name: "cookie", Value: "a=b"}, {Name: "cookie", Value: keys.SessionCookie + "=" + keys.New(keys.Session, acct)}}, "account:" + acct},
		{"mistyped key", abi.Headers{{Name: "authorization", Value: "Bearer " + keys.New(keys.APIKey, acct) + "x"}}, "addr:192.0.2.7"},
		{"anonymous", nil, "addr:192.0.2.7"},
	}
	for _, c := range cases {
		if got := canary.StickyKey(&abi.Request{ClientAddr: "192.0.2.7", Headers: c.headers}); got != c.want {
			t.Errorf("%s: sticky key %q, want %q", c.name, got, c.want)
		}
	}
	same := 0
	for i := range 100 {
		k := "account:" + account(i)
		if canary.Bucket("decide", k) < 1000 && canary.Bucket("keys", k) < 1000 {
			same++
		}
	}
	if same > 5 {
		t.Errorf("%d of 100 accounts on a 10%% canary of both decide and keys: the function name does not spread cohorts", same)
	}
}

// TestPercentsAreBasisPoints checks the PERCENT argument of `gateway release
// canary`: up to two decimals, 0 to 100.
func TestPercentsAreBasisPoints(t *testing.T) {
	for _, c := range []struct {
		share string
		bp    int
	}{{"10", 1000}, {"0.5", 50}, {"12.25%", 1225}, {"100", 10000}, {"0", 0}} {
		if got, ok := canary.ParsePercent(c.share); !ok || got != c.bp {
			t.Errorf("ParsePercent(%q) = %d, %v; want %d", c.share, got, ok, c.bp)
		}
		if back, _ := canary.ParsePercent(canary.FormatPercent(c.bp)); back != c.bp {
			t.Errorf("FormatPercent(%d) = %q does not read back", c.bp, canary.FormatPercent(c.bp))
		}
	}
	for _, bad := range []string{"", "101", "-1", "1.234", "ten", "1000", "."} {
		if _, ok := canary.ParsePercent(bad); ok {
			t.Errorf("ParsePercent(%q) accepted", bad)
		}
	}
}

// A release made before modules named their function (a module without the
// gateway.function section) is still served by a host after the upgrade;
// one that names another function is not.
func TestUnnamedReleasedModuleIsServedAnotherFunctionsIsNot(t *testing.T) {
	h := startHost(t)
	section := []byte("\x00\x17\x10gateway.functionconfig")
	at := bytes.LastIndex(h.v2, section)
	if at < 0 {
		t.Fatal("canaryv2.wasm names no function: build it with make build")
	}
	unnamed := append([]byte(nil), h.v2[:at]...)
	h.v2 = unnamed
	v := h.canary(t, 10000, wideOpen)
	if r := h.get(t, "/x"); r.status != 200 || r.body != "v2" || r.version != v.Label() {
		t.Fatalf("an unnamed release at 100%%: %d %q from %q, want v2 from %s", r.status, r.body, r.version, v.Label())
	}
	h.v2 = append(append([]byte(nil), unnamed...), []byte("\x00\x17\x10gateway.functiondecide")...)
	if _, err := h.store.Canary(context.Background(), function, h.v2, canary.Rollout{Steps: []canary.Step{{Share: 10000}}, Policy: wideOpen}); err != nil {
		t.Fatal(err)
	}
	if err := h.table.Sync(context.Background()); err == nil {
		t.Fatal("a release of the decide function's module as config was applied")
	}
}

// A host that stops writes the outcomes it counted since its last poll:
// the fleet's counts survive a restart, and a canary's last requests are
// judged even when their host is gone before its next tick.
func TestClosedHostWritesItsLastOutcomes(t *testing.T) {
	h := startHost(t)
	v := h.canary(t, 10000, wideOpen)
	for i := range 5 {
		if r := h.asAccount(t, "/x", account(i)); r.status != 200 || r.version != v.Label() {
			t.Fatalf("request %d: %+v", i, r)
		}
	}
	h.table.Close()
	ctx := context.Background()
	st, ok, err := h.store.Get(ctx, function)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	c, _, err := h.store.StepCounts(ctx, function, v.SHA256, st.StepSince)
	if err != nil {
		t.Fatal(err)
	}
	if c.Requests != 5 {
		t.Errorf("after Close the ledger holds %d of the canary's 5 requests", c.Requests)
	}
}
