package server

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientAddr decides which address a request came from: the address every
// per-address counter (API authentication, sign-in) and the canary's
// anonymous stickiness are keyed by.
//
// With no trusted proxies it is the connection's peer, and forwarded headers
// are ignored: anyone can send them. Behind a reverse proxy or load balancer
// every connection comes from the proxy, so the operator names the proxies
// (GATEWAY_TRUSTED_PROXIES) and the one header they maintain
// (GATEWAY_FORWARDED_HEADER). Only that header is read, because a proxy that
// maintains X-Forwarded-For passes a client's own Forwarded header through
// untouched, and the other way round.
//
// A proxy appends the address it received the request from to the right of
// the header, so the header is read from the right: each entry is believed
// only while the hop that wrote it (the peer, then each trusted entry in
// turn) is a trusted proxy. The client is the rightmost address that is not
// a trusted proxy; what a client wrote further left is never reached. If
// every entry is trusted, the leftmost is the client. An entry that is not
// an address (Forwarded's "unknown" or an obfuscated "_name", or garbage)
// stops the walk at the last hop that could be verified.
type ClientAddr struct {
	Trusted []netip.Prefix
	Header  string // "X-Forwarded-For" (default) or "Forwarded"
}

// Of returns the client address of r, without a port.
func (c ClientAddr) Of(r *http.Request) string {
	peer := peerAddr(r.RemoteAddr)
	if len(c.Trusted) == 0 {
		return peer
	}
	hop, err := netip.ParseAddr(peer)
	if err != nil || !c.trusted(hop) {
		return peer
	}
	var chain []string
	if strings.EqualFold(c.Header, "Forwarded") {
		chain = forwardedFor(r.Header.Values("Forwarded"))
	} else {
		chain = listValues(r.Header.Values("X-Forwarded-For"))
	}
	for i := len(chain) - 1; i >= 0; i-- {
		a, ok := parseHop(chain[i])
		if !ok {
			break
		}
		hop = a
		if !c.trusted(hop) {
			break
		}
	}
	return hop.String()
}

func (c ClientAddr) trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range c.Trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr is the connection's remote address without its port.
func peerAddr(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return remote
	}
	return host
}

// listValues splits comma-separated header lines into trimmed entries, in
// order: several header lines are one list (RFC 9110, section 5.3).
func listValues(lines []string) []string {
	var out []string
	for _, line := range lines {
		for _, v := range strings.Split(line, ",") {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

// forwardedFor returns the for= parameter of each element of Forwarded
// header lines (RFC 7239), in order; an element without one yields "".
// Quoted strings are unquoted; commas and semicolons inside them are not
// separators.
func forwardedFor(lines []string) []string {
	var out []string
	for _, line := range lines {
		for _, element := range splitQuoted(line, ',') {
			value := ""
			for _, pair := range splitQuoted(element, ';') {
				name, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if ok && strings.EqualFold(strings.TrimSpace(name), "for") {
					value = strings.TrimSpace(v)
				}
			}
			if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
				value = strings.ReplaceAll(value[1:len(value)-1], `\`, "")
			}
			out = append(out, value)
		}
	}
	return out
}

// splitQuoted splits s at sep outside double-quoted strings.
func splitQuoted(s string, sep byte) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && quoted:
			i++
		case s[i] == '"':
			quoted = !quoted
		case s[i] == sep && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// parseHop reads one forwarded address: 192.0.2.1, 192.0.2.1:4711,
// 2001:db8::1, [2001:db8::1] or [2001:db8::1]:4711.
func parseHop(v string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(v); err == nil && a.Zone() == "" {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(v); err == nil && ap.Addr().Zone() == "" {
		return ap.Addr().Unmap(), true
	}
	if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
		if a, err := netip.ParseAddr(v[1 : len(v)-1]); err == nil && a.Zone() == "" {
			return a.Unmap(), true
		}
	}
	return netip.Addr{}, false
}
