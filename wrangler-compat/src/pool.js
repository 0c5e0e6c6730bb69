// Warm instances of each module, so a request does not pay instantiation and
// the TinyGo runtime's initialisation.
//
// An instance serves one request at a time: a request that suspends in an
// import (a ledger round trip, say) holds its instance until it finishes, and
// a concurrent request gets another one. Entering a suspended instance would
// run Go code on a stack that is in the middle of another call, so this must
// never happen. An instance whose call threw (a trap, a panic, a bad message)
// may have broken memory and is dropped, never reused.
//
// As in the wazero host, the number of instances bounds how many calls run
// at once, not how many requests are in flight: a decision waiting on its
// upstream has handed the call to the host (an Await) and holds no instance,
// so an instance is busy only while the function computes or waits on the
// ledger. A request that finds them all busy waits for one until its
// deadline, then gets 503 overloaded; a new request (its first call) waits
// at most GATEWAY_QUEUE_TIMEOUT, as on the wazero host (runtime, pool.go):
// a call resuming after an Await has made its upstream call and waits for
// its deadline. Freed instances go to the waiters in the order they came
// until the first new request has waited STALLED_AFTER_MS; from then on
// (overload) to calls resuming after an Await first, as on the wazero host
// (runtime, lines.go, says why).
//
// Memory: a module's heap is an arena reset after every call the pool keeps
// the instance for (Instance.reset, schema/abi.md "The arena"), so its
// memory is what its largest call needed. One whose memory passes RECYCLE_BYTES is dropped after its
// call and a fresh one made when needed, which bounds a function's memory in
// an isolate to about MAX_INSTANCES × RECYCLE_BYTES (32 MiB), well inside
// 128 MB.

import { Instance } from "./host.js";

/** Live instances of one module in one isolate. Each costs its linear memory. */
export const MAX_INSTANCES = 8;

/** An instance whose linear memory has grown past this is not reused. */
export const RECYCLE_BYTES = 4 << 20;

/**
 * How long the first new request in line waits before the line counts as
 * stalled and resuming calls are served first (runtime.stalledAfter).
 */
export const STALLED_AFTER_MS = 100;

/** No instance became free before the request's deadline or within its queue timeout. */
export class Overloaded extends Error {
  constructor(name) {
    super(`no instance of ${name} became free in time`);
    this.name = "Overloaded";
  }
}

/** The call ran past its deadline. */
export class DeadlineExceeded extends Error {
  constructor(name, ms) {
    super(`${name} did not answer within ${ms} ms`);
    this.name = "DeadlineExceeded";
  }
}

/** Pool holds the instances of one compiled module. */
export class Pool {
  constructor(name, module, env) {
    this.name = name;
    this.module = module;
    this.env = env; // the settings' source while an instance initialises
    this.idle = [];
    this.live = 0; // instances created and not discarded, idle or busy
    this.waiters = []; // new requests waiting for a slot: { wake, since }
    this.continuing = []; // and continuing calls, served first once the line stalls
  }

  /**
   * run lends an instance to fn for one request and takes it back when fn
   * settles; if fn throws, the instance is discarded and the error rethrown.
   * timeoutMs bounds the whole request, the wait for an instance included;
   * queueMs, when given, bounds the wait alone (a new request's), and a
   * continuing call (resuming after an Await) waits ahead of new ones once
   * the line has stalled (#wake).
   * When it passes during the call, run throws DeadlineExceeded and writes
   * the instance off at once: wasm cannot be interrupted, and a call
   * suspended on an import may never resume once the request is gone.
   */
  async run(fn, timeoutMs, { queueMs = 0, continuing = false } = {}) {
    const deadline = Date.now() + timeoutMs;
    const inst = await this.#acquire(queueMs > 0 ? Math.min(deadline, Date.now() + queueMs) : deadline, continuing);
    let state = "running"; // then "ok", "failed" or "expired"
    const work = (async () => fn(inst))();
    work.then(
      () => this.#release(inst, state === "running" ? (state = "ok") : state),
      () => this.#release(inst, state === "running" ? (state = "failed") : state),
    );
    let timer;
    const expiry = new Promise((_, reject) => {
      timer = setTimeout(
        () => {
          if (state !== "running") return;
          state = "expired";
          this.#free();
          reject(new DeadlineExceeded(this.name, timeoutMs));
        },
        Math.max(0, deadline - Date.now()),
      );
    });
    try {
      return await Promise.race([work, expiry]);
    } finally {
      clearTimeout(timer);
    }
  }

  async #acquire(deadline, continuing) {
    for (;;) {
      const inst = this.idle.pop();
      if (inst) return inst;
      if (this.live < MAX_INSTANCES) {
        this.live++;
        try {
          return await Instance.create(this.name, this.module, this.env);
        } catch (e) {
          this.#free();
          throw e;
        }
      }
      if (!(await this.#wait(deadline, continuing))) throw new Overloaded(this.name);
    }
  }

  /** wait resolves true when an instance or a slot may be free, false at the deadline. */
  #wait(deadline, continuing) {
    const line = continuing ? "continuing" : "waiters";
    return new Promise((resolve) => {
      const waiter = {
        since: Date.now(),
        wake: (ok) => {
          clearTimeout(timer);
          resolve(ok);
        },
      };
      const timer = setTimeout(
        () => {
          this[line] = this[line].filter((w) => w !== waiter);
          resolve(false);
        },
        Math.max(0, deadline - Date.now()),
      );
      this[line].push(waiter);
    });
  }

  /**
   * wake hands a freed instance (or slot) to the waiter who came first, but
   * to a resuming call first once the first new request has waited
   * STALLED_AFTER_MS.
   */
  #wake() {
    const c = this.continuing[0];
    const f = this.waiters[0];
    const first = c && (!f || c.since < f.since || Date.now() - f.since >= STALLED_AFTER_MS) ? this.continuing : this.waiters;
    first.shift()?.wake(true);
  }

  /** free gives up an instance's slot. */
  #free() {
    this.live--;
    this.#wake();
  }

  #release(inst, state) {
    if (state === "expired") return; // already written off
    if (state === "ok" && inst.memoryBytes() <= RECYCLE_BYTES && inst.reset()) {
      this.idle.push(inst);
      this.#wake();
      return;
    }
    this.#free();
  }
}
