package decide

import (
	"encoding/binary"
	"time"

	"decisiongateway/shared/batch"
)

// pending is what a decision's reservation decided, saved while the host
// makes the upstream call (abi.Await.State) and read back by Resume, which
// may run on another instance. The request itself comes back whole; what
// validating it found follows this in the state (validate.AppendState), so
// Resume does not validate it again.
type pending struct {
	AccountID string
	Cost      int64
	Rate      batch.Rate
	Reserved  int64 // unix milliseconds of the reservation, or of the start of a speculative decision
	// Speculative: no reservation was made before the upstream call; the
	// decision is reserved and settled in one statement once it answers
	// (speculate.go).
	Speculative bool
	// Called is when the upstream call was handed to the host (unix
	// microseconds; 0 in a state saved before it was kept): what the call
	// took is measured from it (speculate.go).
	Called int64
}

// settleBy is how long settlement may keep retrying: three quarters of the
// request's time from the reservation, which leaves the rest to answer
// before the host's deadline stops the function.
func (p *pending) settleBy(timeout time.Duration) time.Time {
	return time.UnixMilli(p.Reserved).Add(timeout * 3 / 4)
}

// pendingVersion is the first byte of a saved state: a host upgraded while a
// call was in flight hands the state to a module that may not read it.
const pendingVersion = 4

// pendingVersion3 is the state before speculative decisions: the same
// without the flag, so a call in flight across an upgrade still settles.
const pendingVersion3 = 3

func (p *pending) append(b []byte) []byte {
	b = append(b, pendingVersion)
	b = appendString(b, p.AccountID)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.Cost))
	b = binary.LittleEndian.AppendUint64(b, uint64(p.Reserved))
	spec := byte(0)
	if p.Speculative {
		spec = 1
	}
	b = append(b, spec)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.Called))
	return batch.AppendRate(b, p.Rate)
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// decode reads a state written by append and returns the bytes after it;
// false when it is not one.
func (p *pending) decode(b []byte) ([]byte, bool) {
	if len(b) < 1 || (b[0] != pendingVersion && b[0] != pendingVersion3) {
		return nil, false
	}
	version := b[0]
	b = b[1:]
	var ok bool
	if p.AccountID, b, ok = readString(b); !ok {
		return nil, false
	}
	if len(b) < 16 {
		return nil, false
	}
	p.Cost = int64(binary.LittleEndian.Uint64(b))
	p.Reserved = int64(binary.LittleEndian.Uint64(b[8:]))
	b = b[16:]
	p.Speculative, p.Called = false, 0
	if version == pendingVersion {
		if len(b) < 9 || b[0] > 1 {
			return nil, false
		}
		p.Speculative, p.Called, b = b[0] == 1, int64(binary.LittleEndian.Uint64(b[1:])), b[9:]
	}
	p.Rate, b, ok = batch.ReadRate(b)
	return b, ok
}

func readString(b []byte) (string, []byte, bool) {
	if len(b) < 4 {
		return "", nil, false
	}
	n := binary.LittleEndian.Uint32(b)
	b = b[4:]
	if uint64(n) > uint64(len(b)) {
		return "", nil, false
	}
	return string(b[:n]), b[n:], true
}
