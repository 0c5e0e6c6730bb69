package upstream

import (
	"decisiongateway/shared/contract"
	"decisiongateway/shared/jsonw"
	"decisiongateway/shared/validate"

	"github.com/valyala/fastjson"
)

// The edge and router kinds convert a request instead of forwarding its
// text, so they need to look into the parts the validator only summarises:
// the state, and each question's instructions, criteria and extension
// members. This file is that view, shared by both converting adapters.

// checkNoExtensions is the Check of the converting adapters. It runs before
// the reservation, so a rejected body costs nothing.
func checkNoExtensions(c *Call, path string) *validate.Error {
	if !c.Request.Extensions {
		return nil
	}
	name := ""
	var p fastjson.Parser
	if v, err := p.ParseBytes(c.Body); err == nil {
		v.GetObject().Visit(func(k []byte, _ *fastjson.Value) {
			if name == "" && !coreMember(string(k)) {
				name = quoteName(string(k))
			}
		})
	}
	if name == "" {
		name = "(extension)"
	}
	return &validate.Error{
		Code:    contract.UnsupportedExtensionField,
		Message: "top-level field " + name + " is not supported on the " + path + " path; only model, state and questions are",
	}
}

func coreMember(k string) bool { return k == "model" || k == "state" || k == "questions" }

// quoteName renders a member name for a message, shortened so a huge key
// cannot make a huge message.
func quoteName(k string) string {
	if r := []rune(k); len(r) > 48 {
		k = string(r[:48]) + "…"
	}
	return string(jsonw.AppendString(nil, k))
}

// decision is the converting adapters' view of a validated request. Its
// values alias the parser's memory and stay valid until the next parse.
type decision struct {
	p         fastjson.Parser
	state     *fastjson.Value
	questions []questionView
}

// questionView is one question, aligned with validate.Request.Questions.
type questionView struct {
	*validate.Question
	val          *fastjson.Value // the question object as sent
	instructions *fastjson.Value // nil when absent
	criteria     *fastjson.Value // nil when absent
	// descriptions are the choice option or score level descriptions, in
	// request order.
	descriptions []*fastjson.Value
	// extensions are the question's members other than type, instructions
	// and criteria, kept so a converted request still carries them.
	extensions []member
}

type member struct {
	key string
	val *fastjson.Value
}

// parse fills d from the call's body, which the validator accepted, in the
// order of its Request: from the validator's tree when the call has one.
// It fails only if the body is not the validated request.
func (d *decision) parse(c *Call) bool {
	req, root := c.Request, c.Tree
	if root == nil {
		var err error
		if root, err = d.p.ParseBytes(c.Body); err != nil {
			return false
		}
	}
	o := root.GetObject()
	qs := o.Get("questions").GetObject()
	if qs == nil {
		return false
	}
	d.state = o.Get("state")
	d.questions = d.questions[:0]
	qs.Visit(func(k []byte, v *fastjson.Value) {
		i := len(d.questions)
		if i >= len(req.Questions) {
			return
		}
		q := questionView{Question: &req.Questions[i], val: v}
		v.GetObject().Visit(func(k []byte, m *fastjson.Value) {
			switch string(k) {
			case "type":
			case "instructions":
				q.instructions = m
			case "criteria":
				q.criteria = m
			default:
				q.extensions = append(q.extensions, member{string(k), m})
			}
		})
		switch q.Type {
		case validate.Choice:
			q.criteria.GetObject().Visit(func(_ []byte, m *fastjson.Value) { q.descriptions = append(q.descriptions, m) })
		case validate.Score:
			q.descriptions = q.criteria.GetArray()
		}
		d.questions = append(d.questions, q)
	})
	return len(d.questions) == len(req.Questions) && d.state != nil
}

// appendValue appends v as compact JSON; a missing value is null.
func appendValue(b []byte, v *fastjson.Value) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return v.MarshalTo(b)
}

// descriptionText is a level description as the legend shows it: a string
// description as itself, any other JSON as its compact text.
func descriptionText(b []byte, v *fastjson.Value) []byte {
	if v != nil && v.Type() == fastjson.TypeString {
		s, _ := v.StringBytes()
		return append(b, s...)
	}
	return appendValue(b, v)
}
