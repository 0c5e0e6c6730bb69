package policy

import "decisiongateway/shared/abi"

// Upstream tracking headers, in the precedence X-Upstream-Request-Id uses
// (spec §4.8).
var trackingPrecedence = []string{"x-vendor-request-id", "x-request-id", "request-id"}

// upstreamRateLimit renames the upstream's rate-limit headers into their own
// namespace, so a client never confuses them with the platform's. When an
// upstream sends both spellings of one, the x-ratelimit-* one is kept: a
// fixed precedence, since the order headers reach a function differs by
// host (wire order on the wazero host, sorted by name on Workers).
var upstreamRateLimit = [...]struct{ from, to string }{
	{"x-ratelimit-limit", "x-upstream-ratelimit-limit"},
	{"x-ratelimit-remaining", "x-upstream-ratelimit-remaining"},
	{"x-ratelimit-reset", "x-upstream-ratelimit-reset"},
	{"ratelimit-limit", "x-upstream-ratelimit-limit"},
	{"ratelimit-remaining", "x-upstream-ratelimit-remaining"},
	{"ratelimit-reset", "x-upstream-ratelimit-reset"},
}

// ForwardUpstream returns the only upstream headers a client may see (spec
// §4.8): Content-Type (when keepContentType), Retry-After exactly as sent,
// the tracking ids (X-Upstream-Request-Id by precedence, X-Vendor-Request-Id
// as sent) and the upstream rate-limit values renamed to
// X-Upstream-RateLimit-*. Everything else — cookies, redirects, auth and any
// other header — is dropped. Callers must not add upstream headers by any
// other path. A header the upstream repeated is forwarded as one value
// (joined).
func ForwardUpstream(h abi.Headers, keepContentType bool) abi.Headers {
	var out abi.Headers
	if keepContentType {
		if v := h.Joined("content-type"); v != "" {
			out = append(out, abi.Header{Name: HContentType, Value: v})
		}
	}
	if v := h.Joined("retry-after"); v != "" {
		out = append(out, abi.Header{Name: HRetryAfter, Value: v})
	}
	for _, name := range trackingPrecedence {
		if v := h.Joined(name); v != "" {
			out = append(out, abi.Header{Name: "x-upstream-request-id", Value: v})
			break
		}
	}
	if v := h.Joined("x-vendor-request-id"); v != "" {
		out = append(out, abi.Header{Name: "x-vendor-request-id", Value: v})
	}
	for _, r := range upstreamRateLimit {
		if v := h.Joined(r.from); v != "" && !out.Has(r.to) {
			out = append(out, abi.Header{Name: r.to, Value: v})
		}
	}
	return out
}
