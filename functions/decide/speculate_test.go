package decide

import (
	"encoding/binary"
	"testing"
	"time"

	"decisiongateway/shared/batch"
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

// speculator is a host's memo that measured the ledger's round trip at
// ledger and the upstream's at called and holds one key's allowed outcome
// for now's window; burst(at) starts 100 decisions of the key at at and
// counts those that speculate.
func speculator(ledger, called time.Duration, now time.Time) (burst func(at time.Time) int, memo mapMemo) {
	memo = mapMemo{}
	env := &platform.Env{Memo: memo}
	measure(env, ledger, called)
	d := &decision{settings: settings.Settings{RateLimit: 1 << 20, AuthRateLimit: 1 << 20, RequestTimeout: time.Minute}}
	h := hint{allowed: true, window: batch.WindowAt(now, time.Minute).Start, balance: 1 << 30}
	memo.Put(hintKey("key"), h.encode(), hintTTL)
	return func(at time.Time) int {
		n := 0
		for range 100 {
			if speculate(env, d, "key", "", 1, at) {
				n++
			}
		}
		return n
	}, memo
}

// Against an upstream that is fast beside the ledger, at most maxInflight
// decisions are in flight without a reservation, however they arrive.
func TestSpeculationAgainstAFastUpstreamIsBoundedInFlight(t *testing.T) {
	now := time.Now()
	burst, _ := speculator(2*time.Millisecond, 5*time.Millisecond, now)
	if n := burst(now); n != maxInflight {
		t.Fatalf("%d of 100 speculated, want %d", n, maxInflight)
	}
}

// Against a slow upstream, a burst speculates only up to burstStarts in a
// slot, and each next slot lets as many more start; those in flight may
// be many more than against a fast one.
func TestSpeculationAgainstASlowUpstreamIsBoundedPerSlot(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	burst, memo := speculator(2*time.Millisecond, time.Second, now)
	if n := burst(now); n != burstStarts {
		t.Fatalf("%d of a burst of 100 speculated, want %d", n, burstStarts)
	}
	for slot := 1; slot <= 3; slot++ {
		if n := burst(now.Add(time.Duration(slot) * burstSlot)); n != burstStarts {
			t.Fatalf("%d speculated in slot %d, want %d", n, slot, burstStarts)
		}
	}
	if all := memo.Add(inflightAll, 0, time.Minute); all != 4*burstStarts || all <= maxInflight {
		t.Fatalf("%d in flight, want %d (more than maxInflight %d)", all, 4*burstStarts, maxInflight)
	}
}
