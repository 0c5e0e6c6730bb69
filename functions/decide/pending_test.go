package decide

import (
	"encoding/binary"
	"testing"

	"decisiongateway/shared/batch"
)

func TestPendingStateRoundTrips(t *testing.T) {
	for _, p := range []pending{
		{AccountID: "acct_1", Cost: 3, Rate: batch.Rate{Limit: 60, Count: 7, Window: batch.Window{Start: 60, End: 120}}, Reserved: 1700000000123, Called: 1700000000123456},
		{AccountID: "acct_2", Cost: 1, Rate: batch.Rate{Limit: 60}, Reserved: 5, Speculative: true, Called: 9},
	} {
		b := append(p.append(nil), "rest"...)
		var got pending
		rest, ok := got.decode(b)
		if !ok || got != p || string(rest) != "rest" {
			t.Fatalf("%+v -> %+v %q %v", p, got, rest, ok)
		}
	}
}

// A state saved by a module before speculative decisions (version 3, in
// flight across an upgrade) is read as a reservation's.
func TestPendingStateOfVersion3(t *testing.T) {
	want := pending{AccountID: "acct_1", Cost: 2, Rate: batch.Rate{Limit: 60, Count: 1}, Reserved: 42}
	b := []byte{pendingVersion3}
	b = appendString(b, want.AccountID)
	b = binary.LittleEndian.AppendUint64(b, uint64(want.Cost))
	b = binary.LittleEndian.AppendUint64(b, uint64(want.Reserved))
	b = batch.AppendRate(b, want.Rate)
	var got pending
	if _, ok := got.decode(b); !ok || got != want {
		t.Fatalf("%+v, want %+v", got, want)
	}
	b[0] = 9
	if _, ok := got.decode(b); ok {
		t.Fatal("an unknown version decoded")
	}
}
