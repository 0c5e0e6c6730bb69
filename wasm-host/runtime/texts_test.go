package runtime

import (
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"decisiongateway/shared/abi"
)

// A text seen before comes back as the kept copy, without allocating; the
// table stops growing at maxTexts and keeps no text over maxTextLen, and
// every text still comes back spelled as sent.
func TestTextsKeepOneCopyWithinBounds(t *testing.T) {
	var ts texts
	sql := []byte("SELECT balance FROM accounts WHERE id = ?")
	first := ts.get(sql)
	again := ts.get(append([]byte(nil), sql...))
	if first != string(sql) || unsafe.StringData(first) != unsafe.StringData(again) {
		t.Fatalf("%q then %q: not one copy", first, again)
	}
	if n := testing.AllocsPerRun(100, func() { ts.get(sql) }); n != 0 {
		t.Fatalf("a kept text allocated %v times", n)
	}
	for i := 0; len(ts.m.Load()) < maxTexts; i++ {
		ts.get([]byte("SELECT " + strconv.Itoa(i)))
	}
	if got := ts.get([]byte("SELECT 'past the bound'")); got != "SELECT 'past the bound'" || len(ts.m.Load()) != maxTexts {
		t.Fatalf("past the bound: %q, %d kept", got, len(ts.m.Load()))
	}
	long := "SELECT '" + strings.Repeat("x", maxTextLen) + "'"
	if got := ts.get([]byte(long)); got != long {
		t.Fatal("a long text came back changed")
	}
	if _, kept := ts.m.Load()[long]; kept {
		t.Fatal("a text over maxTextLen was kept")
	}
}

// Batches decoded through the table carry the same statements as decoded
// alone.
func TestBatchDecodedWithTexts(t *testing.T) {
	b := abi.Batch{Steps: []abi.Statement{
		{SQL: "INSERT INTO t VALUES (?)", Args: []abi.Value{abi.Int64(1)}},
		{SQL: "SELECT * FROM t", When: []abi.Cond{{Step: 0, Test: abi.Affected}}},
	}}
	wire := abi.AppendBatch(nil, &b)
	var ts texts
	for range 2 {
		got, err := abi.DecodeBatchTexts(wire, ts.get)
		want, _ := abi.DecodeBatch(wire)
		if err != nil || len(got.Steps) != 2 || got.Steps[0].SQL != want.Steps[0].SQL || got.Steps[1].SQL != want.Steps[1].SQL ||
			got.Steps[0].Args[0].Int != want.Steps[0].Args[0].Int || got.Steps[1].When[0] != want.Steps[1].When[0] {
			t.Fatalf("%+v, %v; want %+v", got, err, want)
		}
	}
}
