// What the ledger must know about a batch before it reaches the database,
// following the wazero host's executor (wasm-host/ledger: plan and classify)
// so that a batch is accepted, refused and reported alike on both hosts:
//
//   - A step holds exactly one statement, never one that controls the
//     transaction (the host owns BEGIN/COMMIT: a step's COMMIT would break
//     the batch's atomicity), and only bare ? parameters, one per argument.
//   - A condition names an earlier step and a known test.
//   - Whether a statement returns rows decides what it reports: a SELECT
//     reports 0 rows affected, a RETURNING statement its row count, other
//     statements no columns; only an INSERT or REPLACE that inserted reports
//     a last insert rowid (SQLite's belongs to the connection and would
//     otherwise name some earlier batch's row).
//
// The lexer only tells strings, comments, quoted names, brackets and keywords
// apart; it needs no SQL grammar. The words it goes by are the Go host's
// (shared/contract.SQLShape), generated into contract.gen.js.

import { Cond, Kind } from "./abi.js";
import { SQL_SHAPE } from "./contract.gen.js";

/** A batch refused before it ran; its message follows "ledger: ". */
export class PlanError extends Error {}

const EOF = 0;
const WORD = 1;
const OTHER = 2;
const OPEN = 3;
const CLOSE = 4;
const SEMICOLON = 5;
const PARAM = 6;
const NAMED_PARAM = 7;

const isDigit = (c) => c >= 48 && c <= 57;
const isWordStart = (c) => c === 95 || c >= 0x80 || ((c | 0x20) >= 97 && (c | 0x20) <= 122);
const isWordByte = (c) => isWordStart(c) || isDigit(c) || c === 36;

class ShapeError extends Error {}

class Lexer {
  constructor(src) {
    this.src = src;
    this.pos = 0;
  }

  #at(i) {
    return i < this.src.length ? this.src.charCodeAt(i) : 0;
  }

  next() {
    const src = this.src;
    while (this.pos < src.length) {
      const c = src[this.pos];
      if (" \t\n\r\f\v".includes(c)) {
        this.pos++;
      } else if (c === "-" && src[this.pos + 1] === "-") {
        const i = src.indexOf("\n", this.pos);
        this.pos = i >= 0 ? i + 1 : src.length;
      } else if (c === "/" && src[this.pos + 1] === "*") {
        const i = src.indexOf("*/", this.pos + 2);
        if (i < 0) throw new ShapeError("unterminated comment");
        this.pos = i + 2;
      } else {
        return this.#token();
      }
    }
    return [EOF, ""];
  }

  #token() {
    const src = this.src;
    const start = this.pos;
    const ch = src[start];
    const c = src.charCodeAt(start);
    if (ch === "'" || ch === '"' || ch === "`") {
      this.#quoted(ch);
      return [OTHER, src.slice(start, this.pos)];
    }
    if (ch === "[") {
      const i = src.indexOf("]", start);
      if (i < 0) throw new ShapeError("unterminated [identifier]");
      this.pos = i + 1;
      return [OTHER, src.slice(start, this.pos)];
    }
    if (ch === "(") {
      this.pos++;
      return [OPEN, "("];
    }
    if (ch === ")") {
      this.pos++;
      return [CLOSE, ")"];
    }
    if (ch === ";") {
      this.pos++;
      return [SEMICOLON, ";"];
    }
    if (ch === "?") {
      this.pos++;
      if (isDigit(this.#at(this.pos))) {
        this.#word();
        return [NAMED_PARAM, src.slice(start, this.pos)];
      }
      return [PARAM, "?"];
    }
    if ((ch === ":" || ch === "@" || ch === "$") && start + 1 < src.length && isWordByte(this.#at(start + 1))) {
      this.pos++;
      this.#word();
      return [NAMED_PARAM, src.slice(start, this.pos)];
    }
    if (isWordStart(c)) {
      this.#word();
      return [WORD, src.slice(start, this.pos)];
    }
    if (isDigit(c)) {
      this.#word(); // numbers, including 1e5 and 0x1F; '.' is left as an operator
      return [OTHER, src.slice(start, this.pos)];
    }
    this.pos++;
    return [OTHER, src.slice(start, this.pos)];
  }

  /** A quoted string or name, where a doubled quote is an escaped quote. */
  #quoted(q) {
    const src = this.src;
    for (let i = this.pos + 1; i < src.length; i++) {
      if (src[i] === q) {
        if (src[i + 1] === q) {
          i++;
          continue;
        }
        this.pos = i + 1;
        return;
      }
    }
    throw new ShapeError(`unterminated ${q} quote`);
  }

  #word() {
    while (this.pos < this.src.length && isWordByte(this.src.charCodeAt(this.pos))) this.pos++;
  }
}

/**
 * classify inspects one step's SQL and returns its shape: { rows, returning,
 * insert, readOnly, dml, params }. readOnly: the statement cannot write
 * (SELECT, VALUES, EXPLAIN, or a WITH that ends in one); dml: an INSERT,
 * UPDATE, DELETE or REPLACE, with or without WITH. It throws ShapeError for
 * text the executor refuses.
 */
export function classify(sql) {
  const s = { rows: false, returning: false, insert: false, readOnly: false, dml: false, params: 0 };
  const lx = new Lexer(sql);
  let first = ""; // first keyword of the statement
  let verb = ""; // the statement's own verb, past any WITH clause
  let depth = 0; // bracket depth
  let trigger = false; // inside CREATE [TEMP] TRIGGER
  let body = 0; // depth of BEGIN … END (and CASE … END) in a trigger
  let ended = false; // a top-level ; was seen
  let position = 0; // index of the current top-level word
  let second = ""; // second top-level word, to spot CREATE TEMP TRIGGER
  for (;;) {
    const [tok, text] = lx.next();
    if (tok === EOF) break;
    if (ended && tok !== SEMICOLON) throw new ShapeError("more than one statement in a step");
    switch (tok) {
      case SEMICOLON:
        if (trigger && body > 0) continue;
        if (first !== "") ended = true;
        break;
      case OPEN:
        depth++;
        break;
      case CLOSE:
        depth--;
        break;
      case PARAM:
        s.params++;
        break;
      case NAMED_PARAM:
        throw new ShapeError(`parameter ${text}: use positional ? parameters`);
      case WORD: {
        const w = text.toUpperCase();
        if (first === "") first = w;
        if (trigger) {
          if (w === "BEGIN" || w === "CASE") {
            if (w === "BEGIN" || body > 0) body++;
          } else if (w === "END" && body > 0) {
            body--;
          }
        }
        if (depth === 0 && !trigger) {
          position++;
          if (position === 2) second = w;
          if (first === "CREATE" && w === "TRIGGER" && (position === 2 || (position === 3 && (second === "TEMP" || second === "TEMPORARY")))) {
            trigger = true;
          }
          if (verb === "" && SQL_SHAPE.verbs.includes(w)) verb = w;
          if (w === "RETURNING" && verb !== "" && !SQL_SHAPE.rowVerbs.includes(verb)) s.returning = true;
        }
        break;
      }
    }
  }
  if (first === "") throw new ShapeError("empty statement");
  if (SQL_SHAPE.transaction.includes(first)) throw new ShapeError(`${first}: the executor owns the transaction`);
  if (first === "WITH") {
    s.rows = SQL_SHAPE.rowVerbs.includes(verb);
    s.readOnly = s.rows;
  } else {
    // PRAGMA returns rows and may write: PRAGMA user_version = 2.
    s.rows = SQL_SHAPE.rowsFirst.includes(first);
    s.readOnly = SQL_SHAPE.readOnlyFirst.includes(first);
  }
  if (s.returning) s.rows = true;
  s.insert = SQL_SHAPE.insertVerbs.includes(verb);
  if (first === "WITH" || first === verb) s.dml = verb !== "" && !SQL_SHAPE.rowVerbs.includes(verb);
  return s;
}

/**
 * scalarSelect reports whether a step can be evaluated again as a scalar
 * subquery with the same result, as the wazero host decides it
 * (wasm-host/ledger, translate.go): a plain SELECT (not a write with
 * RETURNING) of one column that gives the same answer when run twice in a
 * row. A top-level comma or * before FROM means it may not be one column.
 */
export function scalarSelect(sql, shape) {
  if (!shape.readOnly || shape.returning) return false;
  const lx = new Lexer(sql);
  let depth = 0;
  let list = true;
  let first = true;
  for (;;) {
    let tok, text;
    try {
      [tok, text] = lx.next();
    } catch {
      return false;
    }
    switch (tok) {
      case EOF:
        return !first;
      case OPEN:
        depth++;
        break;
      case CLOSE:
        depth--;
        break;
      case WORD: {
        const w = text.toUpperCase();
        if (first) {
          if (w !== "SELECT") return false;
          first = false;
          break;
        }
        if (SQL_SHAPE.unstable.includes(w)) return false; // may differ between the step and its guard
        if (depth === 0 && SQL_SHAPE.pastColumns.includes(w)) list = false;
        break;
      }
      case SEMICOLON:
        return false; // the SQL is wrapped in a subquery
      case OTHER:
        if (text.toLowerCase() === "'now'") return false;
        if (list && depth === 0 && (text === "," || text === "*")) return false;
        break;
    }
  }
}

/**
 * plan checks a decoded batch and returns the shape of each step, or throws
 * PlanError with the message the wazero host gives for the same batch.
 */
export function plan(steps) {
  return steps.map((st, i) => {
    let s;
    try {
      s = classify(st.sql);
    } catch (e) {
      if (e instanceof ShapeError) throw new PlanError(`step ${i}: malformed statement: ${e.message}`);
      throw e;
    }
    if (s.params !== st.args.length) {
      throw new PlanError(`step ${i}: ${s.params} ? parameters but ${st.args.length} arguments`);
    }
    for (const c of st.when) {
      if (c.step >= i) throw new PlanError(`step ${i}: condition on step ${c.step}, which is not an earlier step`);
      if (c.test < Cond.Affected || c.test > Cond.Falsy) throw new PlanError(`step ${i}: unknown condition test ${c.test}`);
    }
    st.args.forEach((v, k) => {
      if (v.kind > Kind.Blob) throw new PlanError(`step ${i}: argument ${k} has unknown kind ${v.kind}`);
    });
    return s;
  });
}
