package runtime

import (
	"encoding/binary"
	"sync"
	"time"

	"decisiongateway/shared/abi"
)

// memoStore is the `memo` import's store (schema/abi.md, "Memo"): hints a
// function keeps across its calls and instances on this host. Entries are
// scoped by function, live for the time the guest gives them, and the
// store is bounded: when it is full, expired entries go first, then any.
type memoStore struct {
	mu      sync.Mutex
	entries map[memoKey]*memoEntry
	max     int
	now     func() time.Time
}

type memoKey struct{ function, key string }

type memoEntry struct {
	value []byte
	count int64
	until time.Time
}

// Bounds of the store: entries, and the size of a key and of a value. A
// request beyond them is ignored (a Get finds nothing).
const (
	memoMaxEntries = 1 << 16
	memoMaxKey     = 256
	memoMaxValue   = 256
)

func newMemoStore() *memoStore {
	return &memoStore{entries: map[memoKey]*memoEntry{}, max: memoMaxEntries, now: time.Now}
}

// do runs one operation of function's and returns its result.
func (s *memoStore) do(function string, m *abi.MemoRequest, dst []byte) []byte {
	if len(m.Key) > memoMaxKey || len(m.Value) > memoMaxValue {
		return dst[:0]
	}
	k := memoKey{function, m.Key}
	now := s.now()
	ttl := time.Duration(m.TTLMillis) * time.Millisecond
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[k]
	if e != nil && !now.Before(e.until) {
		delete(s.entries, k)
		e = nil
	}
	switch m.Op {
	case abi.MemoGet:
		if e == nil {
			return dst[:0]
		}
		return append(dst[:0], e.value...)
	case abi.MemoPut:
		if len(m.Value) == 0 {
			return dst[:0]
		}
		if e == nil {
			e = s.insert(k, now)
		}
		e.value, e.count, e.until = append(e.value[:0], m.Value...), 0, now.Add(ttl)
		return dst[:0]
	case abi.MemoAdd:
		if e == nil {
			e = s.insert(k, now)
		}
		e.count += m.Delta
		e.value, e.until = binary.LittleEndian.AppendUint64(e.value[:0], uint64(e.count)), now.Add(ttl)
		return append(dst[:0], e.value...)
	}
	return dst[:0]
}

// insert makes room for and adds an entry for k.
func (s *memoStore) insert(k memoKey, now time.Time) *memoEntry {
	if len(s.entries) >= s.max {
		for key, e := range s.entries {
			if !now.Before(e.until) {
				delete(s.entries, key)
			}
		}
		for key := range s.entries {
			if len(s.entries) < s.max {
				break
			}
			delete(s.entries, key)
		}
	}
	e := &memoEntry{}
	s.entries[k] = e
	return e
}
