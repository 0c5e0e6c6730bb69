package client

import (
	"net/http"
	"testing"
	"time"
)

// Retry-After is whole seconds or an HTTP date (spec §7 rule 2); anything
// else falls back to the backoff.
func TestRetryAfterTakesSecondsAndHTTPDates(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		header string
		want   time.Duration
		ok     bool
	}{
		{"2", 2 * time.Second, true},
		{" 0 ", 0, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{"Mon, 23 Nov 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Monday, 23-Nov-26 12:00:05 GMT", 5 * time.Second, true}, // RFC 850, which HTTP dates allow
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},    // past: now
		{"99999999999999", maxRetryAfter, true},
		{"", 0, false},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
	} {
		got, ok := retryAfter(c.header, now)
		if got != c.want || ok != c.ok {
			t.Errorf("Retry-After %q: %v %v, want %v %v", c.header, got, ok, c.want, c.ok)
		}
	}
}

// The n-th backoff lies in [d/2, d] with d = min(base·2ⁿ⁻¹, limit), also
// for attempt numbers whose doubling would overflow.
func TestBackoffDoublesWithinHalfJitterUpToItsLimit(t *testing.T) {
	b := backoff{base: 100 * time.Millisecond, limit: time.Second}
	for n, d := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 100: time.Second, 1 << 30: time.Second} {
		for range 200 {
			if w := b.wait(n); w < d/2 || w > d {
				t.Fatalf("wait(%d) = %v, want within [%v, %v]", n, w, d/2, d)
			}
		}
	}
}
