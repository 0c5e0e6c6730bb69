// The settings a function Worker serves with, checked once per isolate by
// the rules the wazero host applies at its start (wasm-host/hostconfig.Check):
// the same table (contract.gen.js, generated from shared/contract), one
// checker per kind. A Worker has no start of its own, so the check runs on
// its first request; a bad setting makes it answer every request 503
// misconfigured, naming the setting, instead of serving with a value the
// other host would refuse.
//
// The Workers read the settings modules read (and secrets, which are plain
// text): those are the rows checked here. GATEWAY_* settings of the wazero
// host alone (pool size, proxies, timeouts of its HTTP server) are not read
// on Workers and not checked.

import { MAX_INT, SETTINGS } from "./contract.gen.js";
import { parseDuration } from "./duration.js";

/** A setting that fails its rule; the message names it, as the Go host's. */
export class SettingError extends Error {}

/** CHECKS holds each kind's test; a value that fails it is refused with the row's rule. */
const CHECKS = {
  text: () => true,
  int: (v, s) => /^[+-]?\d+$/.test(v) && Number(v) >= (s.min ?? 0) && Number(v) <= MAX_INT,
  duration: (v) => parseDuration(v) > 0,
  enum: (v, s) => s.values.some((want) => want.toLowerCase() === v.toLowerCase()),
  flag: (v) => v === "0" || v === "1",
  url: (v) => httpURL(v),
  origin: (v) => httpURL(v) && new URL(v).origin === v,
  model: (v) => modelName(v),
};

/**
 * modelName mirrors shared/validate.ValidModel: 1 to 128 characters (code
 * points), no C0 or C1 control character, not only white space (Go's
 * unicode.IsSpace).
 */
function modelName(v) {
  const n = [...v].length;
  return n >= 1 && n <= 128 && !/[\u0000-\u001f\u007f-\u009f]/.test(v) &&
    !/^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/.test(v);
}

/** canonical is an enum's value as the table spells it; any other value as given. */
function canonical(v, s) {
  return s.kind === "enum" ? s.values.find((want) => want.toLowerCase() === v.toLowerCase()) : v;
}

function httpURL(v) {
  try {
    const u = new URL(v);
    return (u.protocol === "http:" || u.protocol === "https:") && u.hostname !== "" && u.username === "" && u.password === "";
  } catch {
    return false;
  }
}

/**
 * hideUserinfo is a URL with everything before the last @ of its authority
 * shown as …@, so a refusal (answered to every caller) never repeats a
 * password (hostconfig.hideUserinfo).
 */
function hideUserinfo(v) {
  const i = v.indexOf("://");
  if (i < 0) return v;
  const rest = v.slice(i + 3);
  const end = rest.search(/[/?#]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  const at = authority.lastIndexOf("@");
  return at < 0 ? v : `${v.slice(0, i + 3)}…@${rest.slice(at + 1)}`;
}

/** text is a setting's value as a string: [vars] may hold numbers and booleans. */
export function text(v) {
  return typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? String(v) : "";
}

/**
 * WORKER_HOST_SETTINGS are the host settings a function Worker reads itself
 * (function.js): checked like the rows modules read, so a bad value is
 * refused by name instead of quietly meaning no queue timeout.
 */
const WORKER_HOST_SETTINGS = new Set(["GATEWAY_QUEUE_TIMEOUT"]);

/**
 * checkSettings returns env with every set setting the Workers read in its
 * canonical spelling, or throws SettingError naming the first bad one.
 */
export function checkSettings(env) {
  const out = { ...env };
  for (const s of SETTINGS) {
    if (!s.module && !s.secret && !WORKER_HOST_SETTINGS.has(s.name)) continue;
    const v = text(env[s.name]);
    if (v === "") continue;
    if (!CHECKS[s.kind](v, s)) throw new SettingError(`${s.name}=${JSON.stringify(s.kind === "url" ? hideUserinfo(v) : v)}: want ${s.rule}`);
    out[s.name] = canonical(v, s);
  }
  return out;
}
