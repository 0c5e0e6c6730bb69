package ledger

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"decisiongateway/shared/jsonw"
	"decisiongateway/shared/validate"
)

// The Hrana messages the writer sends and receives for every batch, as JSON
// without reflection. encoding/json was half of the writer's CPU on a
// remote ledger (perf, closed500-1s/small/sqld: Marshal of the request and
// Unmarshal of the answer, 13% of the host's CPU), and the writer is the one
// goroutine every decision's batches pass through, so its time per request
// is the gap between one request's answer and the next request. Requests
// are appended with shared/jsonw into a buffer the writer keeps; answers
// are read with fastjson into the same structs encoding/json filled (the
// types in hrana.go), strings copied out of the parser's buffer.
//
// Two behaviours are encoding/json's, kept so the wire does not change:
// text that is not valid UTF-8 is sent with each invalid byte replaced by
// U+FFFD (JSON text cannot carry it), and a float that is NaN or infinite
// is refused before anything is sent.

// errUnsupportedFloat: JSON has no NaN or infinities.
var errUnsupportedFloat = errors.New("hrana: a float argument is NaN or infinite")

// appendHello appends the WebSocket's first message, with the token when
// there is one.
func appendHello(b []byte, jwt *string) []byte {
	w := jsonw.Writer{B: b}
	w.Open('{')
	w.FieldString("type", "hello")
	w.Key("jwt")
	writeOptString(&w, jwt)
	w.Close('}')
	return w.B
}

// appendWSRequest appends a WebSocket request on stream 1: the batch of
// steps, or opening the stream when steps is nil.
func appendWSRequest(b []byte, id int64, steps []hranaStep) ([]byte, error) {
	w := jsonw.Writer{B: b}
	w.Open('{')
	w.FieldString("type", "request")
	w.FieldInt("request_id", id)
	w.Key("request")
	w.Open('{')
	if steps == nil {
		w.FieldString("type", "open_stream")
		w.FieldInt("stream_id", 1)
	} else {
		w.FieldString("type", "batch")
		w.FieldInt("stream_id", 1)
		w.Key("batch")
		if err := writeBatch(&w, steps); err != nil {
			return b, err
		}
	}
	w.Close('}')
	w.Close('}')
	return w.B, nil
}

// appendPipeline appends an HTTP pipeline request on the stream baton names
// (a new stream when nil): the batch of steps, or a close when steps is nil.
func appendPipeline(b []byte, baton *string, steps []hranaStep) ([]byte, error) {
	w := jsonw.Writer{B: b}
	w.Open('{')
	w.Key("baton")
	writeOptString(&w, baton)
	w.Key("requests")
	w.Open('[')
	w.Open('{')
	if steps == nil {
		w.FieldString("type", "close")
	} else {
		w.FieldString("type", "batch")
		w.Key("batch")
		if err := writeBatch(&w, steps); err != nil {
			return b, err
		}
	}
	w.Close('}')
	w.Close(']')
	w.Close('}')
	return w.B, nil
}

// writeOptString writes *s, or null when s is nil.
func writeOptString(w *jsonw.Writer, s *string) {
	if s == nil {
		w.Null()
		return
	}
	w.String(*s)
}

func writeBatch(w *jsonw.Writer, steps []hranaStep) error {
	w.Open('{')
	w.Key("steps")
	w.Open('[')
	for i := range steps {
		s := &steps[i]
		w.Open('{')
		w.Key("stmt")
		w.Open('{')
		w.Key("sql")
		writeText(w, s.Stmt.SQL)
		if len(s.Stmt.Args) > 0 {
			w.Key("args")
			w.Open('[')
			for _, a := range s.Stmt.Args {
				if err := writeValue(w, a); err != nil {
					return err
				}
			}
			w.Close(']')
		}
		w.FieldBool("want_rows", s.Stmt.WantRows)
		w.Close('}')
		if s.Condition != nil {
			w.Key("condition")
			writeCond(w, s.Condition)
		}
		w.Close('}')
	}
	w.Close(']')
	w.Close('}')
	return nil
}

func writeCond(w *jsonw.Writer, c *hranaCond) {
	w.Open('{')
	w.FieldString("type", c.Type)
	if c.Step != nil {
		w.FieldInt("step", int64(*c.Step))
	}
	if c.Cond != nil {
		w.Key("cond")
		writeCond(w, c.Cond)
	}
	if len(c.Conds) > 0 {
		w.Key("conds")
		w.Open('[')
		for i := range c.Conds {
			writeCond(w, &c.Conds[i])
		}
		w.Close(']')
	}
	w.Close('}')
}

func writeValue(w *jsonw.Writer, v hranaValue) error {
	w.Open('{')
	w.FieldString("type", v.Type)
	switch x := v.Value.(type) {
	case nil:
	case string:
		w.Key("value")
		writeText(w, x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return errUnsupportedFloat
		}
		var num [32]byte
		w.Key("value")
		w.Raw(strconv.AppendFloat(num[:0], x, 'g', -1, 64))
	default:
		return fmt.Errorf("hrana: cannot send a %T", x)
	}
	if v.Base64 != nil {
		w.Key("base64")
		w.String(*v.Base64)
	}
	w.Close('}')
	return nil
}

// writeText writes s as a JSON string, invalid UTF-8 replaced as
// encoding/json replaces it.
func writeText(w *jsonw.Writer, s string) {
	if utf8.ValidString(s) {
		w.String(s)
		return
	}
	fixed := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			fixed = utf8.AppendRune(fixed, utf8.RuneError)
		} else {
			fixed = append(fixed, s[i:i+n]...)
		}
		i += n
	}
	w.String(string(fixed))
}

// parseWSMessage reads one message from the server.
func parseWSMessage(p *fastjson.Parser, msg []byte) (*wsServerMsg, error) {
	v, err := parseObject(p, msg)
	if err != nil {
		return nil, err
	}
	m := &wsServerMsg{
		Type:      str(v.Get("type")),
		RequestID: v.GetInt64("request_id"),
		Error:     parseError(v.Get("error")),
	}
	if r := v.Get("response"); isObject(r) {
		m.Response = parseBatchRs(r)
	}
	return m, nil
}

// parsePipeline reads an HTTP pipeline answer.
func parsePipeline(p *fastjson.Parser, raw []byte) (*hranaResponse, error) {
	v, err := parseObject(p, raw)
	if err != nil {
		return nil, err
	}
	out := &hranaResponse{Baton: optStr(v.Get("baton")), BaseURL: optStr(v.Get("base_url"))}
	for _, r := range v.GetArray("results") {
		var res hranaResult
		res.Type = str(r.Get("type"))
		if rs := r.Get("response"); isObject(rs) {
			res.Response = parseBatchRs(rs)
		}
		res.Error = parseError(r.Get("error"))
		out.Results = append(out.Results, res)
	}
	return out, nil
}

func parseObject(p *fastjson.Parser, b []byte) (*fastjson.Value, error) {
	v, err := p.ParseBytes(b)
	if err != nil {
		return nil, err
	}
	if v.Type() != fastjson.TypeObject {
		return nil, errors.New("not an object")
	}
	return v, nil
}

func parseBatchRs(v *fastjson.Value) *hranaBatchRs {
	rs := &hranaBatchRs{Type: str(v.Get("type"))}
	res := v.Get("result")
	if !isObject(res) {
		return rs
	}
	if a, ok := array(res.Get("step_results")); ok {
		rs.Result.StepResults = make([]*hranaStmtResult, len(a))
		for i, s := range a {
			if isObject(s) {
				rs.Result.StepResults[i] = parseStmtResult(s)
			}
		}
	}
	if a, ok := array(res.Get("step_errors")); ok {
		rs.Result.StepErrors = make([]*hranaError, len(a))
		for i, e := range a {
			rs.Result.StepErrors[i] = parseError(e)
		}
	}
	return rs
}

func parseStmtResult(v *fastjson.Value) *hranaStmtResult {
	r := &hranaStmtResult{
		AffectedRowCount: v.GetInt64("affected_row_count"),
		LastInsertRowid:  optStr(v.Get("last_insert_rowid")),
	}
	if cols, ok := array(v.Get("cols")); ok {
		r.Cols = make([]hranaCol, len(cols))
		for i, c := range cols {
			r.Cols[i] = hranaCol{Name: optStr(c.Get("name")), Decltype: optStr(c.Get("decltype"))}
		}
	}
	if rows, ok := array(v.Get("rows")); ok {
		r.Rows = make([][]hranaValue, len(rows))
		for i, row := range rows {
			cells, _ := array(row)
			vals := make([]hranaValue, len(cells))
			for k, c := range cells {
				vals[k] = parseValue(c)
			}
			r.Rows[i] = vals
		}
	}
	return r
}

// parseValue keeps what encoding/json put in hranaValue.Value: a string,
// a float64, or nil.
func parseValue(v *fastjson.Value) hranaValue {
	h := hranaValue{Type: str(v.Get("type")), Base64: optStr(v.Get("base64"))}
	switch x := v.Get("value"); {
	case x == nil:
	case x.Type() == fastjson.TypeString:
		h.Value = str(x)
	case x.Type() == fastjson.TypeNumber:
		// Correctly rounded, unlike fastjson's Float64 (validate.Float;
		// it read -2.1e+22 as -2.1000000000000002e+22 here,
		// FuzzCodecAgreesWithEncodingJSON).
		if f, ok := validate.Float(x); ok {
			h.Value = f
		}
	}
	return h
}

func parseError(v *fastjson.Value) *hranaError {
	if !isObject(v) {
		return nil
	}
	return &hranaError{Message: str(v.Get("message")), Code: str(v.Get("code"))}
}

// array is v's elements, and whether v is an array: as with encoding/json,
// [] is an empty slice and an absent or null field a nil one.
func array(v *fastjson.Value) ([]*fastjson.Value, bool) {
	if v == nil || v.Type() != fastjson.TypeArray {
		return nil, false
	}
	a, _ := v.Array()
	return a, true
}

func isObject(v *fastjson.Value) bool { return v != nil && v.Type() == fastjson.TypeObject }

// str copies a string out of the parser's buffer ("" when v is not one).
func str(v *fastjson.Value) string {
	if v == nil {
		return ""
	}
	b, err := v.StringBytes()
	if err != nil {
		return ""
	}
	return string(b)
}

func optStr(v *fastjson.Value) *string {
	if v == nil || v.Type() != fastjson.TypeString {
		return nil
	}
	s := str(v)
	return &s
}
