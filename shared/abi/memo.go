package abi

// Memo messages (the `memo` import, schema/abi.md "Memo"): a small store
// of hints the host keeps for a function across calls and instances, which
// a module's own memory cannot do (every call starts from init's state).
// Nothing in it is the record: an entry may be gone at any time.

// Memo operations.
const (
	MemoGet uint8 = 1 // the entry's value; an empty result when there is none
	MemoPut uint8 = 2 // set the value (non-empty) for TTLMillis; an empty result
	MemoAdd uint8 = 3 // add Delta to the entry's counter (0 when absent), keep it for TTLMillis; the new counter as 8 bytes
)

// MemoRequest is one memo operation.
type MemoRequest struct {
	Op        uint8
	TTLMillis uint32
	Key       string
	Value     []byte // MemoPut
	Delta     int64  // MemoAdd
}

// AppendMemoRequest encodes m.
func AppendMemoRequest(dst []byte, m *MemoRequest) []byte {
	w := writer{dst}
	w.u8(m.Op)
	w.u32(m.TTLMillis)
	w.str(m.Key)
	switch m.Op {
	case MemoPut:
		w.bytes(m.Value)
	case MemoAdd:
		w.u64(uint64(m.Delta))
	}
	return w.b
}

// DecodeMemoRequest decodes a MemoRequest.
func DecodeMemoRequest(b []byte) (MemoRequest, error) {
	r := reader{b: b}
	m := MemoRequest{Op: r.u8(), TTLMillis: r.u32()}
	m.Key = r.str()
	switch m.Op {
	case MemoGet:
	case MemoPut:
		m.Value = r.bytes()
	case MemoAdd:
		m.Delta = int64(r.u64())
	default:
		if r.err == nil {
			r.err = errUnknownCall
		}
	}
	return m, r.done()
}
