package ledgerq_test

import (
	"slices"
	"strings"
	"testing"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/ledgerq"
)

// previousDecode is how the build before versioned envelopes read a
// record's headers (format 1): every "name: value" line, others skipped.
// It stands for the stable version of a canary that shares the ledger.
func previousDecode(s string) abi.Headers {
	var h abi.Headers
	for _, line := range strings.Split(s, "\n") {
		if name, value, ok := strings.Cut(line, ": "); ok {
			h = append(h, abi.Header{Name: name, Value: value})
		}
	}
	return h
}

// TestBothBuildsReadEachOthersEnvelopes: the previous build reads this
// build's records with the same headers (the version line is invisible to
// it), and this build reads the previous build's records, knowing them for
// format 1.
func TestBothBuildsReadEachOthersEnvelopes(t *testing.T) {
	h := abi.Headers{{Name: "content-type", Value: "application/json"}, {Name: "x-upstream-request-id", Value: "vrid: 7"}}
	current := ledgerq.EncodeHeaders(h)
	if ledgerq.EnvelopeFormatOf(current) != ledgerq.EnvelopeFormat {
		t.Fatalf("format of %q = %d", current, ledgerq.EnvelopeFormatOf(current))
	}
	if got := previousDecode(current); !slices.Equal(got, h) {
		t.Fatalf("the previous build reads %v from this build's record, want %v", got, h)
	}
	previous := "content-type: application/json\nx-upstream-request-id: vrid: 7\n"
	if got := ledgerq.DecodeHeaders(previous); !slices.Equal(got, h) || ledgerq.EnvelopeFormatOf(previous) != 1 {
		t.Fatalf("this build reads %v (format %d) from the previous build's record", got, ledgerq.EnvelopeFormatOf(previous))
	}
	if ledgerq.EnvelopeFormatOf("") != 1 {
		t.Fatal("an empty envelope is not format 1")
	}
}
