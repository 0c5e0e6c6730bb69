package runtime

import "decisiongateway/wasm-host/cowmap"

// texts keeps one copy of each SQL text guests send in ledger batches. A
// route sends the same few statements for every request (a decision's
// reservation alone is about 1.2 KB of SQL), and decoding each batch used
// to copy them: 14% of the bytes the host allocated per small decision
// (`go tool pprof -sample_index=alloc_space`). Reads take no lock
// (cowmap); the table stops growing once it holds maxTexts (texts past
// that, or longer than maxTextLen, are copied as before), so a guest that
// builds SQL on the fly cannot grow it without bound.
type texts struct {
	m cowmap.Map[string, string]
}

const (
	maxTexts   = 512
	maxTextLen = 16 << 10
)

// get returns the text b spells, the kept copy when there is one.
func (t *texts) get(b []byte) string {
	if s, ok := t.m.Load()[string(b)]; ok {
		return s
	}
	if len(b) > maxTextLen {
		return string(b)
	}
	return t.m.Add(string(b), func(s string) string { return s }, maxTexts)
}
