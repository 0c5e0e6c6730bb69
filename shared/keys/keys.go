// Package keys makes and checks the platform's bearer secrets: API keys,
// session tokens and sign-in links. Every secret has the same shape:
//
//	<kind>_<account>_<random><check>
//	dgk_     12 base32   32 base32 (160 bits)   6 base32 (CRC-32)
//
// The kind prefix makes a leaked key easy to scan for; the checksum lets a
// function reject a mistyped or made-up key without a ledger read; the
// account id lets a host route by account (canary stickiness) before
// authentication. Only SHA-256 hashes of secrets are ever stored.
package keys

import (
	"crypto/rand"
	"encoding/hex"
	"hash/crc32"
	"net/netip"
	"strings"

	"decisiongateway/shared/digest"
)

// Kinds of secret, as their prefixes.
const (
	APIKey  = "dgk_"
	Session = "dgs_"
	SignIn  = "dgl_"
)

// SessionCookie is the name of the browser session cookie.
const SessionCookie = "dg_session"

const (
	alphabet   = "abcdefghijklmnopqrstuvwxyz234567"
	accountLen = 12
	randomLen  = 32
	checkLen   = 6
	// Len is the length of every secret.
	Len = 4 + accountLen + 1 + randomLen + checkLen
)

// Format is the shape of every secret as data, for the Workers shim's copy
// of AccountHint (wrangler-compat/src/sticky.js, generated from it).
var Format = struct {
	Alphabet      string `json:"alphabet"`
	AccountLen    int    `json:"accountLen"`
	RandomLen     int    `json:"randomLen"`
	CheckLen      int    `json:"checkLen"`
	APIKey        string `json:"apiKey"`
	Session       string `json:"session"`
	SignIn        string `json:"signIn"`
	SessionCookie string `json:"sessionCookie"`
}{alphabet, accountLen, randomLen, checkLen, APIKey, Session, SignIn, SessionCookie}

func randomChars(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("keys: no randomness: " + err.Error())
	}
	for i := range b {
		b[i] = alphabet[b[i]&31]
	}
	return string(b)
}

// NewAccountID returns a fresh account id (12 base32 characters, 60 bits).
func NewAccountID() string { return randomChars(accountLen) }

// NewID returns a fresh opaque id for a row, e.g. "key_…".
func NewID(prefix string) string { return prefix + randomChars(16) }

// The checksum's table is built while the module initialises, not on first
// use: a module's heap is put back to init's state after every call
// (schema/abi.md, "The arena"), so a table built lazily would be built again
// by every call that checks a key.
var _ = crc32.ChecksumIEEE(nil)

func check(s string) string {
	c := crc32.ChecksumIEEE([]byte(s)) >> 2
	var b [checkLen]byte
	for i := checkLen - 1; i >= 0; i-- {
		b[i] = alphabet[c&31]
		c >>= 5
	}
	return string(b[:])
}

// New returns a fresh secret of kind for account.
func New(kind, account string) string {
	body := kind + account + "_" + randomChars(randomLen)
	return body + check(body)
}

func valid(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= '2' && c <= '7') }

// Parse checks a secret's shape and checksum and returns its account id.
// It proves nothing about the secret being issued: only a ledger lookup of
// its hash does.
func Parse(kind, secret string) (account string, ok bool) {
	if len(secret) != Len || !strings.HasPrefix(secret, kind) || secret[4+accountLen] != '_' {
		return "", false
	}
	for i := 4; i < Len; i++ {
		if i != 4+accountLen && !valid(secret[i]) {
			return "", false
		}
	}
	if check(secret[:Len-checkLen]) != secret[Len-checkLen:] {
		return "", false
	}
	return secret[4 : 4+accountLen], true
}

// Hash is the stored form of a secret: lower-case hex SHA-256.
func Hash(secret string) string {
	sum := digest.SHA256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// DisplayPrefix is the part of an API key that listings show: kind, account
// and the first four random characters.
func DisplayPrefix(secret string) string {
	if len(secret) < 4+accountLen+1+4 {
		return ""
	}
	return secret[:4+accountLen+1+4]
}

// Bearer extracts the token of an "Authorization: Bearer <token>" value.
func Bearer(authorization string) (string, bool) {
	const p = "bearer "
	if len(authorization) <= len(p) || !strings.EqualFold(authorization[:len(p)], p) {
		return "", false
	}
	return strings.TrimSpace(authorization[len(p):]), true
}

// Cookie returns the value of the named cookie in a Cookie header.
func Cookie(header, name string) string {
	for _, part := range strings.Split(header, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && k == name {
			return v
		}
	}
	return ""
}

// AccountHint returns the account a request claims to be, from its API key
// or session cookie, without any ledger read. Hosts use it only to route
// (canary stickiness); it authenticates nothing.
func AccountHint(authorization, cookie string) string {
	if tok, ok := Bearer(authorization); ok {
		if a, ok := Parse(APIKey, tok); ok {
			return a
		}
	}
	if a, ok := Parse(Session, Cookie(cookie, SessionCookie)); ok {
		return a
	}
	return ""
}

// HashClient is the stored identity of a client address, the scope of every
// per-address counter (API authentication, sign-in): the ledger never holds
// an address in the clear, and one hash keeps the counters comparable.
//
// An IPv6 client is its /64, the block one subscriber or host is given:
// counted per address, a client could rotate through 2^64 of them and no
// per-address limit would bind. An IPv4-mapped address counts as IPv4.
func HashClient(ip string) string {
	if a, err := netip.ParseAddr(ip); err == nil {
		if a = a.Unmap(); a.Is6() {
			p, _ := a.WithZone("").Prefix(64)
			ip = p.String()
		} else {
			ip = a.String()
		}
	}
	sum := digest.SHA256([]byte("decision-gateway/ip/" + ip))
	return hex.EncodeToString(sum[:16])
}
