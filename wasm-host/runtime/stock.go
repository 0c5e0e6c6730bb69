package runtime

import (
	"context"
	"sync"
)

// stock is a function's instances: the idle ones, and how many live (idle,
// busy or parked in the ledger), at most max. Like the gate, once its line
// has stalled it serves a call that continues a request before any new
// request: when every instance is parked in the ledger, a continuation
// after an Await needs one, and behind new requests each waiting up to its
// queue timeout it would wait as long again (schema/abi.md, "Overload").
type stock struct {
	mu    sync.Mutex
	idle  []*instance
	live  int
	max   int
	lines lines[grant]
}

// grant is what a waiter is given: an idle instance, or (nil) leave to make
// one, the live count already taken for it.
type grant struct{ inst *instance }

// take returns an idle instance, or mk = true when the caller may make one
// (counted live: it must put it or drop it), or ok = false when neither.
func (s *stock) take() (inst *instance, mk, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.takeLocked()
}

func (s *stock) takeLocked() (inst *instance, mk, ok bool) {
	if n := len(s.idle); n > 0 {
		inst = s.idle[n-1]
		s.idle = s.idle[:n-1]
		return inst, false, true
	}
	if s.live < s.max {
		s.live++
		return nil, true, true
	}
	return nil, false, false
}

// wait is take that waits in its line (lines.await).
func (s *stock) wait(ctx context.Context, q *queueWait, continuing bool) (*instance, bool, error) {
	s.mu.Lock()
	if inst, mk, ok := s.takeLocked(); ok {
		s.mu.Unlock()
		return inst, mk, nil
	}
	g, err := s.lines.await(&s.mu, ctx, q, continuing, func(g grant) {
		if g.inst != nil {
			s.put(g.inst)
		} else {
			s.drop()
		}
	})
	return g.inst, err == nil && g.inst == nil, err
}

// put gives back a live instance, ready for a call.
func (s *stock) put(inst *instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.lines.next(); w != nil {
		w <- grant{inst}
		return
	}
	s.idle = append(s.idle, inst)
}

// drop counts a live instance gone (discarded, or never made): a waiter
// may make one in its place.
func (s *stock) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.lines.next(); w != nil {
		w <- grant{}
		return
	}
	s.live--
}

// idleCount is how many instances are idle.
func (s *stock) idleCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.idle)
}

// drain removes and returns the idle instances.
func (s *stock) drain() []*instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.idle
	s.idle = nil
	return out
}
