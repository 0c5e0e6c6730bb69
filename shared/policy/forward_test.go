package policy

import (
	"testing"

	"decisiongateway/shared/abi"
)

func TestForwardUpstreamKeepsOnlyAllowedHeaders(t *testing.T) {
	in := abi.Headers{
		{Name: "content-type", Value: "application/json"},
		{Name: "set-cookie", Value: "s=1"},
		{Name: "location", Value: "https://elsewhere"},
		{Name: "authorization", Value: "Bearer sk-op"},
		{Name: "www-authenticate", Value: "Bearer"},
		{Name: "retry-after", Value: "Wed, 21 Oct 2026 07:28:00 GMT"},
		{Name: "request-id", Value: "r3"},
		{Name: "x-request-id", Value: "r2"},
		{Name: "x-ratelimit-remaining", Value: "7"},
		{Name: "x-powered-by", Value: "vendor"},
	}
	out := ForwardUpstream(in, true)
	want := abi.Headers{
		{Name: "content-type", Value: "application/json"},
		{Name: "retry-after", Value: "Wed, 21 Oct 2026 07:28:00 GMT"},
		{Name: "x-upstream-request-id", Value: "r2"},
		{Name: "x-upstream-ratelimit-remaining", Value: "7"},
	}
	if len(out) != len(want) {
		t.Fatalf("got %v", out)
	}
	for i := range want {
		if out[i] != want[i] {
			t.Fatalf("got %v, want %v", out, want)
		}
	}
}

func TestUpstreamRequestIDPrecedence(t *testing.T) {
	out := ForwardUpstream(abi.Headers{{Name: "request-id", Value: "c"}, {Name: "x-vendor-request-id", Value: "a"}, {Name: "x-request-id", Value: "b"}}, false)
	if out.Get("x-upstream-request-id") != "a" || out.Get("x-vendor-request-id") != "a" || out.Has("content-type") {
		t.Fatalf("got %v", out)
	}
}

// An upstream that sends both spellings of a rate-limit header is forwarded
// the same value whatever the order its headers arrive in: the wazero host
// hands them over in wire order, the Workers runtime sorted by name.
func TestUpstreamRateLimitSpellingPrecedence(t *testing.T) {
	a := abi.Header{Name: "x-ratelimit-remaining", Value: "7"}
	b := abi.Header{Name: "ratelimit-remaining", Value: "9"}
	for _, in := range []abi.Headers{{a, b}, {b, a}} {
		out := ForwardUpstream(in, false)
		if got := out.Get("x-upstream-ratelimit-remaining"); got != "7" || len(out) != 1 {
			t.Fatalf("from %v got %v, want x-upstream-ratelimit-remaining 7 (x-ratelimit-* first)", in, out)
		}
	}
}

// A header the upstream repeats is forwarded as one value, its values
// joined by ", " (RFC 9110 §5.3) as the Workers runtime hands them over,
// so both hosts forward the same answer alike.
func TestRepeatedUpstreamHeadersAreJoined(t *testing.T) {
	in := abi.Headers{
		{Name: "x-vendor-request-id", Value: "v1"}, {Name: "x-ratelimit-limit", Value: "11"},
		{Name: "x-vendor-request-id", Value: "v2"}, {Name: "x-ratelimit-limit", Value: "12"},
	}
	out := ForwardUpstream(in, false)
	want := abi.Headers{
		{Name: "x-upstream-request-id", Value: "v1, v2"},
		{Name: "x-vendor-request-id", Value: "v1, v2"},
		{Name: "x-upstream-ratelimit-limit", Value: "11, 12"},
	}
	if len(out) != len(want) {
		t.Fatalf("got %v, want %v", out, want)
	}
	for i := range want {
		if out[i] != want[i] {
			t.Fatalf("got %v, want %v", out, want)
		}
	}
}
