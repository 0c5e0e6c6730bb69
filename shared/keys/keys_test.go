package keys

import (
	"strings"
	"testing"
)

func TestNewKeyParsesBackToItsAccount(t *testing.T) {
	acct := NewAccountID()
	k := New(APIKey, acct)
	if len(k) != Len || !strings.HasPrefix(k, "dgk_"+acct+"_") {
		t.Fatalf("key %q", k)
	}
	if got, ok := Parse(APIKey, k); !ok || got != acct {
		t.Fatalf("Parse = %q %v", got, ok)
	}
	if _, ok := Parse(Session, k); ok {
		t.Fatal("an API key parsed as a session token")
	}
}

func TestMalformedKeysAreRejectedWithoutLookup(t *testing.T) {
	k := New(APIKey, NewAccountID())
	flip := []byte(k)
	flip[20] = map[bool]byte{true: 'b', false: 'a'}[flip[20] == 'a'] // one changed character
	for _, bad := range []string{"", "dgk_", k[:Len-1], k + "a", strings.ToUpper(k), string(flip), "dgk_" + strings.Repeat("a", Len-4)} {
		if _, ok := Parse(APIKey, bad); ok {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestHashIsStableAndHidesSecret(t *testing.T) {
	k := New(APIKey, NewAccountID())
	if Hash(k) != Hash(k) || len(Hash(k)) != 64 || strings.Contains(Hash(k), k[17:]) {
		t.Fatal("hash")
	}
	if Hash(k) == Hash(New(APIKey, NewAccountID())) {
		t.Fatal("two keys share a hash")
	}
}

func TestAccountHintFromBearerOrCookie(t *testing.T) {
	acct := NewAccountID()
	if got := AccountHint("Bearer "+New(APIKey, acct), ""); got != acct {
		t.Errorf("bearer hint %q", got)
	}
	if got := AccountHint("", "a=b; "+SessionCookie+"="+New(Session, acct)+"; c=d"); got != acct {
		t.Errorf("cookie hint %q", got)
	}
	if got := AccountHint("Bearer nonsense", "x=y"); got != "" {
		t.Errorf("hint from garbage %q", got)
	}
}

func TestDisplayPrefixShowsNoSecretPart(t *testing.T) {
	k := New(APIKey, "abcdefghijkl")
	p := DisplayPrefix(k)
	if !strings.HasPrefix(k, p) || len(p) != 21 {
		t.Fatalf("prefix %q", p)
	}
}

// A client is counted by its IPv4 address or its IPv6 /64: rotating through
// the addresses of one /64 does not escape a per-client limit.
func TestHashClientCountsAnIPv6ClientByItsSlash64(t *testing.T) {
	same := [][2]string{
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff"},
		{"2001:db8:1:2::1", "2001:0db8:0001:0002:0000:0000:0000:0009"},
		{"2001:db8:1:2::1%eth0", "2001:db8:1:2::7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
	}
	for _, p := range same {
		if HashClient(p[0]) != HashClient(p[1]) {
			t.Errorf("%s and %s counted apart", p[0], p[1])
		}
	}
	differ := [][2]string{
		{"2001:db8:1:2::1", "2001:db8:1:3::1"},
		{"192.0.2.7", "192.0.2.8"},
		{"192.0.2.7", ""},
	}
	for _, p := range differ {
		if HashClient(p[0]) == HashClient(p[1]) {
			t.Errorf("%s and %s counted as one client", p[0], p[1])
		}
	}
}
