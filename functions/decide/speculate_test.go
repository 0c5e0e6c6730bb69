package decide

import (
	"encoding/binary"
	"testing"
	"time"

	"decisiongateway/shared/batch"
	"decisiongateway/shared/ledgerq"
	"decisiongateway/shared/platform"
	"decisiongateway/shared/settings"
)

// mapMemo keeps entries as the hosts' memos do, for the rule alone; TTLs
// are not needed here (every test runs within one of them).
type mapMemo map[string][]byte

func (m mapMemo) Get(key string) []byte { return m[key] }

func (m mapMemo) Put(key string, value []byte, _ time.Duration) { m[key] = value }

func (m mapMemo) Add(key string, delta int64, _ time.Duration) int64 {
	var n int64
	if b := m[key]; len(b) == 8 {
		n = int64(binary.LittleEndian.Uint64(b))
	}
	n += delta
	m[key] = binary.LittleEndian.AppendUint64(nil, uint64(n))
	return n
}

// speculating starts calls decisions of one key at now against a memo that
// measured the ledger's round trip at ledger and the upstream's at called,
// and counts those that speculate.
func speculating(t *testing.T, calls int, ledger, called time.Duration, now time.Time) (int, mapMemo) {
	t.Helper()
	memo := mapMemo{}
	env := &platform.Env{Memo: memo}
	measure(env, ledger, called)
	d := &decision{settings: settings.Settings{RateLimit: 1 << 20, AuthRateLimit: 1 << 20, RequestTimeout: time.Minute}}
	remember(env, "key", &ledgerq.Reservation{Outcome: ledgerq.Reserved, Balance: 1 << 30})
	// The hint is for now's window.
	h, _ := readHint(memo.Get(hintKey("key")))
	h.window = batch.WindowAt(now, time.Minute).Start
	memo.Put(hintKey("key"), h.encode(), hintTTL)
	n := 0
	for range calls {
		if speculate(env, d, "key", "", 1, now) {
			n++
		}
	}
	return n, memo
}

// Against an upstream that is fast beside the ledger, at most maxInflight
// decisions are in flight without a reservation, however they arrive.
func TestSpeculationAgainstAFastUpstreamIsBoundedInFlight(t *testing.T) {
	now := time.Now()
	if n, _ := speculating(t, 100, 2*time.Millisecond, 5*time.Millisecond, now); n != maxInflight {
		t.Fatalf("%d of 100 speculated, want %d", n, maxInflight)
	}
}

// Against a slow upstream, a burst speculates only up to burstStarts in a
// slot, and each next slot lets as many more start; those in flight may
// be many more than against a fast one.
func TestSpeculationAgainstASlowUpstreamIsBoundedPerSlot(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	n, memo := speculating(t, 100, 2*time.Millisecond, time.Second, now)
	if n != burstStarts {
		t.Fatalf("%d of a burst of 100 speculated, want %d", n, burstStarts)
	}
	env := &platform.Env{Memo: memo}
	d := &decision{settings: settings.Settings{RateLimit: 1 << 20, AuthRateLimit: 1 << 20, RequestTimeout: time.Minute}}
	for slot := 1; slot <= 3; slot++ {
		next := 0
		for range 100 {
			if speculate(env, d, "key", "", 1, now.Add(time.Duration(slot)*burstSlot)) {
				next++
			}
		}
		if next != burstStarts {
			t.Fatalf("%d speculated in slot %d, want %d", next, slot, burstStarts)
		}
	}
	if all := memo.Add(inflightAll, 0, time.Minute); all != 4*burstStarts || all <= maxInflight {
		t.Fatalf("%d in flight, want %d (more than maxInflight %d)", all, 4*burstStarts, maxInflight)
	}
}
