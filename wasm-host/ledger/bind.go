package ledger

import (
	"context"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/platform"
)

// Bind adapts the executor to platform.Ledger, the interface the typed
// batch clients (shared/ledgerq, shared/accounts) speak, so host code (the
// sweeper, the operator CLI, test fixtures) runs exactly the batches the
// functions run. Every batch runs under ctx. A batch error is in the
// result (BatchResult.Err), as a guest sees it; the error is always nil.
func (e *Executor) Bind(ctx context.Context) platform.Ledger { return bound{ctx, e} }

type bound struct {
	ctx context.Context
	e   *Executor
}

func (b bound) Exec(batch *abi.Batch) (abi.BatchResult, error) { return b.e.Exec(b.ctx, batch), nil }
