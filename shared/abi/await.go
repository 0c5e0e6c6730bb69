package abi

// Kinds of outbound call an Await makes, as they travel on the wire.
const (
	callNone  = 0
	callFetch = 1
	callAI    = 2
)

// await writes a Response's trailing Await: u8 kind (0 none, 1 fetch, 2 ai),
// then the state and the call's request message fields.
func (w *writer) await(a *Await) {
	switch {
	case a == nil:
		w.u8(callNone)
	case a.Fetch != nil:
		w.u8(callFetch)
		w.bytes(a.State)
		w.fetchRequest(a.Fetch)
	case a.AI != nil:
		w.u8(callAI)
		w.bytes(a.State)
		w.aiRequest(a.AI)
	default:
		w.u8(callNone)
	}
}

func (r *reader) await() *Await {
	kind := r.u8()
	if kind == callNone || r.err != nil {
		return nil
	}
	a := &Await{State: r.bytes()}
	switch kind {
	case callFetch:
		f := r.fetchRequest()
		a.Fetch = &f
	case callAI:
		m := r.aiRequest()
		a.AI = &m
	default:
		r.err = errUnknownCall
	}
	return a
}

// resume writes a Request's trailing Resume: u8 kind, then the state and
// the call's result message fields.
func (w *writer) resume(s *Resume) {
	switch {
	case s == nil:
		w.u8(callNone)
	case s.Fetch != nil:
		w.u8(callFetch)
		w.bytes(s.State)
		w.fetchResponse(s.Fetch)
	case s.AI != nil:
		w.u8(callAI)
		w.bytes(s.State)
		w.aiResponse(s.AI)
	default:
		w.u8(callNone)
	}
}

func (r *reader) resume() *Resume {
	kind := r.u8()
	if kind == callNone || r.err != nil {
		return nil
	}
	s := &Resume{State: r.bytes()}
	switch kind {
	case callFetch:
		f := r.fetchResponse()
		s.Fetch = &f
	case callAI:
		m := r.aiResponse()
		s.AI = &m
	default:
		r.err = errUnknownCall
	}
	return s
}
