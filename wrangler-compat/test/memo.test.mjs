// The Workers side of the `memo` import (src/memo.js); the wazero side is
// wasm-host/runtime/memo_test.go.
import { test } from "node:test";
import assert from "node:assert/strict";
import { MemoStore, decodeMemoRequest, MEMO_GET, MEMO_PUT, MEMO_ADD } from "../src/memo.js";

test("memo: entries per function, expiring, counters", () => {
  let now = 1000;
  const s = new MemoStore(3, () => now);
  s.op("decide", { op: MEMO_PUT, ttlMillis: 1000, key: "k", value: new Uint8Array([7]) });
  assert.deepEqual([...s.op("decide", { op: MEMO_GET, key: "k" })], [7]);
  assert.equal(s.op("playground", { op: MEMO_GET, key: "k" }).length, 0);
  now += 1000;
  assert.equal(s.op("decide", { op: MEMO_GET, key: "k" }).length, 0);
  const n = (b) => new DataView(b.buffer, b.byteOffset).getBigInt64(0, true);
  assert.equal(n(s.op("decide", { op: MEMO_ADD, ttlMillis: 1000, key: "n", delta: 2n })), 2n);
  assert.equal(n(s.op("decide", { op: MEMO_ADD, ttlMillis: 1000, key: "n", delta: -3n })), -1n);
  // Full: room is made, expired entries first, then the oldest.
  s.op("decide", { op: MEMO_PUT, ttlMillis: 5000, key: "a", value: new Uint8Array([1]) });
  s.op("decide", { op: MEMO_PUT, ttlMillis: 5000, key: "b", value: new Uint8Array([2]) });
  s.op("decide", { op: MEMO_PUT, ttlMillis: 5000, key: "c", value: new Uint8Array([3]) });
  assert.equal(s.entries.size, 3);
  assert.equal(s.op("decide", { op: MEMO_GET, key: "c" })[0], 3);
  // Too large to keep: ignored.
  s.op("decide", { op: MEMO_PUT, ttlMillis: 5000, key: "big", value: new Uint8Array(257) });
  assert.equal(s.op("decide", { op: MEMO_GET, key: "big" }).length, 0);
});

test("memo: requests as the Go side encodes them", () => {
  // shared/abi.AppendMemoRequest of {Op: MemoAdd, TTLMillis: 9, Key: "k", Delta: -5}
  const b = new Uint8Array([3, 9, 0, 0, 0, 1, 0, 0, 0, 0x6b, 0xfb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
  assert.deepEqual(decodeMemoRequest(b), { op: 3, ttlMillis: 9, key: "k", value: new Uint8Array(0), delta: -5n });
  assert.throws(() => decodeMemoRequest(new Uint8Array([9, 0, 0, 0, 0, 0, 0, 0, 0])));
});
