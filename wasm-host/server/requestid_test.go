package server

import (
	"regexp"
	"strconv"
	"testing"
	"time"
)

// Request ids are 32 lower-case hex digits whose first 12 are the
// milliseconds they were made at, so they sort by time (schema/ledger.md,
// "Request ids"); the other 20 are random.
func TestRequestIDsBeginWithTheirMillisecond(t *testing.T) {
	format := regexp.MustCompile(`^[0-9a-f]{32}$`)
	before := time.Now().UnixMilli()
	ids := make([]string, 50)
	for i := range ids {
		ids[i] = NewRequestID()
	}
	after := time.Now().UnixMilli()
	random := map[string]bool{}
	for _, id := range ids {
		if !format.MatchString(id) {
			t.Fatalf("%q is not 32 lower-case hex digits", id)
		}
		ms, err := strconv.ParseInt(id[:12], 16, 64)
		if err != nil || ms < before || ms > after {
			t.Errorf("%s: begins with %d, want a millisecond in [%d, %d]", id, ms, before, after)
		}
		random[id[12:]] = true
	}
	if len(random) != len(ids) {
		t.Errorf("the random part repeats: %d distinct of %d", len(random), len(ids))
	}
}
