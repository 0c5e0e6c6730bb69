package ledgerq

import (
	"strconv"
	"strings"

	"decisiongateway/shared/abi"
)

// The internal replay envelope of spec §9.8 (not a public format): the
// headers column of an idempotency record holds the retained headers as
// "name: value" lines. Format 1, written before envelopes were versioned,
// is just those lines. Format 2 opens with the line "#envelope 2", which
// carries the format's version and which a format-1 reader skips (it has
// no ": "), so during a canary or a rolling upgrade both builds read each
// other's records.
//
// A record in an earlier format than this build's replays in mode
// legacy-cache (spec §3.1, §4.8): it was retained by another build, whose
// answer this one cannot vouch for byte for byte. It keeps its original
// expiry and is never rewritten: a replay only reads.
const (
	// EnvelopeFormat is the format this build writes.
	EnvelopeFormat = 2
	// ModeLegacyCache is the X-Service-Response-Mode of a replay of a
	// record in an earlier format.
	ModeLegacyCache = "legacy-cache"
	envelopeMark    = "#envelope "
)

// EncodeHeaders stores a retained header list in the current envelope.
func EncodeHeaders(h abi.Headers) string {
	var b strings.Builder
	b.WriteString(envelopeMark + strconv.Itoa(EnvelopeFormat) + "\n")
	for _, f := range h {
		b.WriteString(f.Name)
		b.WriteString(": ")
		b.WriteString(f.Value)
		b.WriteByte('\n')
	}
	return b.String()
}

// DecodeHeaders reads the headers of an envelope of any format.
func DecodeHeaders(s string) abi.Headers {
	var h abi.Headers
	for _, line := range strings.Split(s, "\n") {
		if name, value, ok := strings.Cut(line, ": "); ok {
			h = append(h, abi.Header{Name: name, Value: value})
		}
	}
	return h
}

// EnvelopeFormatOf returns the format an envelope was written in: 1 when
// it carries no version.
func EnvelopeFormatOf(s string) int {
	first, _, _ := strings.Cut(s, "\n")
	if v, ok := strings.CutPrefix(first, envelopeMark); ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return 1
}
