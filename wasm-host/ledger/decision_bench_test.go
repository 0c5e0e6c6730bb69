package ledger

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/ledgerq"
	"decisiongateway/shared/platform"
	"decisiongateway/testkit/sqldtest"
)

// BenchmarkDecision measures the ledger's share of one decision: the
// reservation batch and the settlement batch of shared/ledgerq, exactly as
// functions/decide sends them, or in the -record rows the one batch of a
// speculative decision (ledgerq.RecordDecision), with no module, HTTP or
// upstream around them. One op is one decision. Besides ns/op it reports, per decision, the
// statements the database ran, the requests sent to sqld, the transactions
// (fewer than two when group commit shares them), the statements SQLite
// compiled from text, how many batches shared a transaction, and the CPU
// time this process spent (which, unlike ns/op, other processes on the
// machine do not inflate) and, on sqld, the time the server spent.
//
// Each row is measured against the others of the same run: serial,
// parallel8 (8 callers, as a host with 8 warm instances issues them),
// parallel32 (groups of 20 and more) and parallel128 (as a host on sqld
// issues them under a herd of clients, 16 parked per run slot), with
// the statement cache off (nocache), group commit off (group=1) and
// reservations and settlements never merged (nomerge).
//
//	go test ./wasm-host/ledger -run '^$' -bench Decision -benchtime 2000x
func BenchmarkDecision(b *testing.B) {
	noCache := defaultTuning()
	noCache.stmtCache = 0
	noGroup := defaultTuning()
	noGroup.maxGroup = 1
	cases := []struct {
		name     string
		callers  int
		idem     bool // every decision carries its own Idempotency-Key
		record   bool // recorded after the upstream call, one batch (ledgerq.RecordDecision)
		tune     tuning
		embedded bool // only on the embedded file (sqld has no statement cache of ours)
		noMerge  bool // nothing merged (Options.Merge unset)
	}{
		{"serial", 1, false, false, defaultTuning(), false, false},
		{"serial/nocache", 1, false, false, noCache, true, false},
		{"serial-idem", 1, true, false, defaultTuning(), false, false},
		{"serial-record", 1, false, true, defaultTuning(), false, false},
		{"parallel8", 8, false, false, defaultTuning(), false, false},
		{"parallel8-record", 8, false, true, defaultTuning(), false, false},
		{"parallel32", 32, false, false, defaultTuning(), false, false},
		{"parallel128", 128, false, false, defaultTuning(), false, false},
		{"parallel128-record", 128, false, true, defaultTuning(), false, false},
		{"parallel8/nocache", 8, false, false, noCache, true, false},
		{"parallel8/group=1", 8, false, false, noGroup, false, false},
		{"parallel8/nomerge", 8, false, false, defaultTuning(), false, true},
	}
	for _, be := range sqldtest.Backends(b) {
		setup, err := OpenWith(context.Background(), be.URL, "", Options{Create: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := setup.Migrate(context.Background()); err != nil {
			b.Fatal(err)
		}
		accounts := benchAccounts(b, setup, 8)
		for _, c := range cases {
			if c.embedded && be.Name != "embedded" {
				continue
			}
			b.Run(be.Name+"/"+c.name, func(b *testing.B) {
				o := Options{Create: true, Merge: ledgerq.MergeableStatements()}
				if c.noMerge {
					o.Merge = nil
				}
				e, err := open(context.Background(), be.URL, "", o, c.tune)
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				l := e.Bind(context.Background())
				var caller atomic.Int64
				one := func(a benchAccount) error { return benchDecision(l, a, c.idem) }
				if c.record {
					one = func(a benchAccount) error { return benchRecord(l, a) }
				}
				decide := func(acct int) {
					if err := one(accounts[acct]); err != nil {
						b.Error(err)
					}
				}
				before, cpu, server := e.Stats(), processCPU(), be.CPU()
				if c.callers == 1 {
					for b.Loop() {
						decide(0)
					}
				} else {
					b.SetParallelism(max(1, c.callers/testingProcs()))
					b.RunParallel(func(pb *testing.PB) {
						acct := int(caller.Add(1)-1) % len(accounts)
						for pb.Next() {
							decide(acct)
						}
					})
				}
				reportPerDecision(b, e.Stats().Sub(before), processCPU()-cpu, b.N)
				if be.Server != nil {
					b.ReportMetric(float64((be.CPU()-server).Nanoseconds())/float64(b.N)/1e3, "sqld-cpu-µs/decision")
				}
			})
		}
		checkMoney(b, setup)
		setup.Close()
	}
}

// reportPerDecision adds the Stats of n decisions to the benchmark's output.
func reportPerDecision(b *testing.B, s Stats, cpu time.Duration, n int) {
	per := func(v int64) float64 { return float64(v) / float64(n) }
	b.ReportMetric(per(cpu.Nanoseconds())/1e3, "cpu-µs/decision")
	b.ReportMetric(per(s.Statements), "stmts/decision")
	b.ReportMetric(per(s.RoundTrips), "trips/decision")
	b.ReportMetric(per(s.Transactions), "tx/decision")
	b.ReportMetric(per(s.Prepared), "prepares/decision")
	b.ReportMetric(per(s.Merged), "merged/decision")
	b.ReportMetric(per(s.Retries), "retries/decision")
	if s.Transactions > 0 {
		b.ReportMetric(float64(s.Batches)/float64(s.Transactions), "batches/tx")
	}
}

type benchAccount struct{ id, keyHash string }

var benchSeq atomic.Int64

// benchAccounts creates n accounts, each with a live key and a balance no
// benchmark exhausts, recorded as a grant so that the money invariant holds.
func benchAccounts(b *testing.B, e *Executor, n int) []benchAccount {
	out := make([]benchAccount, n)
	for i := range out {
		a := benchAccount{id: fmt.Sprintf("bench%07d", benchSeq.Add(1)), keyHash: fmt.Sprintf("hash-%d", benchSeq.Add(1))}
		fundAccount(b, e, a.id, a.keyHash, 1<<50, abi.NullValue())
		out[i] = a
	}
	return out
}

// benchReserve is the reservation of decision id by account a, under the
// Idempotency-Key key ("" for none), with limits no benchmark reaches.
func benchReserve(a benchAccount, id, key string, now time.Time) *ledgerq.Reserve {
	return &ledgerq.Reserve{
		Principal: ledgerq.Principal{AccountID: a.id, KeyHash: a.keyHash, IPHash: "ip-" + a.id, AuthLimit: 1 << 30},
		Source:    "api", RequestID: id, IdemKey: key, Fingerprint: "fp", Model: "model-x",
		Questions: 1, Cost: 3, RateLimit: 1 << 30, TTL: 24 * time.Hour, Lease: 65 * time.Second, Now: now,
	}
}

// benchDecision reserves and settles one successful decision.
func benchDecision(l platform.Ledger, a benchAccount, idem bool) error {
	id := fmt.Sprintf("req-%d", benchSeq.Add(1))
	key := ""
	if idem {
		key = "idem-" + id
	}
	r, err := ledgerq.ReserveDecision(l, benchReserve(a, id, key, time.Now()))
	if err != nil {
		return err
	}
	if r.Outcome != ledgerq.Reserved {
		return fmt.Errorf("reservation outcome %d", r.Outcome)
	}
	st := &ledgerq.Settle{RequestID: id, AccountID: a.id, IdemKey: key, Cost: 3, OK: true, Status: 200,
		InputTokens: 11, OutputTokens: 7, Now: time.Now()}
	if idem {
		st.Retain = &ledgerq.Retained{RequestID: id, Status: 200, Body: []byte(`{"answers":{}}`), Mode: "vendor"}
	}
	mine, err := ledgerq.SettleDecision(l, st)
	if err != nil {
		return err
	}
	if !mine {
		return fmt.Errorf("settlement of %s found it settled already", id)
	}
	return nil
}

// benchRecord records one successful speculative decision: the
// reservation and the settlement in one batch, as functions/decide sends
// them after an upstream call made before reserving.
func benchRecord(l platform.Ledger, a benchAccount) error {
	id := fmt.Sprintf("req-%d", benchSeq.Add(1))
	now := time.Now()
	r, charged, err := ledgerq.RecordDecision(l, benchReserve(a, id, "", now),
		&ledgerq.Settle{RequestID: id, AccountID: a.id, Cost: 3, OK: true, Status: 200, InputTokens: 11, OutputTokens: 7, Now: now})
	if err != nil {
		return err
	}
	if r.Outcome != ledgerq.Reserved || !charged {
		return fmt.Errorf("record outcome %d, charged %v", r.Outcome, charged)
	}
	return nil
}

// checkMoney fails the benchmark unless every balance equals the sum of its
// account's credit entries.
func checkMoney(b *testing.B, e *Executor) {
	rows := query(b, e, `SELECT a.id, a.balance, COALESCE((SELECT SUM(delta) FROM credit_entries c WHERE c.account_id = a.id), 0) FROM accounts a`)
	for _, r := range rows {
		if r[1].AsInt() != r[2].AsInt() {
			b.Errorf("account %s: balance %d, entries sum %d", r[0].AsString(), r[1].AsInt(), r[2].AsInt())
		}
	}
}
