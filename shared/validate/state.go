package validate

import (
	"encoding/binary"

	"decisiongateway/shared/policy"
)

// AppendState appends r in a compact binary form that RequestFromState
// reads back. A decision saves it with its upstream call (abi.Await.State)
// so that the continuation, which gets the same body back, does not scan
// and validate it a second time (schema/abi.md, "Awaiting").
func (r *Request) AppendState(b []byte) []byte {
	b = appendString(b, r.Model)
	var flags byte
	if r.HasModel {
		flags |= 1
	}
	if r.Extensions {
		flags |= 2
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(r.InsertAt))
	b = binary.AppendUvarint(b, uint64(len(r.Questions)))
	for i := range r.Questions {
		q := &r.Questions[i]
		b = appendString(b, q.Name)
		b = append(b, byte(q.Type))
		b = binary.AppendUvarint(b, uint64(q.Levels))
		b = binary.AppendUvarint(b, uint64(len(q.Options)))
		for _, o := range q.Options {
			b = appendString(b, o)
		}
	}
	return b
}

// RequestFromState reads a Request written by AppendState, which must be
// all of b. The Validator then holds it as Validate would have, so
// ValidateAnswer checks answers against it. Its strings point into b. It
// reports false for bytes AppendState did not write, or a request Validate
// could not have accepted (more questions or options than the spec allows).
func (v *Validator) RequestFromState(b []byte) (*Request, bool) {
	r := &v.req
	*r = Request{Questions: r.Questions[:0]}
	v.opt = v.opt[:0]
	d := stateReader{b: b, ok: true}
	r.Model = d.string()
	flags := d.byte()
	r.HasModel, r.Extensions = flags&1 != 0, flags&2 != 0
	r.InsertAt = d.count(policy.MaxBodyBytes)
	n := d.count(policy.MaxQuestions)
	for range n {
		q := Question{Name: d.string(), Type: QuestionType(d.byte()), Levels: d.count(policy.MaxScoreLevels)}
		if q.Type < Choice || q.Type > Noul {
			d.ok = false
		}
		options := d.count(policy.MaxChoiceOptions)
		start := len(v.opt)
		for range options {
			v.opt = append(v.opt, d.string())
		}
		if options > 0 {
			q.Options = v.opt[start:len(v.opt):len(v.opt)]
		}
		r.Questions = append(r.Questions, q)
	}
	if !d.ok || len(d.b) != 0 || n == 0 {
		return nil, false
	}
	return r, true
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// stateReader reads what AppendState wrote; ok turns false at the first
// thing it cannot read, and everything read after that is zero.
type stateReader struct {
	b  []byte
	ok bool
}

func (d *stateReader) count(max int) int {
	n, w := binary.Uvarint(d.b)
	if w <= 0 || n > uint64(max) {
		d.ok, d.b = false, nil
		return 0
	}
	d.b = d.b[w:]
	return int(n)
}

func (d *stateReader) byte() byte {
	if len(d.b) == 0 {
		d.ok = false
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *stateReader) string() string {
	n := d.count(len(d.b))
	if n > len(d.b) { // the length counted itself
		d.ok, d.b = false, nil
		return ""
	}
	s := str(d.b[:n])
	d.b = d.b[n:]
	return s
}
