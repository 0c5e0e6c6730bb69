package canary

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/keys"
)

// Buckets is the number of buckets callers are hashed into. A share is a
// whole number of buckets, so percentages have two decimals (basis points),
// and with this many buckets 10% of a thousand accounts lands near 10%
// rather than on whatever a coarse grid rounds it to.
const Buckets = 10000

// Header names, lower-case as on the ABI wire.
const (
	// HeaderPin lets a caller choose the version for one request, for smoke
	// tests: "stable", "canary", a version label (decide@0123456789ab) or
	// its 12-digit short hash. A value naming no version of the current
	// release is ignored and the request is assigned as usual, as Cloudflare
	// ignores a version override naming a version outside the deployment.
	HeaderPin = "x-gateway-version"
	// HeaderVersion names, on every response of a released function, the
	// module version that served it.
	HeaderVersion = "x-function-version"
)

// StickyKey is what assignment hashes for a request: the account it claims
// (from its API key or session cookie, without a ledger read), or, for an
// anonymous caller, its client address. The account comes first so that a
// caller keeps its version across networks and devices; the key is never
// trusted for anything but routing.
func StickyKey(req *abi.Request) string {
	var cookies []string
	for _, h := range req.Headers {
		if h.Name == "cookie" {
			cookies = append(cookies, h.Value)
		}
	}
	if acct := keys.AccountHint(req.Headers.Get("authorization"), strings.Join(cookies, "; ")); acct != "" {
		return "account:" + acct
	}
	return "addr:" + req.ClientAddr
}

// Bucket maps a sticky key to a bucket in [0, Buckets) for one function.
// The hash is SHA-256, stable across hosts, restarts and Go versions, so
// every host of a fleet puts a caller in the same bucket. The function name
// is part of the input so that the callers who try one function's canary
// are not always the same ones who try every other function's.
//
// A caller is on the canary when its bucket is below the canary's share in
// basis points; raising the share therefore only ever moves callers from
// stable to canary, never back.
func Bucket(function, key string) int {
	sum := sha256.Sum256([]byte(function + "\x00" + key))
	return int(binary.BigEndian.Uint64(sum[:8]) % Buckets)
}

// ParsePercent reads a share such as "10", "0.5" or "12.25%" as basis
// points (hundredths of a percent), refusing anything outside 0–100 or
// finer than a basis point.
func ParsePercent(s string) (int, bool) {
	s = strings.TrimSuffix(strings.TrimSpace(s), "%")
	whole, frac, _ := strings.Cut(s, ".")
	if len(whole) == 0 || len(whole) > 3 || len(frac) > 2 {
		return 0, false
	}
	digits := whole + (frac + "00")[:2]
	bp := 0
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		bp = bp*10 + int(c-'0')
	}
	return bp, bp <= 100*100
}

// FormatPercent prints basis points as a percentage with two decimals.
func FormatPercent(bp int) string { return fmt.Sprintf("%d.%02d%%", bp/100, bp%100) }
