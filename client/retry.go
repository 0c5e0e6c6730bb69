package client

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// retryAfter reads a Retry-After value (spec §4.8, §7 rule 2): whole
// seconds, or an HTTP date, which the gateway passes on from an upstream
// exactly as sent. A date in the past means now. It reports false when the
// header is absent or unreadable, so the backoff applies instead.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return time.Duration(min(n, int64(maxRetryAfter/time.Second))) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), maxRetryAfter), true
}

// maxRetryAfter caps a Retry-After so that arithmetic cannot overflow; the
// caller's deadline is the real bound.
const maxRetryAfter = 24 * time.Hour

// backoff is jittered exponential backoff for answers without a
// Retry-After. Half of each wait is random ("equal jitter"): clients that
// failed together spread out, and no wait is so short that a restarting
// host is asked again at once.
type backoff struct{ base, limit time.Duration }

// wait returns the wait after the n-th attempt (n ≥ 1).
func (b backoff) wait(n int) time.Duration {
	d := b.base
	for i := 1; i < n && d < b.limit; i++ {
		d *= 2
	}
	d = min(d, b.limit)
	return d/2 + rand.N(d/2+1)
}
