// The key that keeps a caller on one version of a function during a gradual
// deployment: the account its API key or session cookie claims, else its
// client address, exactly as the wazero host's canary.StickyKey computes it
// (shared/keys.AccountHint). The front Worker sends it to a function Worker
// as Cloudflare-Workers-Version-Key, so Cloudflare's version affinity keeps
// an account on one version across requests, keys and addresses. Nothing
// here authenticates: a key is only parsed, never looked up. The key format
// is shared/keys.Format, generated into contract.gen.js.

import { KEY_FORMAT } from "./contract.gen.js";

const ALPHABET = KEY_FORMAT.alphabet;
const ACCOUNT_LEN = KEY_FORMAT.accountLen;
const CHECK_LEN = KEY_FORMAT.checkLen;
const PREFIX_LEN = KEY_FORMAT.apiKey.length;
const SECRET_LEN = PREFIX_LEN + ACCOUNT_LEN + 1 + KEY_FORMAT.randomLen + CHECK_LEN;

export const API_KEY = KEY_FORMAT.apiKey;
export const SESSION = KEY_FORMAT.session;
export const SESSION_COOKIE = KEY_FORMAT.sessionCookie;

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** crc32 is CRC-32 (IEEE) of an ASCII string, as Go's crc32.ChecksumIEEE. */
function crc32(s) {
  let c = 0xffffffff;
  for (let i = 0; i < s.length; i++) c = CRC_TABLE[(c ^ s.charCodeAt(i)) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** check is the 6-character checksum of a secret's body (keys.check). */
function check(body) {
  let c = crc32(body) >>> 2;
  const out = new Array(CHECK_LEN);
  for (let i = CHECK_LEN - 1; i >= 0; i--) {
    out[i] = ALPHABET[c & 31];
    c >>>= 5;
  }
  return out.join("");
}

const valid = (ch) => ALPHABET.includes(ch);

/** parse returns the account of a well-formed secret of kind, or "". */
export function parse(kind, secret) {
  if (typeof secret !== "string" || secret.length !== SECRET_LEN || !secret.startsWith(kind) || secret[PREFIX_LEN + ACCOUNT_LEN] !== "_") {
    return "";
  }
  for (let i = PREFIX_LEN; i < SECRET_LEN; i++) {
    if (i !== PREFIX_LEN + ACCOUNT_LEN && !valid(secret[i])) return "";
  }
  if (check(secret.slice(0, SECRET_LEN - CHECK_LEN)) !== secret.slice(SECRET_LEN - CHECK_LEN)) return "";
  return secret.slice(PREFIX_LEN, PREFIX_LEN + ACCOUNT_LEN);
}

function bearer(authorization) {
  const p = "bearer ";
  if (authorization.length <= p.length || authorization.slice(0, p.length).toLowerCase() !== p) return null;
  return authorization.slice(p.length).trim();
}

function cookie(header, name) {
  for (const part of header.split(";")) {
    const kv = part.trim();
    const eq = kv.indexOf("=");
    if (eq >= 0 && kv.slice(0, eq) === name) return kv.slice(eq + 1);
  }
  return "";
}

/** accountHint is keys.AccountHint: the account an API key or session cookie claims. */
export function accountHint(authorization, cookieHeader) {
  const tok = bearer(authorization ?? "");
  if (tok !== null) {
    const a = parse(API_KEY, tok);
    if (a) return a;
  }
  return parse(SESSION, cookie(cookieHeader ?? "", SESSION_COOKIE));
}

/** stickyKey is canary.StickyKey for a Workers request. */
export function stickyKey(request) {
  const acct = accountHint(request.headers.get("authorization"), request.headers.get("cookie"));
  if (acct) return `account:${acct}`;
  return `addr:${request.headers.get("cf-connecting-ip") ?? ""}`;
}
