package keystest

import (
	"strings"
	"testing"

	"decisiongateway/shared/keys"
)

// Every secret, whatever its last character, becomes one that Parse refuses
// and that differs from it in the last character only.
func TestBadChecksumIsAlwaysRefused(t *testing.T) {
	acct := keys.NewAccountID()
	for _, kind := range []string{keys.APIKey, keys.Session, keys.SignIn} {
		for i := 0; i < 2000; i++ {
			k := keys.New(kind, acct)
			bad := BadChecksum(k)
			if _, ok := keys.Parse(kind, bad); ok || len(bad) != len(k) || !strings.HasPrefix(bad, k[:len(k)-1]) || bad == k {
				t.Fatalf("BadChecksum(%q) = %q", k, bad)
			}
		}
	}
	// The two cases that matter: a key ending in the replacement character.
	for _, k := range []string{"dgk_aaaaaaaaaaaa_" + strings.Repeat("a", 38), "dgk_aaaaaaaaaaaa_" + strings.Repeat("b", 38)} {
		if BadChecksum(k) == k {
			t.Errorf("BadChecksum(%q) unchanged", k)
		}
	}
}
