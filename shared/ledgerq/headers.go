package ledgerq

import (
	"strings"

	"decisiongateway/shared/abi"
)

// EncodeHeaders stores a retained header list as "name: value" lines (the
// internal replay envelope of spec §9.8; not a public format).
func EncodeHeaders(h abi.Headers) string {
	var b strings.Builder
	for _, f := range h {
		b.WriteString(f.Name)
		b.WriteString(": ")
		b.WriteString(f.Value)
		b.WriteByte('\n')
	}
	return b.String()
}

// DecodeHeaders reads what EncodeHeaders wrote.
func DecodeHeaders(s string) abi.Headers {
	var h abi.Headers
	for _, line := range strings.Split(s, "\n") {
		if name, value, ok := strings.Cut(line, ": "); ok {
			h = append(h, abi.Header{Name: name, Value: value})
		}
	}
	return h
}
