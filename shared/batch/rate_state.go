package batch

import "encoding/binary"

// AppendRate saves a Rate in a function's await state (abi.Await.State), so
// the answer given after the upstream call carries the rate headers of the
// count taken before it.
func AppendRate(b []byte, r Rate) []byte {
	for _, v := range [...]int64{r.Limit, r.Count, r.Window.Start, r.Window.End} {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// ReadRate reads what AppendRate wrote at the start of b and returns the
// rest; false when b is too short.
func ReadRate(b []byte) (Rate, []byte, bool) {
	if len(b) < 32 {
		return Rate{}, nil, false
	}
	v := func(i int) int64 { return int64(binary.LittleEndian.Uint64(b[8*i:])) }
	return Rate{Limit: v(0), Count: v(1), Window: Window{Start: v(2), End: v(3)}}, b[32:], true
}
