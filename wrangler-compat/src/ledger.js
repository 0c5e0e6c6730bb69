// The ledger import on Workers: runs one Batch of schema/abi.md against
// libSQL (sqld or Turso) with Hrana v2 over HTTP, POST {url}/v2/pipeline.
//
// A Batch is atomic and its conditions look at the *results* of earlier steps
// (rows affected, first cell), which Hrana's own batch conditions cannot
// express (they only see success or failure). So the batch runs inside one
// Hrana stream, kept alive between HTTP requests by its baton: BEGIN
// IMMEDIATE, then rounds of steps, with the conditions evaluated here between
// rounds, then COMMIT. Each round is a single Hrana batch whose steps are
// chained on the success of the previous one, so after an error nothing else
// runs and the transaction is rolled back. A step joins the current round when
// its conditions only look at steps whose results are already known.
//
// Most batches do not need the rounds: translate turns their conditions into
// guards that sqld evaluates itself, as the wazero host does for a remote
// ledger (wasm-host/ledger, translate.go, which says how), and the whole
// batch, BEGIN IMMEDIATE to COMMIT, is one HTTP request. That matters for
// more than the round trips: the rounds hold sqld's write lock from BEGIN to
// COMMIT across them, so every other writer of the deployment waits for
// about three round trips per batch (a decision's reservation), which from a
// Worker to Turso are tens of milliseconds each. In one request the lock is
// held only while sqld runs the statements. A batch the translation cannot
// express exactly still takes the rounds.

import { Cond, Kind, holds } from "./abi.js";
import { GUARDS } from "./contract.gen.js";
import { plan, PlanError, scalarSelect } from "./sqlshape.js";

/** How long one HTTP request to the ledger may take. */
const REQUEST_TIMEOUT_MS = 10_000;

/**
 * sqld does not wait on a locked database: a writer that meets another gets
 * "database is locked" at BEGIN IMMEDIATE. Such a batch has done nothing yet
 * and is retried with a growing, jittered delay, within this total budget.
 */
const LOCK_RETRY_BUDGET_MS = 5_000;
const LOCK_RETRY_FIRST_MS = 5;
const LOCK_RETRY_MAX_MS = 250;

// The one-request form (translate). A guard is a statement placed right
// after a tested step that fails exactly when the test is false (its text,
// and how often a checkpoint comes, are the contract's: GUARDS); a step that
// depends on the test runs on ok(guard).

const CONTROL = 0;
const REAL = 1;
const GUARD = 2;

const ok = (step) => ({ type: "ok", step });
const not = (cond) => ({ type: "not", cond });
const and = (conds) => (conds.length === 1 ? conds[0] : { type: "and", conds });

/**
 * needs finds which steps are tested for rows changed and for truth, or
 * returns null when a test cannot be translated exactly.
 */
function needs(steps, shapes) {
  const affected = steps.map(() => false);
  const truth = steps.map(() => false);
  for (const st of steps) {
    for (const c of st.when) {
      const s = shapes[c.step];
      if (c.test === Cond.Affected || c.test === Cond.NotAffected) {
        // A statement that returns rows without writing reports 0; DDL and
        // PRAGMA report whatever the connection saw last.
        if (!s.dml && !(s.rows && !s.returning && s.readOnly)) return null;
        affected[c.step] = true;
      } else {
        if (s.rows && !scalarSelect(steps[c.step].sql, s)) return null;
        truth[c.step] = true;
      }
    }
  }
  return { affected, truth };
}

/**
 * condition translates one of a step's conditions. known: its value is
 * decided without the database (holds is that value); otherwise cond is the
 * Hrana condition.
 */
function condition(c, at, guards, shapes) {
  const k = c.step;
  if (at[k] < 0) {
    // Skipped: not executed, so nothing changed and no cell is true.
    return { known: true, holds: c.test === Cond.NotAffected || c.test === Cond.Falsy };
  }
  if (c.test === Cond.Affected || c.test === Cond.NotAffected) {
    if (guards[k].affected < 0) return { known: true, holds: c.test === Cond.NotAffected }; // a read changes nothing
    const g = ok(guards[k].affected);
    return { known: false, cond: c.test === Cond.Affected ? g : not(g) };
  }
  if (!shapes[k].rows || guards[k].truthy < 0) return { known: true, holds: c.test === Cond.Falsy }; // no rows: NULL
  const g = ok(guards[k].truthy);
  return { known: false, cond: c.test === Cond.Truthy ? g : not(g) };
}

/**
 * translate returns the one-request form of a batch: its Hrana steps, the
 * Hrana step of each of ours (-1 when already known to be skipped), each
 * Hrana step's kind and where BEGIN and COMMIT are (-1 for a lone
 * statement, run without a transaction); or null when the batch needs the
 * rounds. Each real step runs when the latest checkpoint ran, no
 * real step since has failed, and its own tests hold; COMMIT runs on the
 * same terms, and ROLLBACK when COMMIT did not.
 */
function translate(steps, shapes) {
  const need = needs(steps, shapes);
  if (!need) return null;
  const p = { steps: [], kinds: [], at: [], begin: -1, commit: -1 };
  const add = (st, cond, kind) => {
    p.steps.push(cond ? { stmt: st, condition: cond } : { stmt: st });
    p.kinds.push(kind);
    return p.steps.length - 1;
  };
  if (steps.length === 1) {
    // One statement is atomic on its own: no transaction, so a lone read
    // never takes the write lock (as in the wazero host).
    p.at = [add(stmt(steps[0].sql, steps[0].args), null, REAL)];
    return p;
  }
  p.begin = add(stmt("BEGIN IMMEDIATE"), null, CONTROL);
  let base = ok(p.begin);
  let window = [];
  const alive = () => [base, ...window];
  const guards = [];
  for (let i = 0; i < steps.length; i++) {
    const st = steps[i];
    const tests = [];
    let run = true;
    for (const c of st.when) {
      const t = condition(c, p.at, guards, shapes);
      if (t.known) run = run && t.holds;
      else tests.push(t.cond);
    }
    p.at[i] = -1;
    guards[i] = { affected: -1, truthy: -1 };
    if (!run) continue;
    const k = add(stmt(st.sql, st.args), and([...alive(), ...tests]), REAL);
    p.at[i] = k;
    if (need.affected[i] && shapes[i].dml) guards[i].affected = add(stmt(GUARDS.affected), ok(k), GUARD);
    if (need.truth[i] && shapes[i].rows) guards[i].truthy = add(stmt(GUARDS.truthPrefix + st.sql + GUARDS.truthSuffix, st.args), ok(k), GUARD);
    // "k did not fail" is "k succeeded or its own tests were false" (sqld
    // counts a skipped step as failed too).
    window.push(tests.length > 0 ? { type: "or", conds: [ok(k), not(and(tests))] } : ok(k));
    if (window.length === GUARDS.checkpointEvery) {
      base = ok(add(stmt("SELECT 1"), and(alive()), CONTROL));
      window = [];
    }
  }
  p.commit = add(stmt("COMMIT"), and(alive()), CONTROL);
  add(stmt("ROLLBACK"), not(ok(p.commit)), CONTROL);
  return p;
}

/** A failed batch: its message is what the guest sees as BatchResult.error. */
export class LedgerError extends Error {
  constructor(message, { locked = false } = {}) {
    super(message);
    this.name = "LedgerError";
    this.locked = locked;
  }
}

/**
 * pipelineURL turns a LIBSQL_URL into the Hrana pipeline endpoint.
 * libsql://host means TLS (https), as libsql-client-go reads it, unless the
 * URL says ?tls=0. file: URLs name an embedded database, which a Worker has
 * not got. An authToken query parameter is accepted as libsql-client-go does.
 */
export function parseLibsqlURL(raw) {
  let u;
  try {
    u = new URL(raw);
  } catch {
    throw new LedgerError("LIBSQL_URL is not a valid URL");
  }
  const tls = u.searchParams.get("tls");
  const token = u.searchParams.get("authToken") ?? "";
  let scheme;
  switch (u.protocol) {
    case "http:":
    case "https:":
      scheme = u.protocol.slice(0, -1);
      break;
    case "libsql:":
    case "wss:":
    case "ws:":
      scheme = tls === "0" || u.protocol === "ws:" ? "http" : "https";
      break;
    default:
      throw new LedgerError(`LIBSQL_URL scheme ${u.protocol} is not supported on Workers (use libsql://, http:// or https://)`);
  }
  const path = u.pathname.replace(/\/+$/, "");
  return { base: `${scheme}://${u.host}${path}`, token };
}

/** toHrana converts an ABI value to a Hrana v2 value. */
function toHrana(v) {
  switch (v.kind) {
    case Kind.Null:
      return { type: "null" };
    case Kind.Integer:
      // Hrana carries integers as decimal strings so 64 bits survive JSON.
      return { type: "integer", value: v.value.toString() };
    case Kind.Real:
      return { type: "float", value: v.value };
    case Kind.Text:
      return { type: "text", value: v.value };
    case Kind.Blob:
      return { type: "blob", base64: toBase64(v.value) };
    default:
      throw new LedgerError(`unknown value kind ${v.kind}`);
  }
}

/** fromHrana converts a Hrana v2 value to an ABI value. */
function fromHrana(v) {
  switch (v?.type) {
    case "integer":
      return { kind: Kind.Integer, value: BigInt.asIntN(64, BigInt(v.value)) };
    case "float":
      return { kind: Kind.Real, value: Number(v.value) };
    case "text":
      return { kind: Kind.Text, value: v.value };
    case "blob":
      return { kind: Kind.Blob, value: fromBase64(v.base64 ?? "") };
    default:
      return { kind: Kind.Null, value: null };
  }
}

function toBase64(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

function fromBase64(b64) {
  // Hrana may omit padding.
  const pad = b64.length % 4 === 0 ? "" : "=".repeat(4 - (b64.length % 4));
  const s = atob(b64 + pad);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

function stmt(sql, args = []) {
  return { sql, args: args.map(toHrana), want_rows: true };
}

/**
 * chained is a Hrana batch whose statements each run only if the one before
 * succeeded, followed by a ROLLBACK that runs only if the last did not.
 */
function chained(stmts) {
  const steps = stmts.map((s, i) => (i > 0 ? { stmt: s, condition: { type: "ok", step: i - 1 } } : { stmt: s }));
  const last = stmts.length - 1;
  steps.push({ stmt: stmt("ROLLBACK"), condition: { type: "not", cond: { type: "ok", step: last } } });
  return { type: "batch", batch: { steps } };
}

function errorMessage(e) {
  return e?.message ?? "unknown error";
}

/**
 * isLockError reports whether a Hrana error means another connection holds
 * the write lock (the wazero host's isBusy reads the same texts).
 */
function isLockError(e) {
  const m = `${e?.message ?? ""} ${e?.code ?? ""}`;
  return /database is locked|database table is locked|sqlite_busy|transaction_timeout|transaction timed out/i.test(m);
}

/** message tidies a server error as the wazero host does, for equal texts. */
function message(text) {
  let msg = String(text ?? "");
  for (;;) {
    const trimmed = msg.trim().replace(/^failed to execute SQL:/, "").trim();
    if (trimmed === msg) break;
    msg = trimmed;
  }
  return msg.split(/\s+/).filter(Boolean).join(" ");
}

/**
 * Stream is one Hrana stream over HTTP: every pipeline call carries the baton
 * of the previous answer, so all of them run on the same connection and in
 * the same transaction.
 */
class Stream {
  constructor(base, token) {
    this.url = `${base}/v2/pipeline`;
    this.token = token;
    this.baton = null;
    this.open = true;
  }

  async pipeline(requests) {
    const headers = { "content-type": "application/json" };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let resp;
    try {
      resp = await fetch(this.url, {
        method: "POST",
        headers,
        body: JSON.stringify({ baton: this.baton, requests }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (e) {
      this.open = false;
      const err = new LedgerError(`ledger: unreachable: ${errorMessage(e)}`);
      // A timeout or a connection lost on the way may have left the request
      // run by the server; only a connection never made did not reach it.
      const why = `${errorMessage(e)} ${e?.cause?.code ?? ""} ${e?.cause?.message ?? ""}`;
      err.mayHaveRun = !/refused|ENOTFOUND|getaddrinfo|DNS|invalid url/i.test(why);
      throw err;
    }
    // From here the server has the request: an answer cut short, unreadable,
    // or a proxy's 502/504 leaves what it did unknown.
    const lost = (why) => {
      this.open = false;
      const err = new LedgerError(`ledger: answer lost: ${why}`);
      err.mayHaveRun = true;
      return err;
    };
    let text;
    try {
      text = await resp.text();
    } catch (e) {
      throw lost(errorMessage(e));
    }
    if (!resp.ok) {
      this.open = false;
      let msg = text;
      try {
        msg = JSON.parse(text).message ?? text;
      } catch {}
      const err = new LedgerError(`ledger: HTTP ${resp.status}: ${message(msg).slice(0, 300)}`);
      err.mayHaveRun = resp.status === 502 || resp.status === 504;
      throw err;
    }
    let body;
    try {
      body = JSON.parse(text);
    } catch (e) {
      throw lost(`not JSON: ${errorMessage(e)}`);
    }
    this.baton = body.baton ?? null;
    // The server may direct the rest of the stream elsewhere.
    if (body.base_url) this.url = `${body.base_url.replace(/\/+$/, "")}/v2/pipeline`;
    if (this.baton === null) this.open = false;
    return body.results;
  }

  /**
   * round runs stmts as one chained Hrana batch and returns its batch result.
   * A last step rolls back when any statement failed, so an error leaves no
   * open transaction behind. With close, the same request ends the stream.
   */
  async round(stmts, close) {
    const requests = [chained(stmts)];
    if (close) requests.push({ type: "close" });
    const [res] = await this.pipeline(requests);
    if (close) this.open = false;
    if (res?.type !== "ok") throw new LedgerError(`ledger: ${message(res?.error?.message ?? "request failed")}`);
    return res.response.result;
  }

  /** Closes the stream, best effort: the server also expires idle streams. */
  async close() {
    if (!this.open) return;
    this.open = false;
    try {
      await this.pipeline([{ type: "close" }]);
    } catch {}
  }
}

/**
 * stepError returns the first failed statement of a Hrana batch result as
 * { index, error }, or null.
 */
function stepError(batch) {
  const errors = batch.step_errors ?? [];
  for (let i = 0; i < errors.length; i++) if (errors[i]) return { index: i, error: errors[i] };
  return null;
}

/**
 * roundError names where a round failed, in the wazero host's words: at
 * BEGIN (retried when the database is locked), at a batch step, or at COMMIT.
 */
function roundError({ index, error }, { first, last, round, count }) {
  if (first && index === 0) return sqlError("ledger: ", error, true);
  if (last && index === count - 1) return sqlError("ledger: commit: ", error);
  return sqlError(`ledger: step ${round[index - (first ? 1 : 0)]}: `, error);
}

/**
 * sqlError is a LedgerError for a statement sqld refused, its text after
 * prefix. Where nothing has run yet (retryable), it says whether another
 * writer holds the lock, and keeps the detail for the retry's last word.
 */
function sqlError(prefix, error, retryable = false) {
  const detail = message(error.message ?? "SQL error");
  const e = new LedgerError(prefix + detail, { locked: retryable && isLockError(error) });
  if (retryable) e.detail = detail;
  return e;
}

/**
 * toStepResult reports a statement the way the wazero host does (see
 * sqlshape.js): columns and rows only for statements that return rows, rows
 * affected for the others (and the row count for RETURNING), a last insert
 * rowid only for an INSERT or REPLACE that inserted.
 */
function toStepResult(r, shape) {
  if (shape.rows) {
    const rows = (r.rows ?? []).map((row) => row.map(fromHrana));
    return {
      executed: true,
      rowsAffected: shape.returning ? BigInt(rows.length) : 0n,
      lastInsertId: 0n,
      columns: (r.cols ?? []).map((c) => c.name ?? ""),
      rows,
    };
  }
  const rowsAffected = BigInt(r.affected_row_count ?? 0);
  const inserted = shape.insert && rowsAffected > 0n && r.last_insert_rowid != null;
  return {
    executed: true,
    rowsAffected,
    lastInsertId: inserted ? BigInt.asIntN(64, BigInt(r.last_insert_rowid)) : 0n,
    columns: [],
    rows: [],
  };
}

const SKIPPED = Object.freeze({ executed: false, rowsAffected: 0n, lastInsertId: 0n, columns: [], rows: [] });
const PENDING = Object.freeze({ executed: false, pending: true, rowsAffected: 0n, lastInsertId: 0n, columns: [], rows: [] });

/**
 * Ledger executes Batches for one deployment (one LIBSQL_URL).
 */
export class Ledger {
  constructor(url, token = "") {
    const parsed = parseLibsqlURL(url);
    this.base = parsed.base;
    this.token = token || parsed.token;
  }

  /**
   * exec runs a decoded Batch and returns a BatchResult ({error, steps}).
   * It never throws: every failure becomes BatchResult.error, with nothing
   * committed, except an error that begins "ledger: commit outcome
   * unknown", whose batch was sent and not answered and may have committed.
   */
  async exec(batch) {
    if (batch.steps.length === 0) return { error: "", steps: [] };
    let shapes;
    try {
      shapes = plan(batch.steps);
    } catch (e) {
      if (e instanceof PlanError) return { error: `ledger: ${e.message}`, steps: [] };
      throw e;
    }
    const deadline = Date.now() + LOCK_RETRY_BUDGET_MS;
    let delay = LOCK_RETRY_FIRST_MS;
    for (;;) {
      try {
        return { error: "", steps: await this.#run(batch, shapes) };
      } catch (e) {
        if (!(e instanceof LedgerError)) return { error: `ledger: ${errorMessage(e)}`, steps: [] };
        if (!e.locked) return { error: e.message, steps: [] };
        if (Date.now() + delay >= deadline) {
          return { error: `ledger: database stayed locked for ${LOCK_RETRY_BUDGET_MS / 1000}s: ${e.detail}`, steps: [] };
        }
        await new Promise((r) => setTimeout(r, delay * (0.5 + Math.random())));
        delay = Math.min(delay * 2, LOCK_RETRY_MAX_MS);
      }
    }
  }

  /**
   * read runs one read-only statement on its own, outside any transaction,
   * so it never takes the write lock (readiness checks use it), and returns
   * its rows as ABI values. It throws a LedgerError when the ledger cannot
   * be reached or refuses the statement.
   */
  async read(sql, args = []) {
    const stream = new Stream(this.base, this.token);
    const [res] = await stream.pipeline([{ type: "execute", stmt: stmt(sql, args) }, { type: "close" }]);
    stream.open = false;
    if (res?.type !== "ok") throw new LedgerError(`ledger: ${message(res?.error?.message ?? "request failed")}`);
    return (res.response?.result?.rows ?? []).map((row) => row.map(fromHrana));
  }

  async #run(batch, shapes) {
    const p = translate(batch.steps, shapes);
    return p ? this.#runOne(p, shapes) : this.#runRounds(batch, shapes);
  }

  /**
   * runOne runs a translated batch as one request and reports it as the
   * rounds would: the same results, the same errors.
   */
  async #runOne(p, shapes) {
    const stream = new Stream(this.base, this.token);
    let res;
    try {
      [res] = await stream.pipeline([{ type: "batch", batch: { steps: p.steps } }, { type: "close" }]);
    } catch (e) {
      // A transaction (or a lone write) sent without an answer may have
      // committed: its error says so, as the wazero host's does
      // (shared/batch, OutcomeUnknown).
      if (e instanceof LedgerError && e.mayHaveRun && (p.begin >= 0 || !shapes[0].readOnly)) {
        throw new LedgerError(`ledger: commit outcome unknown: ${e.message}`);
      }
      throw e;
    }
    stream.open = false;
    if (res?.type !== "ok") throw new LedgerError(`ledger: ${message(res?.error?.message ?? "request failed")}`);
    const result = res.response.result;
    const errors = result.step_errors ?? [];
    const outs = result.step_results ?? [];
    if (p.begin < 0) {
      // A lone statement: it ran alone, so a locked database is retried.
      if (errors[p.at[0]]) throw sqlError("ledger: step 0: ", errors[p.at[0]], true);
      return [toStepResult(outs[p.at[0]], shapes[0])];
    }
    if (errors[p.begin]) throw sqlError("ledger: ", errors[p.begin], true);
    for (let i = 0; i < p.at.length; i++) {
      const k = p.at[i];
      if (k >= 0 && errors[k]) throw sqlError(`ledger: step ${i}: `, errors[k]);
    }
    for (let k = 0; k < p.kinds.length; k++) {
      // A guard may only fail by design; anything else means a test was
      // decided wrongly, and the batch may have committed on it.
      if (p.kinds[k] === GUARD && errors[k] && !(errors[k].message ?? "").includes(GUARDS.failText)) {
        throw sqlError("ledger: commit outcome unknown: condition check failed: ", errors[k]);
      }
    }
    if (errors[p.commit]) throw sqlError("ledger: commit: ", errors[p.commit]);
    if (!outs[p.commit]) throw new LedgerError("ledger: commit outcome unknown: COMMIT did not run");
    return p.at.map((k, i) => (k >= 0 && outs[k] ? toStepResult(outs[k], shapes[i]) : SKIPPED));
  }

  async #runRounds(batch, shapes) {
    const steps = batch.steps;
    // results[k] is known for every decided step; PENDING marks a step sent
    // in the current round whose result is not back yet.
    const results = [];
    const stream = new Stream(this.base, this.token);
    let first = true;
    try {
      while (first || results.length < steps.length) {
        const round = [];
        for (let i = results.length; i < steps.length; i++) {
          const when = steps[i].when;
          if (when.some((c) => results[c.step] === PENDING)) break;
          if (when.every((c) => holds(c, results))) {
            round.push(i);
            results.push(PENDING);
          } else {
            results.push(SKIPPED);
          }
        }
        const last = results.length === steps.length;
        const stmts = [];
        if (first) stmts.push(stmt("BEGIN IMMEDIATE"));
        for (const k of round) stmts.push(stmt(steps[k].sql, steps[k].args));
        if (last) stmts.push(stmt("COMMIT"));
        // The final round also closes the stream, so a batch with no
        // conditions on earlier results is one HTTP round trip in all.
        let res;
        try {
          res = await stream.round(stmts, last);
        } catch (e) {
          // The round with COMMIT sent and not answered may have committed.
          if (last && e instanceof LedgerError && e.mayHaveRun) throw new LedgerError(`ledger: commit outcome unknown: ${e.message}`);
          throw e;
        }
        const failed = stepError(res);
        if (failed) throw roundError(failed, { first, last, round, count: stmts.length });
        let r = first ? 1 : 0;
        for (const k of round) results[k] = toStepResult(res.step_results[r++], shapes[k]);
        first = false;
      }
      return results;
    } finally {
      await stream.close();
    }
  }
}
