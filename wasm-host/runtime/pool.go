package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"decisiongateway/shared/abi"
)

// ErrUnavailable means the function's module could not be loaded.
var ErrUnavailable = errors.New("runtime: function module could not be loaded")

// ErrOverloaded means no instance became free in time for a request's first
// call: before the request's deadline, or within the queue timeout
// (Options.QueueTimeout). Nothing of the request has run. A continuing call
// that finds none fails with context.DeadlineExceeded instead.
var ErrOverloaded = errors.New("runtime: overloaded")

var (
	errNoneBeforeDeadline = fmt.Errorf("%w: no free instance before the request's deadline", ErrOverloaded)
	errNoneWithinQueue    = fmt.Errorf("%w: no free instance within the queue timeout", ErrOverloaded)
)

// Function is a module with its pool of warm instances. Each instance serves
// one call at a time, because a guest blocked in an import must never be
// re-entered. The pool size bounds how many calls run at once, not how many
// requests are in flight: a request waiting on its upstream holds no
// instance (Handle).
//
// A call waiting on the ledger is not running either. Its instance cannot
// be lent (the guest's stack is in it), but the call gives back its run
// slot for the wait, as a Go thread in a system call gives back its P, and
// takes one again before the guest goes on. So up to ParkedPerSlot × size
// instances live, most of them parked in a ledger round trip on sqld or
// Turso, while at most size calls compute. Before, a parked instance
// counted as running: on sqld the pool (8) bounded how many batches the
// ledger's writer could group, and a group's fixed cost (a request and
// the statements' compilation) was shared by fewer decisions (README,
// closed16/small/sqld).
type Function struct {
	module *Module
	size   int
	stock  *stock // the instances: idle ones, and at most ParkedPerSlot × size live
	gate   *gate  // the run slots: calls computing, at most size

	created   atomic.Int64
	discarded atomic.Int64
	recycled  atomic.Int64
	inUse     atomic.Int64
	peakInUse atomic.Int64
	awaiting  atomic.Int64 // requests whose outbound call is in flight
	mu        sync.Mutex
	closed    bool
}

// NewFunction creates a pool of at most size instances for m and warms
// `warm` of them now, so the first requests pay no instantiation.
func NewFunction(ctx context.Context, m *Module, size, warm int) (*Function, error) {
	if size < 1 {
		return nil, fmt.Errorf("runtime: pool size %d < 1", size)
	}
	f := &Function{module: m, size: size, stock: &stock{max: size * m.engine.parked}, gate: newGate(size)}
	// Made before any goes into the stock, so that each take is leave to
	// make one, never an idle one back.
	var warmed []*instance
	for i := 0; i < warm && i < size; i++ {
		if _, mk, _ := f.stock.take(); !mk {
			break
		}
		inst, err := f.create(ctx)
		if err != nil {
			return nil, err
		}
		warmed = append(warmed, inst)
	}
	for _, inst := range warmed {
		f.stock.put(inst)
	}
	return f, nil
}

// Name is the function's name.
func (f *Function) Name() string { return f.module.name }

// Stats is a snapshot of the pool's counters.
type Stats struct {
	Size, Idle                                     int
	Created, Discarded, Recycled, InUse, PeakInUse int64
	// Awaiting counts requests whose upstream call is in flight: they hold
	// no instance.
	Awaiting int64
}

// Stats reports the pool's counters.
func (f *Function) Stats() Stats {
	return Stats{
		Size: f.size, Idle: f.stock.idleCount(),
		Created: f.created.Load(), Discarded: f.discarded.Load(), Recycled: f.recycled.Load(),
		InUse: f.inUse.Load(), PeakInUse: f.peakInUse.Load(), Awaiting: f.awaiting.Load(),
	}
}

func (f *Function) newInstance(ctx context.Context) (*instance, error) {
	inst := f.module.spare.Swap(nil)
	if inst == nil {
		var err error
		if inst, err = f.module.instantiate(context.WithoutCancel(ctx)); err != nil {
			return nil, err
		}
	}
	f.created.Add(1)
	return inst, nil
}

// defaultParked bounds the instances a function keeps, as a multiple of the
// calls that may compute at once (Options.ParkedPerSlot): the rest wait on
// the ledger. Memory stays bounded: ParkedPerSlot × size × the recycle size
// per function.
const defaultParked = 4

// acquire returns an instance and a run slot for a call, or ErrOverloaded
// when ctx ends first, or, for a request's first call (admit), when its
// wait passes the queue timeout. It takes the run slot first, then an idle
// instance or a new one while the pool has room; when it must wait for an
// instance it gives the slot back meanwhile, because the instances it
// waits for may be parked in the ledger, and each needs a slot to finish.
func (f *Function) acquire(ctx context.Context, admit bool) (*instance, error) {
	q := queueWait{}
	if admit {
		q.limit = f.module.engine.queue
	}
	defer q.stop()
	if err := f.enter(ctx, &q, !admit); err != nil {
		return nil, err
	}
	if inst, mk, ok := f.stock.take(); ok {
		if mk {
			var err error
			if inst, err = f.create(ctx); err != nil {
				f.leave()
				return nil, err
			}
		}
		return inst, nil
	}
	f.leave()
	inst, mk, err := f.stock.wait(ctx, &q, !admit)
	if err != nil {
		return nil, err
	}
	if mk {
		if inst, err = f.create(ctx); err != nil {
			return nil, err
		}
	}
	if err := f.enter(ctx, &q, !admit); err != nil {
		f.stock.put(inst) // unused: nothing to reset
		return nil, err
	}
	return inst, nil
}

// create makes the instance the stock let the caller make, and gives its
// place back when it cannot.
func (f *Function) create(ctx context.Context) (*instance, error) {
	inst, err := f.newInstance(ctx)
	if err != nil {
		f.stock.drop()
	}
	return inst, err
}

// tryEnter takes a run slot if one is free, enter waits for one until ctx
// ends or q expires (q may be nil), ahead of new requests when the call
// continues one (gate), and leave gives it back.
func (f *Function) tryEnter() bool { return f.gate.try() }

func (f *Function) enter(ctx context.Context, q *queueWait, continuing bool) error {
	return f.gate.wait(ctx, q, continuing)
}

// queueWait is a new request's budget for waiting (Options.QueueTimeout).
// Its timer starts at the first wait, so a call that finds an instance and
// a slot free costs none. Only a request's first call has one: a call back
// from the ledger or resuming after an Await has reserved credits or made
// its upstream call, and shedding it would waste both; it waits for its
// deadline instead. Under overload, new requests are answered 503
// overloaded after the budget instead of queueing until their deadline, so
// the wait of the requests admitted stays within about the budget (their
// continuations go first once the line stalls: lines.go) instead of growing for as
// long as the overload lasts (schema/abi.md, "Overload").
type queueWait struct {
	limit time.Duration // 0: no budget
	timer *time.Timer
}

// expired is the channel that fires when the budget is spent; nil (never)
// without a budget.
func (q *queueWait) expired() <-chan time.Time {
	if q == nil || q.limit <= 0 {
		return nil
	}
	if q.timer == nil {
		q.timer = time.NewTimer(q.limit)
	}
	return q.timer.C
}

func (q *queueWait) stop() {
	if q.timer != nil {
		q.timer.Stop()
	}
}

func (f *Function) leave() { f.gate.leave() }

// reenter takes a run slot for a call back from the ledger (imports.go).
// Waiting for it is queueing, not the function's time (Timing).
func (f *Function) reenter(ctx context.Context) bool {
	if f.tryEnter() {
		return true
	}
	start := time.Now()
	err := f.enter(ctx, nil, true)
	if t := timingFrom(ctx); t != nil {
		t.queue.Add(int64(time.Since(start)))
	}
	return err == nil
}

func (f *Function) release(inst *instance) {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		f.discard(inst)
		return
	}
	if inst.mod.Memory().Size() > f.module.engine.recycle {
		// A large call grew its memory: replace the instance off the
		// request path, so the next caller finds a warm one instead of
		// paying instantiation, and memory stays bounded by the pool.
		inst.close(context.Background())
		f.recycled.Add(1)
		go func() {
			fresh, err := f.newInstance(context.Background())
			if err != nil {
				f.stock.drop()
				return
			}
			f.stock.put(fresh)
		}()
		return
	}
	if inst.arena != nil && !inst.arena.reset(inst.mod) {
		// The guest's heap pointer cannot be trusted (arena.go).
		f.discard(inst)
		return
	}
	f.stock.put(inst)
}

// discard closes an instance whose state can no longer be trusted (it
// trapped, panicked or hit the deadline) and frees its slot.
func (f *Function) discard(inst *instance) {
	inst.close(context.Background())
	f.discarded.Add(1)
	f.stock.drop()
}

// maxAwaits bounds the outbound calls one request may hand to the host, so
// a guest that keeps asking cannot hold a request forever.
const maxAwaits = 8

// Handle runs req on a pooled instance. A guest failure returns an error and
// the instance is discarded, never reused.
//
// A guest that answers with an Await is not waiting for anything: its
// instance goes back to the pool at once, the host makes the outbound call,
// and the request continues on whichever instance is free next, with the
// call's result in req.Resume (schema/abi.md, "Awaiting"). So a slow
// upstream holds a goroutine and its buffers, never an instance.
func (f *Function) Handle(ctx context.Context, req *abi.Request) (abi.Response, error) {
	for awaits := 0; ; awaits++ {
		resp, err := f.run(ctx, req, awaits == 0)
		if err != nil || resp.Await == nil {
			return resp, err
		}
		if awaits == maxAwaits {
			return abi.Response{}, fmt.Errorf("runtime: %s asked for more than %d outbound calls", f.module.name, maxAwaits)
		}
		f.awaiting.Add(1)
		req.Resume = f.module.engine.await(ctx, resp.Await)
		f.awaiting.Add(-1)
	}
}

// run makes one call into a pooled instance.
func (f *Function) run(ctx context.Context, req *abi.Request, admit bool) (abi.Response, error) {
	queued := time.Now()
	inst, err := f.acquire(ctx, admit)
	if t := timingFrom(ctx); t != nil {
		t.queue.Add(int64(time.Since(queued)))
	}
	if err != nil {
		if !admit && errors.Is(err, ErrOverloaded) {
			// A continuing call (after its reservation and upstream call)
			// that found no instance before its deadline: something of the
			// request did run, so it is no "nothing ran" overload but a
			// request out of time, as the host answers it (504, the charge
			// unknown until it is reconciled).
			return abi.Response{}, fmt.Errorf("%w: %v", context.DeadlineExceeded, err)
		}
		return abi.Response{}, err
	}
	n := f.inUse.Add(1)
	for {
		p := f.peakInUse.Load()
		if n <= p || f.peakInUse.CompareAndSwap(p, n) {
			break
		}
	}
	c := &inst.state // reused: its buffers grow once and stay
	c.function, c.requestID = f.module.name, req.RequestID
	c.pool, c.running = f, true
	resp, err := inst.call(ctx, c, req)
	running := c.running
	c.pool, c.running = nil, false
	// Counted out before the instance goes back, or the next caller's
	// count could see it in use twice.
	f.inUse.Add(-1)
	// The instance goes back (or is discarded) before the run slot: the
	// call the slot goes to finds it idle instead of making another.
	if err != nil {
		f.discard(inst)
	} else {
		f.release(inst)
	}
	if running {
		f.leave()
	}
	if err != nil {
		if ctx.Err() != nil {
			return abi.Response{}, fmt.Errorf("%w: %v", context.Cause(ctx), err)
		}
		return abi.Response{}, err
	}
	return resp, nil
}

// Close discards idle instances; busy ones are discarded when they finish.
func (f *Function) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	for _, inst := range f.stock.drain() {
		f.discard(inst)
	}
}
