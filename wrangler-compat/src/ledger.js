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
// its conditions only look at steps whose results are already known, so a
// batch without conditions, the common case, costs one HTTP round trip.

import { Kind, holds } from "./abi.js";
import { plan, PlanError } from "./sqlshape.js";

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
      throw new LedgerError(`ledger: unreachable: ${errorMessage(e)}`);
    }
    const text = await resp.text();
    if (!resp.ok) {
      this.open = false;
      let msg = text;
      try {
        msg = JSON.parse(text).message ?? text;
      } catch {}
      throw new LedgerError(`ledger: HTTP ${resp.status}: ${message(msg).slice(0, 300)}`);
    }
    const body = JSON.parse(text);
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
  const detail = message(error.message ?? "SQL error");
  if (first && index === 0) {
    const e = new LedgerError(`ledger: ${detail}`, { locked: isLockError(error) });
    e.detail = detail;
    return e;
  }
  if (last && index === count - 1) return new LedgerError(`ledger: commit: ${detail}`);
  return new LedgerError(`ledger: step ${round[index - (first ? 1 : 0)]}: ${detail}`);
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
   * committed.
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
        const res = await stream.round(stmts, last);
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
