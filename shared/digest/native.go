//go:build !tinygo

package digest

import "crypto/sha256"

// SHA256 is the SHA-256 of p.
func SHA256(p []byte) [32]byte { return sha256.Sum256(p) }
