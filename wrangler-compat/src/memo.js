// The `memo` import's store on Workers (schema/abi.md, "Memo"): hints a
// function keeps across its calls and instances in this isolate, as the
// wazero host keeps them per process (wasm-host/runtime/memo.go). Entries
// are scoped by function, live for the time the guest gives them, and the
// store is bounded: when it is full, expired entries go first, then the
// oldest. Nothing in it is the record.

import * as abi from "./abi.js";

export const MEMO_GET = 1;
export const MEMO_PUT = 2;
export const MEMO_ADD = 3;

const MAX_ENTRIES = 1 << 14;
const MAX_KEY = 256;
const MAX_VALUE = 256;

const EMPTY = new Uint8Array(0);

export class MemoStore {
  constructor(max = MAX_ENTRIES, now = () => Date.now()) {
    this.entries = new Map(); // function + "\0" + key -> { value, count, until }
    this.max = max;
    this.now = now;
  }

  /** op runs one decoded memo request of function's and returns its result bytes. */
  op(fn, m) {
    if (m.key.length > MAX_KEY || (m.value?.length ?? 0) > MAX_VALUE) return EMPTY;
    const k = fn + "\0" + m.key;
    const now = this.now();
    let e = this.entries.get(k);
    if (e && now >= e.until) {
      this.entries.delete(k);
      e = undefined;
    }
    switch (m.op) {
      case MEMO_GET:
        return e ? e.value : EMPTY;
      case MEMO_PUT:
        if (m.value.length === 0) return EMPTY;
        e = this.#insert(k, now, e);
        e.value = m.value;
        e.count = 0n;
        e.until = now + m.ttlMillis;
        return EMPTY;
      case MEMO_ADD: {
        e = this.#insert(k, now, e);
        e.count = BigInt.asIntN(64, e.count + m.delta);
        const b = new Uint8Array(8);
        new DataView(b.buffer).setBigInt64(0, e.count, true);
        e.value = b;
        e.until = now + m.ttlMillis;
        return b;
      }
    }
    return EMPTY;
  }

  #insert(k, now, e) {
    if (e) return e;
    if (this.entries.size >= this.max) {
      for (const [key, old] of this.entries) if (now >= old.until) this.entries.delete(key);
      for (const key of this.entries.keys()) {
        if (this.entries.size < this.max) break;
        this.entries.delete(key); // a Map iterates oldest first
      }
    }
    const fresh = { value: EMPTY, count: 0n, until: 0 };
    this.entries.set(k, fresh);
    return fresh;
  }
}

/** decodeMemoRequest reads a MemoRequest (shared/abi/memo.go). */
export function decodeMemoRequest(bytes) {
  const r = new abi.Reader(bytes);
  const m = { op: r.u8(), ttlMillis: r.u32(), key: r.str(), value: EMPTY, delta: 0n };
  switch (m.op) {
    case MEMO_GET:
      break;
    case MEMO_PUT:
      m.value = r.bytes();
      break;
    case MEMO_ADD:
      m.delta = r.i64();
      break;
    default:
      throw new abi.WireError("unknown memo operation");
  }
  r.done();
  return m;
}

/** The isolate's store, shared by its instances. */
export const memo = new MemoStore();
