package runtime

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"decisiongateway/shared/abi"
)

func TestMemoStore(t *testing.T) {
	now := time.Unix(1000, 0)
	s := newMemoStore()
	s.now = func() time.Time { return now }
	get := func(fn, key string) string {
		return string(s.do(fn, &abi.MemoRequest{Op: abi.MemoGet, Key: key}, nil))
	}
	add := func(fn, key string, d int64, ttl uint32) int64 {
		b := s.do(fn, &abi.MemoRequest{Op: abi.MemoAdd, Key: key, Delta: d, TTLMillis: ttl}, nil)
		if len(b) != 8 {
			t.Fatalf("add answered %d bytes", len(b))
		}
		return int64(binary.LittleEndian.Uint64(b))
	}
	s.do("decide", &abi.MemoRequest{Op: abi.MemoPut, Key: "k", Value: []byte("v1"), TTLMillis: 1000}, nil)
	if got := get("decide", "k"); got != "v1" {
		t.Fatalf("get %q", got)
	}
	if got := get("playground", "k"); got != "" {
		t.Fatalf("another function read %q", got)
	}
	now = now.Add(time.Second)
	if got := get("decide", "k"); got != "" {
		t.Fatalf("expired entry read %q", got)
	}
	if n := add("decide", "n", 2, 1000); n != 2 {
		t.Fatalf("add %d", n)
	}
	if n := add("decide", "n", -3, 1000); n != -1 {
		t.Fatalf("add %d", n)
	}
	now = now.Add(time.Second)
	if n := add("decide", "n", 1, 1000); n != 1 {
		t.Fatalf("add after expiry %d", n)
	}
	// Too large to keep: ignored, nothing found.
	s.do("decide", &abi.MemoRequest{Op: abi.MemoPut, Key: "big", Value: []byte(strings.Repeat("x", memoMaxValue+1)), TTLMillis: 1000}, nil)
	if got := get("decide", "big"); got != "" {
		t.Fatal("kept a value over the limit")
	}
	// Bounded: a full store makes room, expired entries first.
	s.max = 3
	s.entries = map[memoKey]*memoEntry{}
	s.do("decide", &abi.MemoRequest{Op: abi.MemoPut, Key: "old", Value: []byte("o"), TTLMillis: 10}, nil)
	s.do("decide", &abi.MemoRequest{Op: abi.MemoPut, Key: "a", Value: []byte("a"), TTLMillis: 5000}, nil)
	s.do("decide", &abi.MemoRequest{Op: abi.MemoPut, Key: "b", Value: []byte("b"), TTLMillis: 5000}, nil)
	now = now.Add(time.Second)
	s.do("decide", &abi.MemoRequest{Op: abi.MemoPut, Key: "c", Value: []byte("c"), TTLMillis: 5000}, nil)
	if len(s.entries) != 3 || get("decide", "a") != "a" || get("decide", "b") != "b" || get("decide", "c") != "c" {
		t.Fatalf("after making room: %d entries", len(s.entries))
	}
	s.do("decide", &abi.MemoRequest{Op: abi.MemoPut, Key: "d", Value: []byte("d"), TTLMillis: 5000}, nil)
	if len(s.entries) != 3 || get("decide", "d") != "d" {
		t.Fatalf("a full store took no new entry: %d entries", len(s.entries))
	}
}

func TestMemoRequestRoundTrip(t *testing.T) {
	for _, m := range []abi.MemoRequest{
		{Op: abi.MemoGet, Key: "k"},
		{Op: abi.MemoPut, Key: "k", Value: []byte{1, 2}, TTLMillis: 7},
		{Op: abi.MemoAdd, Key: "k", Delta: -5, TTLMillis: 9},
	} {
		got, err := abi.DecodeMemoRequest(abi.AppendMemoRequest(nil, &m))
		if err != nil || got.Op != m.Op || got.Key != m.Key || string(got.Value) != string(m.Value) || got.Delta != m.Delta || got.TTLMillis != m.TTLMillis {
			t.Fatalf("%+v -> %+v, %v", m, got, err)
		}
	}
	if _, err := abi.DecodeMemoRequest([]byte{9, 0, 0, 0, 0, 0, 0, 0, 0}); err == nil {
		t.Fatal("an unknown operation decoded")
	}
}
