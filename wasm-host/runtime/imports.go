package runtime

import (
	"context"
	"crypto/sha256"

	"github.com/tetratelabs/wazero/api"

	"decisiongateway/shared/abi"
	"decisiongateway/wasm-host/interrupt"
)

// callState is the per-request state the imports need. It travels in the
// context of the guest call, because wazero hands host functions the ctx
// the export was called with.
type callState struct {
	function  string
	requestID string
	buf       []byte // request encoding, reused
	result    []byte // last import result, reused
	pending   []byte // a result too large for the guest's buffer, until take

	// The pool the call runs in, and whether the call holds a run slot
	// (it gives it back while it waits on the ledger: pool.go).
	pool    *Function
	running bool
}

// park gives back the call's run slot for a wait on the ledger; unpark
// takes a slot again before the guest goes on. A call whose context ends
// meanwhile goes on without one: the deadline stops the guest at its next
// loop (engine.go), and run gives back only a slot it holds.
func (c *callState) park() {
	if c.pool != nil && c.running {
		c.pool.leave()
		c.running = false
	}
}

func (c *callState) unpark(ctx context.Context) {
	if c.pool != nil && !c.running {
		c.running = c.pool.reenter(ctx)
	}
}

type callKey struct{}

func stateOf(ctx context.Context) *callState {
	c, _ := ctx.Value(callKey{}).(*callState)
	if c == nil {
		// An import called outside gateway_handle (e.g. from _initialize)
		// gets a throwaway state rather than a crash.
		c = &callState{}
	}
	return c
}

var i32x4 = []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}
var i32x2 = []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}
var i32x1 = []api.ValueType{api.ValueTypeI32}

func (e *Engine) instantiateHostModule(ctx context.Context) error {
	b := e.rt.NewHostModuleBuilder("gateway")
	answer := func(name string, f func(ctx context.Context, c *callState, in []byte) []byte) {
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
			c := stateOf(ctx)
			mem := mod.Memory()
			in, ok := mem.Read(uint32(stack[0]), uint32(stack[1]))
			if !ok {
				panic("gateway: import request outside guest memory")
			}
			out := f(ctx, c, in)
			outPtr, outCap := uint32(stack[2]), uint32(stack[3])
			if uint32(len(out)) <= outCap {
				if !mem.Write(outPtr, out) {
					panic("gateway: import result outside guest memory")
				}
				c.pending = nil
			} else {
				c.pending = append(c.pending[:0], out...)
			}
			stack[0] = uint64(len(out))
		}), i32x4, i32x1).Export(name)
	}

	answer("ledger", func(ctx context.Context, c *callState, in []byte) []byte {
		batch, err := abi.DecodeBatchTexts(in, e.sql.get)
		var res abi.BatchResult
		if err != nil {
			res.Err = err.Error()
		} else {
			c.park()
			res = e.services.Ledger(ctx, &batch)
			c.unpark(ctx)
		}
		c.result = abi.AppendBatchResult(c.result[:0], &res)
		return c.result
	})
	answer("fetch", func(ctx context.Context, c *callState, in []byte) []byte {
		req, err := abi.DecodeFetchRequest(in)
		var res abi.FetchResponse
		if err != nil {
			res = abi.FetchResponse{ErrKind: abi.FetchErrDenied, ErrMsg: err.Error()}
		} else {
			res = e.services.Fetch(ctx, &req)
		}
		c.result = abi.AppendFetchResponse(c.result[:0], &res)
		return c.result
	})
	answer("ai", func(ctx context.Context, c *callState, in []byte) []byte {
		req, err := abi.DecodeAIRequest(in)
		var res abi.AIResponse
		if err != nil {
			res = abi.AIResponse{ErrKind: abi.FetchErrDenied, ErrMsg: err.Error()}
		} else {
			res = e.services.AI(ctx, &req)
		}
		c.result = abi.AppendAIResponse(c.result[:0], &res)
		return c.result
	})
	answer("memo", func(ctx context.Context, c *callState, in []byte) []byte {
		m, err := abi.DecodeMemoRequest(in)
		if err != nil {
			return c.result[:0]
		}
		c.result = e.memo.do(c.function, &m, c.result)
		return c.result
	})
	answer("config", func(ctx context.Context, c *callState, in []byte) []byte {
		c.result = append(c.result[:0], e.services.Config(string(in))...)
		return c.result
	})

	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		c := stateOf(ctx)
		in, ok := mod.Memory().Read(uint32(stack[0]), uint32(stack[1]))
		if !ok {
			panic("gateway: log record outside guest memory")
		}
		if rec, err := abi.DecodeLogRecord(in); err == nil {
			e.services.Log(ctx, c.function, c.requestID, &rec)
		}
	}), i32x2, nil).Export("log")

	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		c := stateOf(ctx)
		ptr, n := uint32(stack[0]), uint32(stack[1])
		if n != uint32(len(c.pending)) || !mod.Memory().Write(ptr, c.pending) {
			panic("gateway: take does not match the pending result")
		}
		c.pending = c.pending[:0]
	}), i32x2, nil).Export("take")

	// sha256 hashes guest memory natively: modules carry no SHA-256 of
	// their own (shared/digest, schema/abi.md). It answers 1: it wrote
	// the 32-byte digest.
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		in, ok := mod.Memory().Read(uint32(stack[0]), uint32(stack[1]))
		if !ok {
			panic("gateway: sha256 input outside guest memory")
		}
		sum := sha256.Sum256(in)
		if !mod.Memory().Write(uint32(stack[2]), sum[:]) {
			panic("gateway: sha256 output outside guest memory")
		}
		stack[0] = 1
	}), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, i32x1).Export("sha256")

	// yield is called by the check interrupt.Instrument puts at every loop
	// header, once every interrupt.DefaultBudget iterations. Being a Go
	// call, it lets the scheduler and the garbage collector's stop of the
	// world reach a guest that is spinning; and it stops a guest whose
	// request is done, by trapping: the caller then discards the instance.
	b.NewFunctionBuilder().WithGoFunction(api.GoFunc(func(ctx context.Context, stack []uint64) {
		if err := ctx.Err(); err != nil {
			panic(context.Cause(ctx))
		}
		stack[0] = interrupt.DefaultBudget
	}), nil, i32x1).Export(interrupt.YieldImport)

	_, err := b.Instantiate(ctx)
	return err
}
