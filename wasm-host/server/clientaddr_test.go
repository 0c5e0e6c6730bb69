package server

import (
	"net/http"
	"net/netip"
	"testing"
)

func TestClientAddrBelievesOnlyTrustedHops(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("fd00::/8")}
	xff := ClientAddr{Trusted: trusted}
	fwd := ClientAddr{Trusted: trusted, Header: "Forwarded"}
	cases := []struct {
		name   string
		c      ClientAddr
		peer   string
		header http.Header
		want   string
	}{
		{"no setting: headers ignored", ClientAddr{}, "127.0.0.1:5000", http.Header{"X-Forwarded-For": {"203.0.113.7"}, "Forwarded": {"for=203.0.113.7"}}, "127.0.0.1"},
		{"untrusted peer: headers ignored", xff, "192.0.2.1:5000", http.Header{"X-Forwarded-For": {"203.0.113.7"}}, "192.0.2.1"},
		{"trusted peer, no header", xff, "127.0.0.1:5000", nil, "127.0.0.1"},
		{"one proxy", xff, "127.0.0.1:5000", http.Header{"X-Forwarded-For": {"203.0.113.7"}}, "203.0.113.7"},
		{"two proxies", xff, "127.0.0.1:5000", http.Header{"X-Forwarded-For": {"203.0.113.7, 10.1.2.3"}}, "203.0.113.7"},
		{"forged entries on the left are never reached", xff, "127.0.0.1:5000", http.Header{"X-Forwarded-For": {"1.2.3.4, 10.9.9.9, 203.0.113.7, 10.1.2.3"}}, "203.0.113.7"},
		{"several header lines are one list", xff, "127.0.0.1:5000", http.Header{"X-Forwarded-For": {"1.2.3.4", "203.0.113.7", "10.1.2.3"}}, "203.0.113.7"},
		{"every hop trusted: the leftmost", xff, "127.0.0.1:5000", http.Header{"X-Forwarded-For": {"10.0.0.5, 10.1.2.3"}}, "10.0.0.5"},
		{"garbage stops at the last verified hop", xff, "127.0.0.1:5000", http.Header{"X-Forwarded-For": {"203.0.113.7, not-an-ip"}}, "127.0.0.1"},
		{"ports and IPv6", xff, "[fd00::1]:5000", http.Header{"X-Forwarded-For": {"[2001:db8::7]:4711, 10.1.2.3:80"}}, "2001:db8::7"},
		{"the other header is not read", xff, "127.0.0.1:5000", http.Header{"Forwarded": {"for=203.0.113.7"}}, "127.0.0.1"},
		{"Forwarded", fwd, "127.0.0.1:5000", http.Header{"Forwarded": {`for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711"`}}, "2001:db8:cafe::17"},
		{"Forwarded through two proxies", fwd, "127.0.0.1:5000", http.Header{"Forwarded": {`for=1.2.3.4`, `for=203.0.113.7;proto=https, for=10.1.2.3`}}, "203.0.113.7"},
		{"Forwarded obfuscated", fwd, "127.0.0.1:5000", http.Header{"Forwarded": {`for=203.0.113.7, for=_proxy1`}}, "127.0.0.1"},
		{"Forwarded ignores X-Forwarded-For", fwd, "127.0.0.1:5000", http.Header{"X-Forwarded-For": {"203.0.113.7"}}, "127.0.0.1"},
		{"quoted separators", fwd, "127.0.0.1:5000", http.Header{"Forwarded": {`proto="a,b;c";for=203.0.113.9`}}, "203.0.113.9"},
	}
	for _, c := range cases {
		r := &http.Request{RemoteAddr: c.peer, Header: c.header}
		if got := c.c.Of(r); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
