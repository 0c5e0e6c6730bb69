// The key that keeps a caller on one version of a function during a gradual
// deployment: the account its API key or session cookie claims, else its
// client address, exactly as the wazero host's canary.StickyKey computes it
// (shared/keys.AccountHint). The front Worker sends it to a function Worker
// as Cloudflare-Workers-Version-Key, so Cloudflare's version affinity keeps
// an account on one version across requests, keys and addresses. Nothing
// here authenticates: a key is only parsed, never looked up.

const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567";
const ACCOUNT_LEN = 12;
const RANDOM_LEN = 32;
const CHECK_LEN = 6;
const SECRET_LEN = 4 + ACCOUNT_LEN + 1 + RANDOM_LEN + CHECK_LEN;

export const API_KEY = "dgk_";
export const SESSION = "dgs_";
export const SESSION_COOKIE = "dg_session";

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

const valid = (ch) => (ch >= "a" && ch <= "z") || (ch >= "2" && ch <= "7");

/** parse returns the account of a well-formed secret of kind, or "". */
export function parse(kind, secret) {
  if (typeof secret !== "string" || secret.length !== SECRET_LEN || !secret.startsWith(kind) || secret[4 + ACCOUNT_LEN] !== "_") {
    return "";
  }
  for (let i = 4; i < SECRET_LEN; i++) {
    if (i !== 4 + ACCOUNT_LEN && !valid(secret[i])) return "";
  }
  if (check(secret.slice(0, SECRET_LEN - CHECK_LEN)) !== secret.slice(SECRET_LEN - CHECK_LEN)) return "";
  return secret.slice(4, 4 + ACCOUNT_LEN);
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
