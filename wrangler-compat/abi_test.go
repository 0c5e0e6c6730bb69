//go:build linux

package wranglercompat_test

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"decisiongateway/shared/abi"
)

// abiCase is one message encoded by the Go reference encoder.
type abiCase struct {
	name, typ string
	msg       []byte
}

func abiCases() []abiCase {
	hdrs := abi.Headers{{Name: "content-type", Value: "application/json"}, {Name: "x-dup", Value: "1"}, {Name: "x-dup", Value: "2 ünïcode"}}
	values := []abi.Value{
		abi.NullValue(), abi.Int64(0), abi.Int64(-1), abi.Int64(math.MaxInt64), abi.Int64(math.MinInt64),
		abi.Float64(0.1), abi.Float64(math.Inf(-1)), abi.Float64(math.Copysign(0, -1)),
		abi.String(""), abi.String("naïve ☃"), abi.Bytes([]byte{0, 1, 2, 255}), abi.Bytes(nil),
	}
	return []abiCase{
		{"request", "Request", abi.AppendRequest(nil, &abi.Request{
			Method: "POST", Path: "/v1/service", Query: "a=1&b=%20", ClientAddr: "203.0.113.7",
			RequestID: "0123456789abcdef0123456789abcdef", Headers: hdrs, Body: []byte(`{"q":"☃"}`),
		})},
		{"empty request", "Request", abi.AppendRequest(nil, &abi.Request{})},
		{"response", "Response", abi.AppendResponse(nil, &abi.Response{Status: 429, Headers: hdrs, Body: []byte("x")})},
		{"await fetch", "Response", abi.AppendResponse(nil, &abi.Response{Await: &abi.Await{State: []byte{1, 0, 255}, Fetch: &abi.FetchRequest{
			Method: "POST", URL: "https://upstream.test/v1/service", Headers: hdrs, Body: []byte("{}"), TimeoutMS: 9, MaxBytes: 10, Credential: abi.CredentialUpstream,
		}}})},
		{"await ai", "Response", abi.AppendResponse(nil, &abi.Response{Await: &abi.Await{State: []byte("s"), AI: &abi.AIRequest{Model: "@cf/x", Input: []byte(`{}`)}}})},
		{"resumed fetch", "Request", abi.AppendRequest(nil, &abi.Request{Method: "POST", Path: "/v1/service", Body: []byte("{}"),
			Resume: &abi.Resume{State: []byte{7}, Fetch: &abi.FetchResponse{Status: 200, Headers: hdrs, Body: []byte("ok")}}})},
		{"resumed ai error", "Request", abi.AppendRequest(nil, &abi.Request{Method: "POST",
			Resume: &abi.Resume{State: nil, AI: &abi.AIResponse{ErrKind: abi.FetchErrTimeout, ErrMsg: "slow"}}})},
		{"fetch request", "FetchRequest", abi.AppendFetchRequest(nil, &abi.FetchRequest{
			Method: "POST", URL: "https://upstream.test/v1/service", Headers: hdrs, Body: []byte("{}"),
			TimeoutMS: 4000, MaxBytes: 1 << 20, Credential: abi.CredentialUpstream,
		})},
		{"fetch response", "FetchResponse", abi.AppendFetchResponse(nil, &abi.FetchResponse{Status: 200, Headers: hdrs, Body: []byte("ok")})},
		{"fetch error", "FetchResponse", abi.AppendFetchResponse(nil, &abi.FetchResponse{ErrKind: abi.FetchErrTimeout, ErrMsg: "slow"})},
		{"ai request", "AIRequest", abi.AppendAIRequest(nil, &abi.AIRequest{Model: "@cf/x", Input: []byte(`{"prompt":"p"}`)})},
		{"ai response", "AIResponse", abi.AppendAIResponse(nil, &abi.AIResponse{Status: 200, Output: []byte(`{"response":"r"}`)})},
		{"log record", "LogRecord", abi.AppendLogRecord(nil, &abi.LogRecord{Level: abi.LogWarn, Message: "m", Attrs: hdrs})},
		{"batch", "Batch", abi.AppendBatch(nil, &abi.Batch{Steps: []abi.Statement{
			{SQL: "SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?", Args: values},
			{SQL: "UPDATE t SET x = 1", When: []abi.Cond{{Step: 0, Test: abi.Truthy}, {Step: 0, Test: abi.NotAffected}}},
			{SQL: "DELETE FROM t", When: []abi.Cond{{Step: 1, Test: abi.Affected}, {Step: 1, Test: abi.Falsy}}},
		}})},
		{"empty batch", "Batch", abi.AppendBatch(nil, &abi.Batch{})},
		{"batch result", "BatchResult", abi.AppendBatchResult(nil, &abi.BatchResult{Steps: []abi.StepResult{
			{Executed: true, RowsAffected: 3, LastInsertID: math.MaxInt64, Columns: []string{"a", "b"},
				Rows: [][]abi.Value{{values[3], values[9]}, {values[10], values[0]}}},
			{Executed: false},
			{Executed: true, RowsAffected: -1, LastInsertID: -7},
		}})},
		{"batch error", "BatchResult", abi.AppendBatchResult(nil, &abi.BatchResult{Err: "database is locked"})},
	}
}

type driverAnswer struct {
	Hex   string `json:"hex"`
	Error string `json:"error"`
}

// runABIDriver sends each case through test/abi-driver.mjs and returns its
// answers in order.
func runABIDriver(t *testing.T, cases []abiCase) []driverAnswer {
	t.Helper()
	var in strings.Builder
	for _, c := range cases {
		line, _ := json.Marshal(map[string]string{"type": c.typ, "hex": hex.EncodeToString(c.msg)})
		in.Write(line)
		in.WriteByte('\n')
	}
	out := strings.Split(strings.TrimSpace(runNode(t, in.String(), "test/abi-driver.mjs")), "\n")
	if len(out) != len(cases) {
		t.Fatalf("driver answered %d lines for %d messages:\n%s", len(out), len(cases), strings.Join(out, "\n"))
	}
	answers := make([]driverAnswer, len(out))
	for i, line := range out {
		if err := json.Unmarshal([]byte(line), &answers[i]); err != nil {
			t.Fatalf("driver line %q: %v", line, err)
		}
	}
	return answers
}

// TestJSCodecRoundTripsGoMessages decodes every message kind, as encoded by
// shared/abi, with src/abi.js and encodes it again: the bytes must be the
// same, or the two hosts would not speak the same ABI.
func TestJSCodecRoundTripsGoMessages(t *testing.T) {
	cases := abiCases()
	for i, a := range runABIDriver(t, cases) {
		c := cases[i]
		if a.Error != "" {
			t.Errorf("%s: abi.js refused a valid message: %s", c.name, a.Error)
			continue
		}
		if got := hex.EncodeToString(c.msg); a.Hex != got {
			t.Errorf("%s: re-encoded\n%s\nwant\n%s", c.name, a.Hex, got)
		}
	}
}

// TestJSCodecRejectsWhatGoRejects checks that abi.js refuses truncated
// messages, trailing bytes and counts larger than the message, as the Go
// decoder does, so a corrupt message fails alike on both hosts.
func TestJSCodecRejectsWhatGoRejects(t *testing.T) {
	var bad []abiCase
	for _, c := range abiCases() {
		if len(c.msg) > 0 {
			bad = append(bad, abiCase{c.name + " truncated", c.typ, c.msg[:len(c.msg)-1]})
		}
		bad = append(bad, abiCase{c.name + " with a trailing byte", c.typ, append(append([]byte(nil), c.msg...), 0)})
	}
	// A header count of 2^32-1 in an otherwise empty Response.
	bad = append(bad, abiCase{"huge header count", "Response", []byte{200, 0, 0, 0, 255, 255, 255, 255}})
	// A value of an unknown kind.
	bad = append(bad, abiCase{"unknown value kind", "Batch", []byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 0}})

	answers := runABIDriver(t, bad)
	for i, c := range bad {
		if answers[i].Error == "" {
			t.Errorf("%s: abi.js accepted it", c.name)
		}
		if err := goDecode(c.typ, c.msg); err == nil {
			t.Errorf("%s: the Go decoder accepted it, so the case is wrong", c.name)
		}
	}
}

func goDecode(typ string, b []byte) error {
	var err error
	switch typ {
	case "Request":
		_, err = abi.DecodeRequest(b)
	case "Response":
		_, err = abi.DecodeResponse(b)
	case "FetchRequest":
		_, err = abi.DecodeFetchRequest(b)
	case "FetchResponse":
		_, err = abi.DecodeFetchResponse(b)
	case "AIRequest":
		_, err = abi.DecodeAIRequest(b)
	case "AIResponse":
		_, err = abi.DecodeAIResponse(b)
	case "LogRecord":
		_, err = abi.DecodeLogRecord(b)
	case "Batch":
		_, err = abi.DecodeBatch(b)
	case "BatchResult":
		_, err = abi.DecodeBatchResult(b)
	}
	return err
}
