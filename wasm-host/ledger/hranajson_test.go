package ledger

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/valyala/fastjson"

	"decisiongateway/shared/abi"
)

// The writer's JSON (hranajson.go) must say on the wire what encoding/json
// said for the same structs, and read answers into the same structs.

// The request envelopes as encoding/json wrote them before hranajson.go:
// the reference the writer's requests are compared with.
type (
	hranaRequest struct {
		Baton    *string         `json:"baton"`
		Requests []hranaStreamRq `json:"requests"`
	}
	hranaStreamRq struct {
		Type  string      `json:"type"`
		Batch *hranaBatch `json:"batch,omitempty"`
	}
	hranaBatch struct {
		Steps []hranaStep `json:"steps"`
	}
	wsHello struct {
		Type string  `json:"type"`
		JWT  *string `json:"jwt"`
	}
	wsClientRq struct {
		Type      string    `json:"type"`
		RequestID int64     `json:"request_id"`
		Request   wsRequest `json:"request"`
	}
	wsRequest struct {
		Type     string      `json:"type"`
		StreamID int         `json:"stream_id"`
		Batch    *hranaBatch `json:"batch,omitempty"`
	}
)

func codecSteps() []hranaStep {
	two := 2
	blob := toHrana(abi.Bytes([]byte{0, 1, 0xfe, 0xff}))
	return []hranaStep{
		{Stmt: hranaStmt{SQL: "BEGIN IMMEDIATE"}},
		{Stmt: hranaStmt{SQL: "SELECT ?, ?, ?, ?, ?, ?", WantRows: true, Args: []hranaValue{
			toHrana(abi.Int64(-9007199254740993)),
			toHrana(abi.Float64(0.1)),
			toHrana(abi.Float64(1e21)),
			toHrana(abi.Float64(-2.5e-7)),
			toHrana(abi.String("")),
			toHrana(abi.Value{}),
		}}, Condition: &hranaCond{Type: "ok", Step: new(int)}},
		{Stmt: hranaStmt{SQL: "INSERT INTO t VALUES (?, ?, ?)", Args: []hranaValue{
			toHrana(abi.String("quote \" backslash \\ newline \n tab \t <b>&amp; \u2028 ü 🙂 \x01")),
			toHrana(abi.String("bad \xff utf-8 \xc3(")),
			blob,
		}}, Condition: &hranaCond{Type: "and", Conds: []hranaCond{
			{Type: "ok", Step: &two},
			{Type: "not", Cond: &hranaCond{Type: "or", Conds: []hranaCond{{Type: "error", Step: &two}, {Type: "ok", Step: new(int)}}}},
			{Type: "and"},
		}}},
		{Stmt: hranaStmt{SQL: "COMMIT"}},
	}
}

// generic decodes JSON text into maps and slices, numbers kept as text so a
// float spelled differently but equal is compared by value below.
func generic(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return v
}

func TestRequestsSayWhatEncodingJSONSaid(t *testing.T) {
	steps := codecSteps()
	got, err := appendWSRequest([]byte("left over"), 7, steps)
	if err != nil {
		t.Fatal(err)
	}
	got = got[len("left over"):]
	want, _ := json.Marshal(wsClientRq{Type: "request", RequestID: 7, Request: wsRequest{Type: "batch", StreamID: 1, Batch: &hranaBatch{Steps: steps}}})
	if g, w := generic(t, got), generic(t, want); !reflect.DeepEqual(g, w) {
		t.Fatalf("WebSocket request differs\n got %s\nwant %s", got, want)
	}

	baton := "b-1"
	for _, bt := range []*string{nil, &baton} {
		got, err := appendPipeline(nil, bt, steps)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(hranaRequest{Baton: bt, Requests: []hranaStreamRq{{Type: "batch", Batch: &hranaBatch{Steps: steps}}}})
		if g, w := generic(t, got), generic(t, want); !reflect.DeepEqual(g, w) {
			t.Fatalf("pipeline request differs\n got %s\nwant %s", got, want)
		}
	}
	got, _ = appendPipeline(nil, &baton, nil)
	want, _ = json.Marshal(hranaRequest{Baton: &baton, Requests: []hranaStreamRq{{Type: "close"}}})
	if g, w := generic(t, got), generic(t, want); !reflect.DeepEqual(g, w) {
		t.Fatalf("close differs\n got %s\nwant %s", got, want)
	}
	got, _ = appendWSRequest(nil, 0, nil)
	want, _ = json.Marshal(wsClientRq{Type: "request", RequestID: 0, Request: wsRequest{Type: "open_stream", StreamID: 1}})
	if g, w := generic(t, got), generic(t, want); !reflect.DeepEqual(g, w) {
		t.Fatalf("open_stream differs\n got %s\nwant %s", got, want)
	}
	token := "tok\"en"
	for _, jwt := range []*string{nil, &token} {
		got, want := appendHello(nil, jwt), must(json.Marshal(wsHello{Type: "hello", JWT: jwt}))
		if g, w := generic(t, got), generic(t, want); !reflect.DeepEqual(g, w) {
			t.Fatalf("hello differs\n got %s\nwant %s", got, want)
		}
	}
}

func TestRequestRefusesWhatJSONCannotCarry(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		steps := []hranaStep{{Stmt: hranaStmt{SQL: "SELECT ?", Args: []hranaValue{toHrana(abi.Float64(f))}}}}
		if _, err := appendWSRequest(nil, 1, steps); err == nil {
			t.Errorf("%v: sent", f)
		}
		if _, err := json.Marshal(steps); err == nil {
			t.Errorf("%v: encoding/json sent it too; the test's premise changed", f)
		}
	}
}

// Answers as sqld writes them, and the shapes the reader must survive.
var codecAnswers = []string{
	`{"type":"hello_ok"}`,
	`{"type":"response_ok","request_id":0,"response":{"type":"open_stream"}}`,
	`{"type":"response_error","request_id":3,"error":{"message":"stream not found","code":"STREAM_NOT_FOUND"}}`,
	`{"type":"hello_error","error":{"message":"bad jwt"}}`,
	`{"type":"response_ok","request_id":12,"response":{"type":"batch","result":{
	  "step_results":[
	    {"cols":[],"rows":[],"affected_row_count":0,"last_insert_rowid":null,"rows_read":0,"rows_written":0,"query_duration_ms":0.01},
	    {"cols":[{"name":"a","decltype":"INTEGER"},{"name":"b","decltype":null},{"name":null},{"name":"t","decltype":"TIMESTAMP"},{"name":"e"}],
	     "rows":[[{"type":"integer","value":"-9007199254740993"},{"type":"float","value":0.1},{"type":"text","value":"x \" \\ \n \u00fc \ud83d\ude42"},{"type":"text","value":"2024-01-02 03:04:05"},{"type":"blob","base64":"AAH+/w"}],
	             [{"type":"null"},{"type":"float","value":1e21},{"type":"text","value":""},{"type":"integer","value":7},{"type":"blob","base64":""}]],
	     "affected_row_count":2,"last_insert_rowid":"42"},
	    null,
	    null
	  ],
	  "step_errors":[null,null,{"message":"SQLite error: guard failed","code":"SQLITE_CONSTRAINT"},null],
	  "unknown":{"nested":[1,2,3]}}}}`,
	`{"type":"response_ok","request_id":13,"response":{"type":"batch","result":{"step_results":[],"step_errors":[]}}}`,
}

// readsAsEncodingJSON reads text with parse and fails unless the result is
// what encoding/json fills the same struct with; it returns the latter.
func readsAsEncodingJSON[T any](t *testing.T, p *fastjson.Parser, text string, parse func(*fastjson.Parser, []byte) (*T, error)) *T {
	t.Helper()
	var want T
	if err := json.Unmarshal([]byte(text), &want); err != nil {
		t.Fatal(err)
	}
	got, err := parse(p, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, &want) {
		t.Errorf("%s\n got %+v\nwant %+v", text, got, &want)
	}
	return &want
}

func TestAnswersReadAsEncodingJSONReadThem(t *testing.T) {
	var p fastjson.Parser
	for _, a := range codecAnswers {
		want := readsAsEncodingJSON(t, &p, a, parseWSMessage)
		// The same batch result inside an HTTP pipeline answer.
		if want.Response == nil {
			continue
		}
		rs, _ := json.Marshal(want.Response)
		pipe := `{"baton":"b-2","base_url":null,"results":[{"type":"ok","response":` + string(rs) + `},{"type":"error","error":{"message":"m"}}]}`
		readsAsEncodingJSON(t, &p, pipe, parsePipeline)
	}
	// Values that outlive the parser's next message.
	first, _ := parseWSMessage(&p, []byte(codecAnswers[4]))
	_, _ = parseWSMessage(&p, []byte(`{"type":"response_ok","request_id":99,"response":{"type":"batch","result":{"step_results":[{"cols":[{"name":"zzzzzzzzzz"}],"rows":[[{"type":"text","value":"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"}]]}],"step_errors":[null]}}}`))
	if c := first.Response.Result.StepResults[1]; *c.Cols[0].Name != "a" || c.Rows[0][2].Value != "x \" \\ \n ü 🙂" {
		t.Fatalf("a value changed under a later message: %+v", c)
	}
	for _, bad := range []string{``, `[]`, `{"type":`, `"x"`} {
		if _, err := parseWSMessage(&p, []byte(bad)); err == nil {
			t.Errorf("%q: read", bad)
		}
		if _, err := parsePipeline(&p, []byte(bad)); err == nil {
			t.Errorf("%q: read as a pipeline answer", bad)
		}
	}
}

// FuzzCodecAgreesWithEncodingJSON: any text, integer and float a batch can
// carry says on the wire what encoding/json said, and an answer carrying
// them reads back as encoding/json read it.
//
//	go test ./wasm-host/ledger -run '^$' -fuzz FuzzCodecAgreesWithEncodingJSON -fuzztime 60s
func FuzzCodecAgreesWithEncodingJSON(f *testing.F) {
	f.Add("SELECT ?", "plain", int64(0), 0.0, []byte{})
	f.Add("INSERT \"q\" \\ \n", "\x00\x1f\x7f <>& \u2028\u2029 \xff\xfe \xed\xa0\x80", int64(-1<<63), 1e-7, []byte{0, 0xff})
	f.Add("", "🙂\xc3(", int64(1<<53+1), -1e21, []byte("blob"))
	f.Fuzz(func(t *testing.T, sql, text string, n int64, x float64, blob []byte) {
		steps := []hranaStep{{Stmt: hranaStmt{SQL: sql, WantRows: n%2 == 0, Args: []hranaValue{
			toHrana(abi.String(text)), toHrana(abi.Int64(n)), toHrana(abi.Float64(x)), toHrana(abi.Bytes(blob)), toHrana(abi.Value{}),
		}}, Condition: &hranaCond{Type: "not", Cond: &hranaCond{Type: "ok", Step: new(int)}}}}
		want, werr := json.Marshal(wsClientRq{Type: "request", RequestID: n, Request: wsRequest{Type: "batch", StreamID: 1, Batch: &hranaBatch{Steps: steps}}})
		got, gerr := appendWSRequest(nil, n, steps)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("encoding/json error %v, ours %v", werr, gerr)
		}
		if werr != nil {
			return
		}
		if g, w := generic(t, got), generic(t, want); !reflect.DeepEqual(g, w) {
			t.Fatalf("request differs\n got %s\nwant %s", got, want)
		}
		// The same values as a server would answer them.
		rs := hranaBatchRs{Type: "batch", Result: hranaBatchResult{
			StepResults: []*hranaStmtResult{{Cols: []hranaCol{{Name: &text, Decltype: &sql}}, Rows: [][]hranaValue{steps[0].Stmt.Args}, AffectedRowCount: n}},
			StepErrors:  []*hranaError{{Message: text, Code: sql}},
		}}
		answer, err := json.Marshal(wsServerMsg{Type: "response_ok", RequestID: n, Response: &rs})
		if err != nil {
			t.Fatal(err)
		}
		var wantMsg wsServerMsg
		if err := json.Unmarshal(answer, &wantMsg); err != nil {
			t.Fatal(err)
		}
		var p fastjson.Parser
		gotMsg, err := parseWSMessage(&p, answer)
		if err != nil {
			t.Fatalf("%v: %s", err, answer)
		}
		if !reflect.DeepEqual(gotMsg, &wantMsg) {
			t.Fatalf("answer read differently\n%s\n got %+v\nwant %+v", answer, gotMsg.Response.Result.StepResults[0], wantMsg.Response.Result.StepResults[0])
		}
	})
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
