// The `gateway` imports of schema/abi.md on Workers, and the call into a
// module's gateway_handle.
//
// The guest sees every import as a blocking call; here they are Promises
// (fetch, the ledger, the AI binding). A decision's upstream call does not
// go through an import: the function answers with an Await, its instance
// goes back to the pool, and awaitCall below makes the call (function.js). JSPI bridges the two: each answering
// import is wrapped in WebAssembly.Suspending, which suspends the wasm stack
// until its Promise settles, and gateway_handle is wrapped in
// WebAssembly.promising, which turns the whole call into a Promise. A
// suspended instance must not be entered again before it resumes; pool.js
// guarantees that by lending an instance to one request at a time.
//
// Answering imports use the two-phase protocol of the ABI: the import returns
// the result length n and writes the result at outPtr when n <= outCap;
// otherwise the result waits here until the guest calls take(ptr, n) with a
// buffer big enough.

import * as abi from "./abi.js";
import { Wasi } from "./wasi.js";
import { Ledger } from "./ledger.js";
import { config } from "./config.js";
import { memo, decodeMemoRequest } from "./memo.js";
import { DEFAULT_MAX_BYTES, hostFetch, echoes } from "./fetch.js";
import { redact, secretsOf } from "./respond.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const LOG_LEVELS = ["debug", "info", "warn", "error"];

/** A module whose ABI version this host does not implement. */
export class VersionError extends Error {
  constructor(got) {
    super(`module exports ABI version ${got}, this host implements ${abi.ABI_VERSION}`);
    this.name = "VersionError";
  }
}

/**
 * Instance is one instantiated module with its host state. The per-request
 * context (env, request id) is set by handle() for the duration of a call.
 */
export class Instance {
  /**
   * create instantiates module and runs its _initialize. It must run inside a
   * request: the TinyGo runtime reads randomness and the clock while it
   * initialises, which workerd refuses at global scope. env is the Worker's
   * checked env: a module reads its settings while it initialises, once
   * (schema/abi.md, "Settings").
   */
  static async create(name, module, env = {}) {
    const self = new Instance(name);
    self.ctx = { env };
    const imports = {
      wasi_snapshot_preview1: self.wasi.imports(module),
      gateway: self.#gatewayImports(),
    };
    const inst = await WebAssembly.instantiate(module, imports);
    self.exports = inst.exports;
    self.wasi.bind(inst.exports.memory);
    // promising lets a Suspending import run during initialisation too. The
    // version is asked after it: TinyGo exports refuse calls before it.
    if (inst.exports._initialize) await WebAssembly.promising(inst.exports._initialize)();
    self.ctx = null;
    const version = inst.exports.gateway_abi_version?.();
    if (version !== abi.ABI_VERSION) throw new VersionError(version);
    self.handleExport = WebAssembly.promising(inst.exports.gateway_handle);
    if (inst.exports.gateway_arena) self.#openArena(inst.exports.gateway_arena());
    return self;
  }

  /**
   * openArena keeps what a call must start from: the guest's globals and the
   * heap _initialize left, [start, mark), and where TinyGo keeps its heap
   * pointer and heap end (schema/abi.md, "The arena").
   */
  #openArena(state) {
    const bytes = this.#bytes();
    const view = new DataView(bytes.buffer);
    const [start, mark, nextAddr, endAddr] = [0, 4, 8, 12].map((o) => view.getUint32(state + o, true));
    const inside = (addr) => addr >= start && addr + 4 <= mark;
    if (start > mark || mark > bytes.length || !inside(nextAddr) || !inside(endAddr) ||
        view.getUint32(nextAddr, true) !== mark) {
      throw new Error(`gateway_arena: inconsistent state start=${start} mark=${mark}`);
    }
    this.arena = { start, mark, nextAddr, endAddr, snapshot: bytes.slice(start, mark) };
  }

  /**
   * reset readies the instance for its next call: it puts back what init
   * left, zeroes what the call allocated, [mark, next), and sets the heap's
   * end to the memory's size, which the call may have grown. It returns
   * false when the guest's heap pointer cannot be trusted: the instance must
   * not be reused. The pool calls it only for an instance it keeps.
   */
  reset() {
    const a = this.arena;
    if (!a) return true;
    const bytes = this.#bytes();
    const view = new DataView(bytes.buffer);
    const next = view.getUint32(a.nextAddr, true);
    if (next < a.mark || next > bytes.length) return false;
    bytes.set(a.snapshot, a.start);
    bytes.fill(0, a.mark, next);
    view.setUint32(a.endAddr, bytes.length, true);
    return true;
  }

  constructor(name) {
    this.name = name;
    this.wasi = new Wasi(name, (line) => redact(line, secretsOf(this.#env())));
    this.exports = null;
    this.handleExport = null;
    this.arena = null; // see #openArena; null for a module without one
    this.pending = null; // the result kept for take(), at most one
    this.ctx = null;
  }

  #bytes() {
    return new Uint8Array(this.exports.memory.buffer);
  }

  /** memoryBytes is the size of the instance's linear memory. */
  memoryBytes() {
    return this.exports.memory.buffer.byteLength;
  }

  /** read copies [ptr, ptr+n) out of guest memory. */
  #read(ptr, n) {
    return this.#bytes().slice(ptr, ptr + n);
  }

  /**
   * answer delivers a result: it writes it at outPtr when it fits, keeps it
   * for take() otherwise, and returns its length either way. Guest memory is
   * looked up afresh because the import may have suspended for a long time.
   */
  #answer(result, outPtr, outCap) {
    if (result.length <= outCap) {
      this.#bytes().set(result, outPtr);
      this.pending = null;
    } else {
      this.pending = result;
    }
    return result.length;
  }

  /**
   * answering wraps an async (request bytes) -> result bytes function as a
   * Suspending import with the (reqPtr, reqLen, outPtr, outCap) -> n shape.
   * The request is copied before the first await: nothing may hold a view of
   * guest memory across a suspension.
   */
  #answering(fn) {
    return new WebAssembly.Suspending(async (reqPtr, reqLen, outPtr, outCap) => {
      const req = this.#read(reqPtr, reqLen);
      const result = await fn(req);
      return this.#answer(result, outPtr, outCap);
    });
  }

  #gatewayImports() {
    return {
      ledger: this.#answering(async (req) => {
        const batch = abi.decodeBatch(req);
        const result = await this.#ledger().exec(batch);
        return abi.encodeBatchResult(result);
      }),
      fetch: this.#answering(async (req) => {
        const r = abi.decodeFetchRequest(req);
        return abi.encodeFetchResponse(await hostFetch(r, this.#env()));
      }),
      ai: this.#answering(async (req) => {
        const r = abi.decodeAIRequest(req);
        return abi.encodeAIResponse(await runModel(r, this.#env()));
      }),
      // Settings are at hand, so config answers synchronously: no suspension.
      config: (reqPtr, reqLen, outPtr, outCap) => {
        const name = decoder.decode(this.#bytes().subarray(reqPtr, reqPtr + reqLen));
        const value = config(this.#env(), name);
        return this.#answer(encoder.encode(value), outPtr, outCap);
      },
      // Hints kept across calls (schema/abi.md, "Memo"): synchronous, in
      // this isolate's memory. A request it cannot read finds nothing.
      memo: (reqPtr, reqLen, outPtr, outCap) => {
        let result;
        try {
          result = memo.op(this.name, decodeMemoRequest(this.#read(reqPtr, reqLen)));
        } catch {
          result = new Uint8Array(0);
        }
        return this.#answer(result, outPtr, outCap);
      },
      log: (ptr, n) => this.#log(abi.decodeLogRecord(this.#read(ptr, n))),
      // Modules carry no SHA-256 of their own (schema/abi.md). WebCrypto's
      // digest is asynchronous, so this import suspends like ledger and
      // fetch; the input is copied before the await.
      sha256: new WebAssembly.Suspending(async (ptr, n, outPtr) => {
        const digest = await crypto.subtle.digest("SHA-256", this.#read(ptr, n));
        this.#bytes().set(new Uint8Array(digest), outPtr);
        return 1;
      }),
      take: (outPtr, n) => {
        const p = this.pending;
        if (p === null || p.length !== n) {
          throw new Error(`take(${n}) without a pending result of that size`);
        }
        this.#bytes().set(p, outPtr);
        this.pending = null;
      },
    };
  }

  /** The request's env, or during _initialize the pool's; empty otherwise. */
  #env() {
    return this.ctx?.env ?? {};
  }

  #ledger() {
    const env = this.#env();
    if (!env.LIBSQL_URL) {
      return { exec: async () => ({ error: "ledger: LIBSQL_URL is unset", steps: [] }) };
    }
    return ledgerFor(env.LIBSQL_URL, env.LIBSQL_AUTH_TOKEN ?? "");
  }

  #log(rec) {
    const line = {
      level: LOG_LEVELS[rec.level] ?? String(rec.level),
      msg: rec.message,
      function: this.name,
      request_id: this.ctx?.requestId ?? "",
    };
    for (const [k, v] of rec.attrs) if (!(k in line)) line[k] = v;
    const text = redact(JSON.stringify(line), secretsOf(this.#env()));
    if (rec.level >= 3) console.error(text);
    else if (rec.level === 2) console.warn(text);
    else console.log(text);
  }

  /**
   * handle runs one request through the module and returns the decoded
   * Response. ctx is { env, requestId, settings }, settings being the Set of
   * names the config import may read. It throws when the module traps;
   * the caller must then discard this instance.
   */
  async handle(request, ctx) {
    this.ctx = ctx;
    this.pending = null;
    try {
      const msg = abi.encodeRequest(request);
      const ptr = this.exports.gateway_alloc(msg.length);
      this.#bytes().set(msg, ptr);
      const packed = await this.handleExport(ptr, msg.length);
      const outPtr = Number(BigInt.asUintN(64, packed) >> 32n);
      const outLen = Number(BigInt.asUintN(32, packed));
      if (outLen === 0) throw new Error("module returned an empty response");
      return abi.decodeResponse(this.#read(outPtr, outLen));
    } finally {
      this.wasi.flush();
      this.ctx = null;
    }
  }
}

// One Ledger per LIBSQL_URL and token for the life of the isolate: it holds no
// connection, only the parsed endpoint.
let cachedLedger = null;
export function ledgerFor(url, token) {
  if (cachedLedger?.url !== url || cachedLedger?.token !== token) {
    let ledger;
    try {
      ledger = new Ledger(url, token);
    } catch (e) {
      ledger = { exec: async () => ({ error: `ledger: ${e.message}`, steps: [] }) };
    }
    cachedLedger = { url, token, ledger };
  }
  return cachedLedger.ledger;
}

/**
 * awaitCall makes the outbound call a function handed over with an Await
 * (schema/abi.md, "Awaiting") while no instance waits on it, and returns the
 * Resume to call the function again with.
 */
export async function awaitCall(a, env, until) {
  if (a.fetch) return { state: a.state, fetch: await hostFetch(a.fetch, env) };
  if (a.ai) return { state: a.state, ai: await runModel(a.ai, env, until) };
  return { state: a.state, fetch: { status: 0, headers: [], body: null, errKind: "denied", errMsg: "an await names no call" } };
}

/** TIMED_OUT stands for a binding that had not answered by its time. */
const TIMED_OUT = Symbol("timed out");

/**
 * runModel calls the Workers AI binding, env.AI.run(model, inputs), and
 * answers in the shape the wazero host gets from the Workers AI REST API
 * ({"result":…,"success":…,"errors":[…]} with an HTTP status), so a function
 * maps one answer shape on both hosts. As there, only a deployment whose
 * upstream is "edge" has a model binding, and the call is given up at until
 * (a time in ms), where a function's fetch to its upstream would end, so
 * the decision still settles before the request's deadline.
 */
async function runModel(r, env, until) {
  if (env.UPSTREAM_KIND !== "edge" || typeof env.AI?.run !== "function") {
    return { status: 0, output: null, errKind: "denied", errMsg: "no model binding configured" };
  }
  const rest = (status, result, errors) => ({
    status,
    output: encoder.encode(JSON.stringify({ result, success: errors.length === 0, errors, messages: [] })),
    errKind: "",
    errMsg: "",
  });
  let inputs;
  try {
    inputs = JSON.parse(decoder.decode(r.input));
  } catch (e) {
    return rest(400, null, [{ code: 400, message: `input is not JSON: ${e.message}` }]);
  }
  let answer;
  let timer;
  const late = new Promise((resolve) => {
    if (until !== undefined) timer = setTimeout(() => resolve(TIMED_OUT), Math.max(0, until - Date.now()));
  });
  try {
    const output = await Promise.race([env.AI.run(r.model, inputs), late]);
    if (output === TIMED_OUT) {
      return { status: 0, output: null, errKind: "timeout", errMsg: "upstream did not answer in time" };
    }
    answer = rest(200, output ?? null, []);
  } catch (e) {
    answer = rest(502, null, [{ code: 502, message: String(e?.message ?? e) }]);
  } finally {
    clearTimeout(timer);
  }
  // The wazero host reads the REST answer through the fetch path, which
  // holds any answer to 4 MiB; the binding's output is held to the same.
  if (answer.output.length > DEFAULT_MAX_BYTES) {
    return { status: 0, output: null, errKind: "too_large", errMsg: `response body over ${DEFAULT_MAX_BYTES} bytes` };
  }
  // The binding is never given the operator's key, but an output that holds
  // it must not reach a module either (as fetch.js checks every answer).
  const key = env.UPSTREAM_API_KEY;
  if (key && echoes(key, answer.output, [])) {
    return { status: 0, output: null, errKind: "credential_leak", errMsg: "the binding's answer contained a deployment credential; it was dropped" };
  }
  return answer;
}
