package abi

import (
	"encoding/binary"
	"errors"
	"math"
)

// ErrShort means a message ended before all its fields were read.
var ErrShort = errors.New("abi: truncated message")

var errUnknownCall = errors.New("abi: unknown call kind")

// writer appends wire fields to a byte slice.
type writer struct{ b []byte }

func (w *writer) u8(v uint8) { w.b = append(w.b, v) }

//go:inline
func (w *writer) u32(v uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, v) }
func (w *writer) u64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }
func (w *writer) str(s string) { w.u32(uint32(len(s))); w.b = append(w.b, s...) }

//go:inline
func (w *writer) bytes(p []byte) {
	w.u32(uint32(len(p)))
	w.b = append(w.b, p...)
}
func (w *writer) headers(h []Header) {
	w.u32(uint32(len(h)))
	for _, f := range h {
		w.str(f.Name)
		w.str(f.Value)
	}
}

// reader consumes wire fields; the first error sticks and later reads
// return zero values, so decoders check err once at the end.
type reader struct {
	b   []byte
	err error
}

//go:inline
func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = ErrShort
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

//go:inline
func (r *reader) u8() uint8 {
	p := r.take(1)
	if p == nil {
		return 0
	}
	return p[0]
}
func (r *reader) u32() uint32 {
	p := r.take(4)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}

//go:inline
func (r *reader) u64() uint64 {
	p := r.take(8)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}
func (r *reader) str() string { return string(r.take(int(r.u32()))) }

// bytes copies, so a decoded message never aliases the buffer it came from
// (guest buffers are reused between calls).
func (r *reader) bytes() []byte {
	p := r.take(int(r.u32()))
	if len(p) == 0 {
		return nil
	}
	return append([]byte(nil), p...)
}
func (r *reader) count(min int) int {
	n := int(r.u32())
	// Each element needs at least min bytes: a count larger than the rest of
	// the message is corrupt, and must not drive a huge allocation.
	if r.err == nil && n*min > len(r.b) {
		r.err = ErrShort
		return 0
	}
	return n
}
func (r *reader) headers() Headers {
	n := r.count(8)
	if n == 0 {
		return nil
	}
	// Room for the few a host adds (the function's version, …) without
	// copying the list.
	h := make(Headers, n, n+4)
	for i := range h {
		h[i].Name = r.str()
		h[i].Value = r.str()
	}
	return h
}
func (r *reader) done() error {
	if r.err == nil && len(r.b) != 0 {
		return errors.New("abi: trailing bytes after message")
	}
	return r.err
}

// AppendRequest encodes r after dst.
func AppendRequest(dst []byte, r *Request) []byte {
	w := writer{dst}
	w.str(r.Method)
	w.str(r.Path)
	w.str(r.Query)
	w.str(r.ClientAddr)
	w.str(r.RequestID)
	w.headers(r.Headers)
	w.bytes(r.Body)
	w.resume(r.Resume)
	return w.b
}

// DecodeRequest decodes a Request.
func DecodeRequest(b []byte) (Request, error) {
	r := reader{b: b}
	var q Request
	q.Method = r.str()
	q.Path = r.str()
	q.Query = r.str()
	q.ClientAddr = r.str()
	q.RequestID = r.str()
	q.Headers = r.headers()
	q.Body = r.bytes()
	q.Resume = r.resume()
	return q, r.done()
}

// AppendResponse encodes r after dst.
func AppendResponse(dst []byte, r *Response) []byte {
	w := writer{dst}
	w.u32(uint32(r.Status))
	w.headers(r.Headers)
	w.bytes(r.Body)
	w.await(r.Await)
	return w.b
}

// DecodeResponse decodes a Response.
func DecodeResponse(b []byte) (Response, error) {
	r := reader{b: b}
	var p Response
	p.Status = int(r.u32())
	p.Headers = r.headers()
	p.Body = r.bytes()
	p.Await = r.await()
	return p, r.done()
}

// AppendFetchRequest encodes f after dst.
func AppendFetchRequest(dst []byte, f *FetchRequest) []byte {
	w := writer{dst}
	w.fetchRequest(f)
	return w.b
}

func (w *writer) fetchRequest(f *FetchRequest) {
	w.str(f.Method)
	w.str(f.URL)
	w.headers(f.Headers)
	w.bytes(f.Body)
	w.u32(f.TimeoutMS)
	w.u32(f.MaxBytes)
	w.str(f.Credential)
}

// DecodeFetchRequest decodes a FetchRequest.
func DecodeFetchRequest(b []byte) (FetchRequest, error) {
	r := reader{b: b}
	f := r.fetchRequest()
	return f, r.done()
}

func (r *reader) fetchRequest() (f FetchRequest) {
	f.Method = r.str()
	f.URL = r.str()
	f.Headers = r.headers()
	f.Body = r.bytes()
	f.TimeoutMS = r.u32()
	f.MaxBytes = r.u32()
	f.Credential = r.str()
	return f
}

// AppendFetchResponse encodes f after dst.
func AppendFetchResponse(dst []byte, f *FetchResponse) []byte {
	w := writer{dst}
	w.fetchResponse(f)
	return w.b
}

func (w *writer) fetchResponse(f *FetchResponse) {
	w.u32(uint32(f.Status))
	w.headers(f.Headers)
	w.bytes(f.Body)
	w.str(f.ErrKind)
	w.str(f.ErrMsg)
}

// DecodeFetchResponse decodes a FetchResponse.
func DecodeFetchResponse(b []byte) (FetchResponse, error) {
	r := reader{b: b}
	f := r.fetchResponse()
	return f, r.done()
}

func (r *reader) fetchResponse() (f FetchResponse) {
	f.Status = int(r.u32())
	f.Headers = r.headers()
	f.Body = r.bytes()
	f.ErrKind = r.str()
	f.ErrMsg = r.str()
	return f
}

// AppendAIRequest encodes a after dst.
func AppendAIRequest(dst []byte, a *AIRequest) []byte {
	w := writer{dst}
	w.aiRequest(a)
	return w.b
}

func (w *writer) aiRequest(a *AIRequest) {
	w.str(a.Model)
	w.bytes(a.Input)
}

// DecodeAIRequest decodes an AIRequest.
func DecodeAIRequest(b []byte) (AIRequest, error) {
	r := reader{b: b}
	a := r.aiRequest()
	return a, r.done()
}

func (r *reader) aiRequest() (a AIRequest) {
	a.Model = r.str()
	a.Input = r.bytes()
	return a
}

// AppendAIResponse encodes a after dst.
func AppendAIResponse(dst []byte, a *AIResponse) []byte {
	w := writer{dst}
	w.aiResponse(a)
	return w.b
}

func (w *writer) aiResponse(a *AIResponse) {
	w.u32(uint32(a.Status))
	w.bytes(a.Output)
	w.str(a.ErrKind)
	w.str(a.ErrMsg)
}

// DecodeAIResponse decodes an AIResponse.
func DecodeAIResponse(b []byte) (AIResponse, error) {
	r := reader{b: b}
	a := r.aiResponse()
	return a, r.done()
}

func (r *reader) aiResponse() (a AIResponse) {
	a.Status = int(r.u32())
	a.Output = r.bytes()
	a.ErrKind = r.str()
	a.ErrMsg = r.str()
	return a
}

// AppendLogRecord encodes l after dst.
func AppendLogRecord(dst []byte, l *LogRecord) []byte {
	w := writer{dst}
	w.u8(l.Level)
	w.str(l.Message)
	w.headers(l.Attrs)
	return w.b
}

// DecodeLogRecord decodes a LogRecord.
func DecodeLogRecord(b []byte) (LogRecord, error) {
	r := reader{b: b}
	var l LogRecord
	l.Level = r.u8()
	l.Message = r.str()
	l.Attrs = r.headers()
	return l, r.done()
}

func (w *writer) value(v Value) {
	w.u8(uint8(v.Kind))
	switch v.Kind {
	case Integer:
		w.u64(uint64(v.Int))
	case Float:
		w.u64(math.Float64bits(v.Float))
	case Text:
		w.str(v.Str)
	case Blob:
		w.bytes(v.Bytes)
	}
}

func (r *reader) value() Value {
	v := Value{Kind: ValueKind(r.u8())}
	switch v.Kind {
	case Null:
	case Integer:
		v.Int = int64(r.u64())
	case Float:
		v.Float = math.Float64frombits(r.u64())
	case Text:
		v.Str = r.str()
	case Blob:
		v.Bytes = r.bytes()
	default:
		if r.err == nil {
			r.err = errors.New("abi: unknown value kind")
		}
	}
	return v
}

// AppendBatch encodes b after dst.
func AppendBatch(dst []byte, b *Batch) []byte {
	w := writer{dst}
	w.u32(uint32(len(b.Steps)))
	for i := range b.Steps {
		s := &b.Steps[i]
		w.str(s.SQL)
		w.u32(uint32(len(s.Args)))
		for _, a := range s.Args {
			w.value(a)
		}
		w.u32(uint32(len(s.When)))
		for _, c := range s.When {
			w.u32(uint32(c.Step))
			w.u8(uint8(c.Test))
		}
	}
	return w.b
}

// DecodeBatch decodes a Batch.
func DecodeBatch(b []byte) (Batch, error) { return DecodeBatchTexts(b, nil) }

// DecodeBatchTexts is DecodeBatch with each statement's SQL made by text
// (nil: a copy): a host that receives the same few texts over and over
// can hand out one copy of each instead of allocating it per batch.
func DecodeBatchTexts(b []byte, text func([]byte) string) (Batch, error) {
	r := reader{b: b}
	var out Batch
	n := r.count(12)
	if n > 0 {
		out.Steps = make([]Statement, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		s := &out.Steps[i]
		if text != nil {
			s.SQL = text(r.take(int(r.u32())))
		} else {
			s.SQL = r.str()
		}
		if na := r.count(1); na > 0 {
			s.Args = make([]Value, na)
			for j := range s.Args {
				s.Args[j] = r.value()
			}
		}
		if nc := r.count(5); nc > 0 {
			s.When = make([]Cond, nc)
			for j := range s.When {
				s.When[j] = Cond{Step: int(r.u32()), Test: CondTest(r.u8())}
			}
		}
	}
	return out, r.done()
}

// AppendBatchResult encodes b after dst.
func AppendBatchResult(dst []byte, b *BatchResult) []byte {
	w := writer{dst}
	w.str(b.Err)
	w.u32(uint32(len(b.Steps)))
	for i := range b.Steps {
		s := &b.Steps[i]
		if s.Executed {
			w.u8(1)
		} else {
			w.u8(0)
		}
		w.u64(uint64(s.RowsAffected))
		w.u64(uint64(s.LastInsertID))
		w.u32(uint32(len(s.Columns)))
		for _, c := range s.Columns {
			w.str(c)
		}
		w.u32(uint32(len(s.Rows)))
		for _, row := range s.Rows {
			for _, v := range row {
				w.value(v)
			}
		}
	}
	return w.b
}

// DecodeBatchResult decodes a BatchResult.
func DecodeBatchResult(b []byte) (BatchResult, error) {
	r := reader{b: b}
	var out BatchResult
	out.Err = r.str()
	n := r.count(25)
	if n > 0 {
		out.Steps = make([]StepResult, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		s := &out.Steps[i]
		s.Executed = r.u8() == 1
		s.RowsAffected = int64(r.u64())
		s.LastInsertID = int64(r.u64())
		if nc := r.count(4); nc > 0 {
			s.Columns = make([]string, nc)
			for j := range s.Columns {
				s.Columns[j] = r.str()
			}
		}
		nr := r.count(len(s.Columns))
		if nr > 0 && len(s.Columns) > 0 {
			s.Rows = make([][]Value, nr)
			for j := range s.Rows {
				row := make([]Value, len(s.Columns))
				for k := range row {
					row[k] = r.value()
				}
				s.Rows[j] = row
			}
		}
	}
	return out, r.done()
}
