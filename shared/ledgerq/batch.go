// Package ledgerq composes the decision path's ledger work as atomic
// batches (schema/abi.md, "Ledger batches"): one batch before the upstream
// call — authentication, rate counters, the idempotency claim and the credit
// reservation — and one after it — charge or refund. A decision costs two
// ledger round trips on any host, including Workers over HTTP. The
// reservation's writes are one statement whose trigger tests each write's
// condition in its WHERE clause (ReserveDecision); elsewhere conditions
// between the steps do the branching inside the transaction.
//
// The steps are built with shared/batch, the kit the account batches use
// too, and its one rate step (batch.Count, batch.Within).
package ledgerq

import (
	"decisiongateway/shared/abi"
	"decisiongateway/shared/batch"
)

var (
	str      = batch.Str
	num      = batch.Num
	truthy   = batch.Truthy
	affected = batch.Affected
)

func nullable(s string) abi.Value {
	if s == "" {
		return abi.NullValue()
	}
	return str(s)
}
