package policy

import (
	"strconv"

	"decisiongateway/shared/abi"
)

// Rate-limit header names (spec §4.8), lower-case as on the ABI wire.
const (
	HRateLimit     = "x-ratelimit-limit"
	HRateRemaining = "x-ratelimit-remaining"
	HRateReset     = "x-ratelimit-reset"
)

// RetryAfter sets Retry-After to s whole seconds, at least 1: a window
// ending this second still asks the client to wait, never to retry at once.
func RetryAfter(resp *abi.Response, s int64) {
	if s < 1 {
		s = 1
	}
	resp.Headers.Set(HRetryAfter, strconv.FormatInt(s, 10))
}

// RateHeaders sets the X-RateLimit-* headers of an account's window:
// its limit, what is left of it, and when it resets (Unix seconds).
func RateHeaders(resp *abi.Response, limit, remaining, reset int64) {
	resp.Headers.Set(HRateLimit, strconv.FormatInt(limit, 10))
	resp.Headers.Set(HRateRemaining, strconv.FormatInt(remaining, 10))
	resp.Headers.Set(HRateReset, strconv.FormatInt(reset, 10))
}
