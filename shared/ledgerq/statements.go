package ledgerq

import (
	"errors"
	"time"

	"decisiongateway/shared/abi"
)

// DecisionStatements returns the SQL texts a decision sends to the ledger:
// its reservation and its settlement, with and without an
// Idempotency-Key, successful or failed. A host compiles them when it opens
// the ledger, while its modules load, so that the first decision after a
// start does not wait for SQLite to compile a dozen statements
// (wasm-host/ledger, Options.Prepare). The texts are produced by the same
// builders the route functions run, not retyped, so they cannot drift.
func DecisionStatements() []string {
	c := &capture{seen: map[string]bool{}}
	now := time.Unix(0, 0)
	for _, key := range []string{"", "k"} {
		p := Principal{AccountID: "a", KeyHash: "h", IPHash: "i"}
		_, _ = ReserveDecision(c, &Reserve{Principal: p, IdemKey: key, Now: now})
		for _, ok := range []bool{true, false} {
			_, _ = SettleDecision(c, &Settle{IdemKey: key, OK: ok, Retain: &Retained{}, Now: now})
		}
	}
	_, _, _ = RecordDecision(c, &Reserve{Principal: Principal{AccountID: "a", KeyHash: "h", IPHash: "i"}, Now: now}, &Settle{OK: true, Now: now})
	_, _ = Charged(c, "")
	return c.texts
}

// capture is a ledger that records the texts of the batches sent to it and
// runs none of them.
type capture struct {
	texts []string
	seen  map[string]bool
}

var errCaptured = errors.New("ledgerq: statements captured, not run")

func (c *capture) Exec(b *abi.Batch) (abi.BatchResult, error) {
	for _, s := range b.Steps {
		if !c.seen[s.SQL] {
			c.seen[s.SQL] = true
			c.texts = append(c.texts, s.SQL)
		}
	}
	return abi.BatchResult{}, errCaptured
}
