package runtime

import (
	"context"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/platform"
)

// NativeEnv gives a handler compiled natively (not to wasm) the same
// services a module gets through the ABI. Benchmarks use it as the baseline
// a pooled module call is measured against; tests use it to call handlers
// directly.
func NativeEnv(ctx context.Context, s Services, requestID string) *platform.Env {
	n := native{ctx: ctx, s: s, rid: requestID}
	return &platform.Env{Ledger: n, Transport: n, Model: n, Config: n, Logger: n}
}

type native struct {
	ctx context.Context
	s   Services
	rid string
}

func (n native) Exec(b *abi.Batch) (abi.BatchResult, error) { return n.s.Ledger(n.ctx, b), nil }
func (n native) Fetch(r *abi.FetchRequest) (abi.FetchResponse, error) {
	return n.s.Fetch(n.ctx, r), nil
}
func (n native) Run(r *abi.AIRequest) (abi.AIResponse, error) { return n.s.AI(n.ctx, r), nil }
func (n native) Get(name string) string                       { return n.s.Config(name) }
func (n native) Log(rec *abi.LogRecord)                       { n.s.Log(n.ctx, "native", n.rid, rec) }
