// Package keystest makes platform secrets that fail in one known way, for
// tests. Replacing a key's last character with a fixed one is not such a
// secret: one key in 32 already ends with that character, stays valid,
// and the test fails at random.
package keystest

// BadChecksum returns secret with the last character of its checksum
// changed to another character of the alphabet: still the right shape, so
// it is refused for its checksum alone, and refused always, since the
// checksum is a function of the rest of the secret.
func BadChecksum(secret string) string {
	if secret == "" {
		return secret
	}
	last := secret[len(secret)-1]
	other := byte('a')
	if last == 'a' {
		other = 'b'
	}
	return secret[:len(secret)-1] + string(other)
}
