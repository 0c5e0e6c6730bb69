package decide_test

import (
	"strings"
	"testing"
)

// TestRecordOfThePreviousFormatReplaysAsLegacyCache is an upgrade across
// the replay envelope (spec §3.1, §4.8, §9.8): a decision retained by the
// previous build — its record rewritten here into that build's format, the
// header lines without the "#envelope" version line — is replayed by this
// build with X-Service-Response-Mode: legacy-cache, the same status, body
// and request id, nothing charged; the record keeps its original expiry
// and is not rewritten by the replay. A record this build writes replays
// in its own mode.
func TestRecordOfThePreviousFormatReplaysAsLegacyCache(t *testing.T) {
	g := startGateway(t, "", nil)
	acct, key := g.NewAccount(randomEmail(), 10)
	first := g.post(key, simpleRequest, "Idempotency-Key", "before-upgrade")
	if first.Status != 200 {
		t.Fatalf("first %d %s", first.Status, first.Body)
	}
	record := func() (headers string, expires int64) {
		rows := g.exec(`SELECT headers, expires_at FROM idempotency WHERE account_id = ? AND key = 'before-upgrade'`, str(acct))
		if len(rows) != 1 {
			t.Fatalf("%d records", len(rows))
		}
		return rows[0][0].AsString(), rows[0][1].AsInt()
	}
	current, expires := record()
	if !strings.HasPrefix(current, "#envelope 2\n") {
		t.Fatalf("this build wrote the envelope %q, want format 2", current)
	}
	// This build's own record replays in the mode it was answered in.
	if r := g.post(key, simpleRequest, "Idempotency-Key", "before-upgrade"); r.Header.Get("X-Service-Response-Mode") != "vendor-native" {
		t.Fatalf("a current record replays in mode %q", r.Header.Get("X-Service-Response-Mode"))
	}

	previous := strings.TrimPrefix(current, "#envelope 2\n")
	g.exec(`UPDATE idempotency SET headers = ? WHERE account_id = ? AND key = 'before-upgrade'`, str(previous), str(acct))
	again := g.post(key, simpleRequest, "Idempotency-Key", "before-upgrade")
	if again.Status != first.Status || string(again.Body) != string(first.Body) {
		t.Fatalf("legacy replay %d %s, want %d %s", again.Status, again.Body, first.Status, first.Body)
	}
	for h, want := range map[string]string{
		"X-Service-Response-Mode": "legacy-cache",
		"X-Idempotency-Replayed":  "true",
		"X-Service-Credits":       "0",
		"X-Request-Id":            first.Header.Get("X-Request-Id"),
		"Content-Type":            first.Header.Get("Content-Type"),
	} {
		if got := again.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if h, e := record(); h != previous || e != expires {
		t.Errorf("the replay rewrote the record: headers %q expiry %d, want %q %d", h, e, previous, expires)
	}
	if n := len(g.vendor.Seen()); n != 1 {
		t.Errorf("upstream calls %d, want 1", n)
	}
	if g.Balance(acct) != 9 {
		t.Errorf("balance %d, want 9 (charged once)", g.Balance(acct))
	}
}
