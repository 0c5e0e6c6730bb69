// The wire format of the host ABI (schema/abi.md), the JavaScript twin of the
// Go package shared/abi. Both sides must agree byte for byte: the Go test
// abi_test.go feeds messages encoded by Go through this file and back.
//
// Little-endian throughout. A `str` or `bytes` field is a u32 length and that
// many bytes; `headers` is a u32 count of (name, value) strings. u64 fields
// are BigInt here so 64-bit rowids and counters survive unchanged.

export const ABI_VERSION = 2;

/** Kinds of outbound call an Await asks for (and a Resume answers). */
export const Call = Object.freeze({ None: 0, Fetch: 1, AI: 2 });

/** Kinds of a SQL `value` on the wire. */
export const Kind = Object.freeze({ Null: 0, Integer: 1, Real: 2, Text: 3, Blob: 4 });

/** Tests of a batch step's condition against an earlier step. */
export const Cond = Object.freeze({ Affected: 1, NotAffected: 2, Truthy: 3, Falsy: 4 });

const utf8 = new TextEncoder();
// Not fatal: a Go string may hold any bytes, and a log line or header with a
// stray byte should still arrive rather than fail the whole message.
const utf8Decoder = new TextDecoder("utf-8");

/** Raised for a message that is truncated, has trailing bytes or is corrupt. */
export class WireError extends Error {
  constructor(message) {
    super(`abi: ${message}`);
    this.name = "WireError";
  }
}

/**
 * Writer appends wire fields to a growing buffer. finish() returns a view of
 * exactly the bytes written.
 */
export class Writer {
  constructor(capacity = 256) {
    this.buf = new Uint8Array(capacity);
    this.view = new DataView(this.buf.buffer);
    this.len = 0;
  }

  #reserve(n) {
    const need = this.len + n;
    if (need <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < need) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  u8(v) {
    this.#reserve(1);
    this.buf[this.len++] = v;
  }

  u32(v) {
    this.#reserve(4);
    this.view.setUint32(this.len, v >>> 0, true);
    this.len += 4;
  }

  /** v is a BigInt (or a safe integer Number); negative values wrap. */
  u64(v) {
    this.#reserve(8);
    this.view.setBigUint64(this.len, BigInt.asUintN(64, BigInt(v)), true);
    this.len += 8;
  }

  f64(v) {
    this.#reserve(8);
    this.view.setFloat64(this.len, v, true);
    this.len += 8;
  }

  bytes(p) {
    const b = p ?? new Uint8Array(0);
    this.u32(b.length);
    this.#reserve(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
  }

  str(s) {
    this.bytes(utf8.encode(s ?? ""));
  }

  headers(h) {
    const list = h ?? [];
    this.u32(list.length);
    for (const [name, value] of list) {
      this.str(name);
      this.str(value);
    }
  }

  value(v) {
    this.u8(v.kind);
    switch (v.kind) {
      case Kind.Null:
        break;
      case Kind.Integer:
        this.u64(v.value);
        break;
      case Kind.Real:
        this.f64(v.value);
        break;
      case Kind.Text:
        this.str(v.value);
        break;
      case Kind.Blob:
        this.bytes(v.value);
        break;
      default:
        throw new WireError(`unknown value kind ${v.kind}`);
    }
  }

  finish() {
    return this.buf.subarray(0, this.len);
  }
}

/**
 * Reader consumes wire fields and throws WireError on the first short read.
 * done() rejects trailing bytes, as the Go decoder does.
 */
export class Reader {
  constructor(bytes) {
    this.buf = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.off = 0;
  }

  get remaining() {
    return this.buf.length - this.off;
  }

  #take(n) {
    if (n < 0 || n > this.remaining) throw new WireError("truncated message");
    const p = this.buf.subarray(this.off, this.off + n);
    this.off += n;
    return p;
  }

  u8() {
    return this.#take(1)[0];
  }

  u32() {
    this.#take(4);
    return this.view.getUint32(this.off - 4, true);
  }

  /** Signed, as the Go side stores rowids and integers as int64. */
  i64() {
    this.#take(8);
    return this.view.getBigInt64(this.off - 8, true);
  }

  f64() {
    this.#take(8);
    return this.view.getFloat64(this.off - 8, true);
  }

  /** A copy, so the result outlives the guest memory it was read from. */
  bytes() {
    return this.#take(this.u32()).slice();
  }

  str() {
    return utf8Decoder.decode(this.#take(this.u32()));
  }

  /**
   * A count of elements that each need at least min bytes. A count the rest
   * of the message cannot hold is corrupt and must not drive an allocation.
   */
  count(min) {
    const n = this.u32();
    if (n * min > this.remaining) throw new WireError("truncated message");
    return n;
  }

  headers() {
    const n = this.count(8);
    const h = new Array(n);
    for (let i = 0; i < n; i++) h[i] = [this.str(), this.str()];
    return h;
  }

  value() {
    const kind = this.u8();
    switch (kind) {
      case Kind.Null:
        return { kind, value: null };
      case Kind.Integer:
        return { kind, value: this.i64() };
      case Kind.Real:
        return { kind, value: this.f64() };
      case Kind.Text:
        return { kind, value: this.str() };
      case Kind.Blob:
        return { kind, value: this.bytes() };
      default:
        throw new WireError("unknown value kind");
    }
  }

  done() {
    if (this.remaining !== 0) throw new WireError("trailing bytes after message");
  }
}

function decodeWith(bytes, read) {
  const r = new Reader(bytes);
  const msg = read(r);
  r.done();
  return msg;
}

// Headers travel as arrays of [name, value] pairs: order is kept and a name
// may repeat, which a Headers object or a plain map would lose.

export function encodeRequest(q) {
  const w = new Writer(256 + (q.body?.length ?? 0) + (q.resume?.state?.length ?? 0));
  w.str(q.method);
  w.str(q.path);
  w.str(q.query);
  w.str(q.clientAddr);
  w.str(q.requestId);
  w.headers(q.headers);
  w.bytes(q.body);
  writeResume(w, q.resume);
  return w.finish();
}

export function decodeRequest(bytes) {
  return decodeWith(bytes, (r) => ({
    method: r.str(),
    path: r.str(),
    query: r.str(),
    clientAddr: r.str(),
    requestId: r.str(),
    headers: r.headers(),
    body: r.bytes(),
    resume: readResume(r),
  }));
}

// A Response may instead be an Await: the function asks the host to make
// one outbound call and to call it again with the result in the Request's
// Resume (schema/abi.md, "Awaiting"). Both travel as a u8 call kind, then
// the function's state and the call's request or result fields.

export function encodeResponse(p) {
  const w = new Writer(64 + (p.body?.length ?? 0));
  w.u32(p.status);
  w.headers(p.headers);
  w.bytes(p.body);
  writeAwait(w, p.await);
  return w.finish();
}

export function decodeResponse(bytes) {
  return decodeWith(bytes, (r) => ({ status: r.u32(), headers: r.headers(), body: r.bytes(), await: readAwait(r) }));
}

function writeAwait(w, a) {
  if (a?.fetch) {
    w.u8(Call.Fetch);
    w.bytes(a.state);
    writeFetchRequest(w, a.fetch);
  } else if (a?.ai) {
    w.u8(Call.AI);
    w.bytes(a.state);
    writeAIRequest(w, a.ai);
  } else {
    w.u8(Call.None);
  }
}

function readAwait(r) {
  const kind = r.u8();
  if (kind === Call.None) return null;
  const state = r.bytes();
  if (kind === Call.Fetch) return { state, fetch: readFetchRequest(r) };
  if (kind === Call.AI) return { state, ai: readAIRequest(r) };
  throw new WireError(`unknown call kind ${kind}`);
}

function writeResume(w, s) {
  if (s?.fetch) {
    w.u8(Call.Fetch);
    w.bytes(s.state);
    writeFetchResponse(w, s.fetch);
  } else if (s?.ai) {
    w.u8(Call.AI);
    w.bytes(s.state);
    writeAIResponse(w, s.ai);
  } else {
    w.u8(Call.None);
  }
}

function readResume(r) {
  const kind = r.u8();
  if (kind === Call.None) return null;
  const state = r.bytes();
  if (kind === Call.Fetch) return { state, fetch: readFetchResponse(r) };
  if (kind === Call.AI) return { state, ai: readAIResponse(r) };
  throw new WireError(`unknown call kind ${kind}`);
}

function writeFetchRequest(w, f) {
  w.str(f.method);
  w.str(f.url);
  w.headers(f.headers);
  w.bytes(f.body);
  w.u32(f.timeoutMs ?? 0);
  w.u32(f.maxBytes ?? 0);
  w.str(f.credential);
}

function readFetchRequest(r) {
  return {
    method: r.str(),
    url: r.str(),
    headers: r.headers(),
    body: r.bytes(),
    timeoutMs: r.u32(),
    maxBytes: r.u32(),
    credential: r.str(),
  };
}

export function encodeFetchRequest(f) {
  const w = new Writer(128 + (f.body?.length ?? 0));
  writeFetchRequest(w, f);
  return w.finish();
}

export function decodeFetchRequest(bytes) {
  return decodeWith(bytes, readFetchRequest);
}

function writeFetchResponse(w, f) {
  w.u32(f.status ?? 0);
  w.headers(f.headers);
  w.bytes(f.body);
  w.str(f.errKind);
  w.str(f.errMsg);
}

function readFetchResponse(r) {
  return {
    status: r.u32(),
    headers: r.headers(),
    body: r.bytes(),
    errKind: r.str(),
    errMsg: r.str(),
  };
}

export function encodeFetchResponse(f) {
  const w = new Writer(64 + (f.body?.length ?? 0));
  writeFetchResponse(w, f);
  return w.finish();
}

export function decodeFetchResponse(bytes) {
  return decodeWith(bytes, readFetchResponse);
}

function writeAIRequest(w, a) {
  w.str(a.model);
  w.bytes(a.input);
}

function readAIRequest(r) {
  return { model: r.str(), input: r.bytes() };
}

export function encodeAIRequest(a) {
  const w = new Writer(64 + (a.input?.length ?? 0));
  writeAIRequest(w, a);
  return w.finish();
}

export function decodeAIRequest(bytes) {
  return decodeWith(bytes, readAIRequest);
}

function writeAIResponse(w, a) {
  w.u32(a.status ?? 0);
  w.bytes(a.output);
  w.str(a.errKind);
  w.str(a.errMsg);
}

function readAIResponse(r) {
  return {
    status: r.u32(),
    output: r.bytes(),
    errKind: r.str(),
    errMsg: r.str(),
  };
}

export function encodeAIResponse(a) {
  const w = new Writer(64 + (a.output?.length ?? 0));
  writeAIResponse(w, a);
  return w.finish();
}

export function decodeAIResponse(bytes) {
  return decodeWith(bytes, readAIResponse);
}

export function encodeLogRecord(l) {
  const w = new Writer();
  w.u8(l.level);
  w.str(l.message);
  w.headers(l.attrs);
  return w.finish();
}

export function decodeLogRecord(bytes) {
  return decodeWith(bytes, (r) => ({ level: r.u8(), message: r.str(), attrs: r.headers() }));
}

/**
 * A Batch is { steps: [{ sql, args: [value], when: [{ step, test }] }] }.
 * The minimum sizes given to count() are those of the Go decoder, so both
 * refuse the same corrupt counts.
 */
export function encodeBatch(b) {
  const w = new Writer();
  w.u32(b.steps.length);
  for (const s of b.steps) {
    w.str(s.sql);
    w.u32(s.args.length);
    for (const a of s.args) w.value(a);
    w.u32(s.when.length);
    for (const c of s.when) {
      w.u32(c.step);
      w.u8(c.test);
    }
  }
  return w.finish();
}

export function decodeBatch(bytes) {
  return decodeWith(bytes, (r) => {
    const n = r.count(12);
    const steps = new Array(n);
    for (let i = 0; i < n; i++) {
      const sql = r.str();
      const args = new Array(r.count(1));
      for (let j = 0; j < args.length; j++) args[j] = r.value();
      const when = new Array(r.count(5));
      for (let j = 0; j < when.length; j++) when[j] = { step: r.u32(), test: r.u8() };
      steps[i] = { sql, args, when };
    }
    return { steps };
  });
}

/**
 * A BatchResult is { error, steps: [{ executed, rowsAffected, lastInsertId,
 * columns, rows }] } with BigInt counters. When error is set, steps is empty.
 */
export function encodeBatchResult(b) {
  const w = new Writer();
  w.str(b.error);
  w.u32(b.steps.length);
  for (const s of b.steps) {
    w.u8(s.executed ? 1 : 0);
    w.u64(s.rowsAffected);
    w.u64(s.lastInsertId);
    w.u32(s.columns.length);
    for (const c of s.columns) w.str(c);
    w.u32(s.rows.length);
    for (const row of s.rows) for (const v of row) w.value(v);
  }
  return w.finish();
}

export function decodeBatchResult(bytes) {
  return decodeWith(bytes, (r) => {
    const error = r.str();
    const n = r.count(25);
    const steps = new Array(n);
    for (let i = 0; i < n; i++) {
      const executed = r.u8() === 1;
      const rowsAffected = r.i64();
      const lastInsertId = r.i64();
      const columns = new Array(r.count(4));
      for (let j = 0; j < columns.length; j++) columns[j] = r.str();
      const nr = r.count(columns.length);
      // As in Go: rows are only meaningful with columns; a row count with no
      // columns carries no cells and decodes as no rows.
      const rows = [];
      if (columns.length > 0) {
        for (let j = 0; j < nr; j++) {
          const row = new Array(columns.length);
          for (let k = 0; k < row.length; k++) row[k] = r.value();
          rows.push(row);
        }
      }
      steps[i] = { executed, rowsAffected, lastInsertId, columns, rows };
    }
    return { error, steps };
  });
}

/** Whether SQL would treat a result cell as true (shared/abi Value.Truthy). */
export function truthy(v) {
  switch (v?.kind) {
    case Kind.Integer:
      return v.value !== 0n;
    case Kind.Real:
      return v.value !== 0;
    case Kind.Text:
      return v.value !== "" && v.value !== "0";
    case Kind.Blob:
      return v.value.length > 0;
    default:
      return false;
  }
}

/**
 * Whether condition c holds given the results of the steps before it
 * (shared/abi Cond.Holds). A condition on a later or unknown step is false.
 */
export function holds(c, done) {
  if (c.step < 0 || c.step >= done.length) return false;
  const s = done[c.step];
  const first = s.rows.length > 0 && s.rows[0].length > 0 ? s.rows[0][0] : null;
  switch (c.test) {
    case Cond.Affected:
      return s.executed && s.rowsAffected > 0n;
    case Cond.NotAffected:
      return !s.executed || s.rowsAffected === 0n;
    case Cond.Truthy:
      return s.executed && truthy(first);
    case Cond.Falsy:
      return !s.executed || !truthy(first);
    default:
      return false;
  }
}
