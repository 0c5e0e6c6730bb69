package digest

import (
	"encoding/hex"
	"testing"
)

// The native build is crypto/sha256; the module build's answer comes from
// the hosts, whose imports are tested against the same vectors
// (wasm-host/runtime, wrangler-compat).
func TestKnownDigests(t *testing.T) {
	for in, want := range map[string]string{
		"":    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"abc": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	} {
		sum := SHA256([]byte(in))
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("SHA256(%q) = %s, want %s", in, got, want)
		}
	}
}
