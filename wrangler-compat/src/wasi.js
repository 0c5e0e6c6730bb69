// The subset of WASI preview 1 that a TinyGo wasip1 reactor imports: output
// to the console, randomness, clocks, sleeping, and empty arguments and
// environment. Modules must not depend on files (schema/abi.md), so the file
// calls answer as a process with no open files would.
//
// Two workerd facts shape this file. At global scope workerd refuses
// crypto.getRandomValues and performance.now() reads 0, so a Wasi object is
// only created (and a module only instantiated) while a request is being
// handled. And workerd's clocks stand still while code runs and only move
// across I/O, so the monotonic clock is forced to increase on every read: Go
// aborts when it reads a monotonic time of 0 and its timers misbehave when
// time runs backwards.

const ESUCCESS = 0;
const EBADF = 8;
const EINVAL = 28;
const ENOSYS = 52;
const ENOTSUP = 58;
const ESPIPE = 70;

const CLOCK_REALTIME = 0;
const CLOCK_MONOTONIC = 1;
const CLOCK_PROCESS_CPUTIME = 2;
const CLOCK_THREAD_CPUTIME = 3;

const FILETYPE_CHARACTER_DEVICE = 2;
const EVENTTYPE_CLOCK = 0;
const SUBCLOCKFLAGS_ABSTIME = 1;

// getRandomValues fills at most 65536 bytes per call (Web Crypto's limit).
const RANDOM_CHUNK = 65536;

// Base of the monotonic clock in nanoseconds: one second, so the very first
// reading is far from 0 even when performance.now() reads 0.
const MONOTONIC_BASE = 1_000_000_000n;
let lastMonotonic = 0n;

/**
 * monotonicNow returns nanoseconds that strictly increase across all calls in
 * this isolate. Shared by all instances: time is a property of the isolate.
 */
function monotonicNow() {
  const t = MONOTONIC_BASE + BigInt(Math.floor(performance.now() * 1e6));
  lastMonotonic = t > lastMonotonic ? t : lastMonotonic + 1n;
  return lastMonotonic;
}

function realtimeNow() {
  return BigInt(Date.now()) * 1_000_000n;
}

/** Thrown by proc_exit: it ends the call, and the instance is discarded. */
export class ProcExit extends Error {
  constructor(code) {
    super(`module called proc_exit(${code})`);
    this.name = "ProcExit";
    this.code = code;
  }
}

/**
 * Wasi is the WASI host of one module instance. Call bind(memory) once the
 * instance exists; until then no import may run (TinyGo calls none before
 * _initialize, which runs after instantiation).
 */
export class Wasi {
  /**
   * label prefixes console lines so output of different functions is told
   * apart; scrub (respond.js redact) takes the host's secrets out of each.
   */
  constructor(label, scrub = (line) => line) {
    this.label = label;
    this.scrub = scrub; // takes the host's secrets out of a line
    this.memory = null;
    // Console output is line-buffered per fd, as a terminal would show it;
    // TinyGo writes a panic message in several fd_write calls.
    this.pending = { 1: "", 2: "" };
    this.decoders = { 1: new TextDecoder(), 2: new TextDecoder() };
  }

  bind(memory) {
    this.memory = memory;
  }

  #view() {
    return new DataView(this.memory.buffer);
  }

  #bytes() {
    return new Uint8Array(this.memory.buffer);
  }

  /** Writes out any partial line left in the buffers. */
  flush() {
    for (const fd of [1, 2]) {
      if (this.pending[fd] !== "") this.#emit(fd, this.pending[fd]);
      this.pending[fd] = "";
    }
  }

  #emit(fd, line) {
    const out = this.scrub(`[${this.label}] ${line}`);
    if (fd === 2) console.error(out);
    else console.log(out);
  }

  #write(fd, chunk) {
    let text = this.pending[fd] + this.decoders[fd].decode(chunk, { stream: true });
    let nl;
    while ((nl = text.indexOf("\n")) >= 0) {
      this.#emit(fd, text.slice(0, nl));
      text = text.slice(nl + 1);
    }
    this.pending[fd] = text;
  }

  /**
   * imports returns the wasi_snapshot_preview1 namespace. Functions the
   * module imports but this subset lacks answer ENOSYS instead of failing
   * instantiation: a module that never calls them still runs. poll_oneoff is
   * asynchronous (it sleeps with setTimeout), so it is wrapped for JSPI.
   */
  imports(module) {
    const known = {
      args_sizes_get: (argcPtr, sizePtr) => this.#zeroPair(argcPtr, sizePtr),
      args_get: () => ESUCCESS,
      environ_sizes_get: (countPtr, sizePtr) => this.#zeroPair(countPtr, sizePtr),
      environ_get: () => ESUCCESS,
      clock_res_get: (id, resPtr) => {
        if (id > CLOCK_THREAD_CPUTIME) return EINVAL;
        this.#view().setBigUint64(resPtr, 1000n, true);
        return ESUCCESS;
      },
      clock_time_get: (id, _precision, timePtr) => {
        let t;
        switch (id) {
          case CLOCK_REALTIME:
            t = realtimeNow();
            break;
          case CLOCK_MONOTONIC:
          case CLOCK_PROCESS_CPUTIME:
          case CLOCK_THREAD_CPUTIME:
            t = monotonicNow();
            break;
          default:
            return EINVAL;
        }
        this.#view().setBigUint64(timePtr, t, true);
        return ESUCCESS;
      },
      random_get: (ptr, len) => {
        const mem = this.#bytes();
        for (let off = 0; off < len; off += RANDOM_CHUNK) {
          crypto.getRandomValues(mem.subarray(ptr + off, ptr + Math.min(len, off + RANDOM_CHUNK)));
        }
        return ESUCCESS;
      },
      fd_write: (fd, iovs, iovsLen, nwrittenPtr) => {
        if (fd !== 1 && fd !== 2) return EBADF;
        const view = this.#view();
        const mem = this.#bytes();
        let written = 0;
        for (let i = 0; i < iovsLen; i++) {
          const buf = view.getUint32(iovs + i * 8, true);
          const len = view.getUint32(iovs + i * 8 + 4, true);
          this.#write(fd, mem.subarray(buf, buf + len));
          written += len;
        }
        view.setUint32(nwrittenPtr, written, true);
        return ESUCCESS;
      },
      fd_read: (fd, _iovs, _iovsLen, nreadPtr) => {
        if (fd !== 0) return EBADF;
        this.#view().setUint32(nreadPtr, 0, true); // stdin is empty
        return ESUCCESS;
      },
      fd_close: (fd) => (fd <= 2 ? ESUCCESS : EBADF),
      fd_seek: (fd) => (fd <= 2 ? ESPIPE : EBADF),
      fd_sync: (fd) => (fd <= 2 ? ESUCCESS : EBADF),
      fd_fdstat_get: (fd, statPtr) => {
        if (fd > 2) return EBADF;
        const view = this.#view();
        // fdstat: u8 filetype, u16 flags, u64 rights base, u64 rights inheriting.
        view.setUint8(statPtr, FILETYPE_CHARACTER_DEVICE);
        view.setUint16(statPtr + 2, 0, true);
        view.setBigUint64(statPtr + 8, 0xffffffffffffffffn, true);
        view.setBigUint64(statPtr + 16, 0n, true);
        return ESUCCESS;
      },
      // No preopened directories: wasi-libc stops scanning at the first EBADF.
      fd_prestat_get: () => EBADF,
      fd_prestat_dir_name: () => EBADF,
      sched_yield: () => ESUCCESS,
      proc_exit: (code) => {
        throw new ProcExit(code);
      },
    };
    // Built only when imported: it needs JSPI, which only workerd has here.
    const suspending = {
      poll_oneoff: () =>
        new WebAssembly.Suspending((inPtr, outPtr, n, neventsPtr) => this.#pollOneoff(inPtr, outPtr, n, neventsPtr)),
    };

    const ns = {};
    for (const imp of WebAssembly.Module.imports(module)) {
      if (imp.module !== "wasi_snapshot_preview1" || imp.kind !== "function") continue;
      if (Object.hasOwn(known, imp.name)) ns[imp.name] = known[imp.name];
      else if (Object.hasOwn(suspending, imp.name)) ns[imp.name] = suspending[imp.name]();
      else ns[imp.name] = () => ENOSYS;
    }
    return ns;
  }

  #zeroPair(aPtr, bPtr) {
    const view = this.#view();
    view.setUint32(aPtr, 0, true);
    view.setUint32(bPtr, 0, true);
    return ESUCCESS;
  }

  /**
   * poll_oneoff waits for the earliest clock subscription; it is how a
   * TinyGo module without a scheduler sleeps. Subscriptions on file
   * descriptors are answered at once with ENOTSUP: there are no files.
   * Subscription: u64 userdata, u8 tag, then for a clock: u32 id at +16,
   * u64 timeout at +24, u64 precision at +32, u16 flags at +40 (48 bytes).
   * Event: u64 userdata, u16 error, u8 type (32 bytes).
   */
  async #pollOneoff(inPtr, outPtr, n, neventsPtr) {
    if (n === 0) return EINVAL;
    let view = this.#view();
    let waitNs = null;
    const subs = [];
    for (let i = 0; i < n; i++) {
      const s = inPtr + i * 48;
      const userdata = view.getBigUint64(s, true);
      const tag = view.getUint8(s + 8);
      if (tag !== EVENTTYPE_CLOCK) {
        subs.push({ userdata, tag, error: ENOTSUP });
        continue;
      }
      const id = view.getUint32(s + 16, true);
      let timeout = view.getBigUint64(s + 24, true);
      if (view.getUint16(s + 40, true) & SUBCLOCKFLAGS_ABSTIME) {
        const now = id === CLOCK_REALTIME ? realtimeNow() : monotonicNow();
        timeout = timeout > now ? timeout - now : 0n;
      }
      subs.push({ userdata, tag, error: ESUCCESS, timeout });
      if (waitNs === null || timeout < waitNs) waitNs = timeout;
    }
    const immediate = subs.filter((s) => s.tag !== EVENTTYPE_CLOCK);
    let events = immediate;
    if (immediate.length === 0 && waitNs !== null) {
      await new Promise((resolve) => setTimeout(resolve, Number(waitNs / 1_000_000n)));
      events = subs.filter((s) => s.timeout === waitNs);
    }
    view = this.#view();
    for (let i = 0; i < events.length; i++) {
      const e = outPtr + i * 32;
      new Uint8Array(view.buffer, e, 32).fill(0);
      view.setBigUint64(e, events[i].userdata, true);
      view.setUint16(e + 8, events[i].error, true);
      view.setUint8(e + 10, events[i].tag);
    }
    view.setUint32(neventsPtr, events.length, true);
    return ESUCCESS;
  }
}
