package runtime

import (
	"maps"
	"sync"
	"sync/atomic"
)

// texts keeps one copy of each SQL text guests send in ledger batches. A
// route sends the same few statements for every request (a decision's
// reservation alone is about 1.2 KB of SQL), and decoding each batch used
// to copy them: 14% of the bytes the host allocated per small decision
// (`go tool pprof -sample_index=alloc_space`). Reads take no lock: the
// table is a map replaced whole when a text is added, which stops once it
// holds maxTexts (texts past that, or longer than maxTextLen, are copied
// as before), so a guest that builds SQL on the fly cannot grow it without
// bound.
type texts struct {
	m  atomic.Pointer[map[string]string]
	mu sync.Mutex // serializes additions
}

const (
	maxTexts   = 512
	maxTextLen = 16 << 10
)

// get returns the text b spells, the kept copy when there is one.
func (t *texts) get(b []byte) string {
	if m := t.m.Load(); m != nil {
		if s, ok := (*m)[string(b)]; ok {
			return s
		}
	}
	s := string(b)
	if len(b) > maxTextLen {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.m.Load()
	if old != nil {
		if kept, ok := (*old)[s]; ok {
			return kept
		}
		if len(*old) >= maxTexts {
			return s
		}
	}
	next := map[string]string{s: s}
	if old != nil {
		maps.Copy(next, *old)
	}
	t.m.Store(&next)
	return s
}
