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

import { SETTINGS } from "./contract.gen.js";
import { parseDuration } from "./duration.js";

/** A setting that fails its rule; the message names it, as the Go host's. */
export class SettingError extends Error {}

const CHECKS = {
  text: (v) => v,
  int: (v, s) => (/^[+-]?\d+$/.test(v) && Number(v) >= (s.min ?? 0) ? v : fail(`a whole number ≥ ${s.min ?? 0}`)),
  duration: (v, s) => (parseDuration(v) > 0 ? v : fail(`a Go duration greater than zero, such as ${s.default || "30s"}`)),
  enum: (v, s) => s.values.find((want) => want.toLowerCase() === v.toLowerCase()) ?? fail(s.values.join(" or ")),
  flag: (v) => (v === "0" || v === "1" ? v : fail("0 or 1")),
  url: (v) => (httpURL(v) ? v : fail("an http(s) URL")),
  origin: (v) => (httpURL(v) && new URL(v).origin === v ? v : fail("the console's origin exactly as a browser sends it, such as https://gateway.example.com (scheme://host[:port], lower case, no path, not even /, no default port)")),
};

function fail(want) {
  throw new SettingError(want);
}

function httpURL(v) {
  try {
    const u = new URL(v);
    return (u.protocol === "http:" || u.protocol === "https:") && u.hostname !== "";
  } catch {
    return false;
  }
}

/** text is a setting's value as a string: [vars] may hold numbers and booleans. */
export function text(v) {
  return typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? String(v) : "";
}

/**
 * checkSettings returns env with every set setting the Workers read in its
 * canonical spelling, or throws SettingError naming the first bad one.
 */
export function checkSettings(env) {
  const out = { ...env };
  for (const s of SETTINGS) {
    if (!s.module && !s.secret) continue;
    const v = text(env[s.name]);
    if (v === "") continue;
    try {
      out[s.name] = CHECKS[s.kind](v, s);
    } catch (e) {
      if (e instanceof SettingError) throw new SettingError(`${s.name}=${JSON.stringify(v)}: want ${e.message}`);
      throw e;
    }
  }
  return out;
}
