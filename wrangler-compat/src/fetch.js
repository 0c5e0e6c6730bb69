// The fetch import: outbound HTTP for a module, with the policy of the wazero
// host's egress package (wasm-host/egress), error texts included. The host,
// not the module, owns the upstream secret, the allow-list, the deadline and
// the size cap, so a bug in a function can neither leak the key nor send it
// anywhere else, nor hang or exhaust the Worker on a bad upstream.

/** Deadline of a fetch whose request names none. */
export const DEFAULT_TIMEOUT_MS = 60_000;

/** Largest response body accepted when the request names no limit. */
export const DEFAULT_MAX_BYTES = 4 << 20;

/**
 * Request headers a module may not send: only the host authenticates, and
 * the runtime chooses the encoding (and decodes it), so every body the
 * credential check below reads is the decoded one.
 */
const REQUEST_HEADERS_DROPPED = new Set(["authorization", "cookie", "host", "content-length", "accept-encoding"]);

/** Response headers never handed back to a module. */
const RESPONSE_HEADERS_DROPPED = new Set(["authorization", "set-cookie"]);

/** origin returns scheme://host[:port] of a URL, lower-case, or "". */
export function origin(raw) {
  try {
    const u = new URL(raw);
    return u.host ? `${u.protocol}//${u.host}`.toLowerCase() : "";
  } catch {
    return "";
  }
}

/**
 * egressPolicy derives what a deployment may reach from its settings: the
 * origins of UPSTREAM_URL and MAIL_URL, and for each credential the one
 * origin it is ever sent to (the upstream key to the upstream, the mail key
 * to the mail service), as wasm-host/app gives them to wasm-host/egress.
 */
function egressPolicy(env) {
  const upstream = origin((env.UPSTREAM_URL ?? "").replace(/\/+$/, ""));
  const mail = origin(env.MAIL_URL ?? "");
  const allowed = [upstream, mail].filter(Boolean);
  const credentials = new Map([
    ["upstream", { token: env.UPSTREAM_API_KEY ?? "", origin: upstream }],
    ["mail", { token: env.MAIL_API_KEY ?? "", origin: mail }],
  ]);
  return { allowed, credentials };
}

function failure(errKind, errMsg) {
  return { status: 0, headers: [], body: null, errKind, errMsg };
}

/**
 * hostFetch performs a decoded FetchRequest and returns a FetchResponse. It
 * never throws: a request that produced no complete HTTP answer, or whose
 * answer held the credential it carried, comes back with status 0 and an
 * error kind (denied, timeout, connect, too_large, credential_leak).
 * Redirects are returned as they are, never followed: following one could
 * carry the credential to another origin.
 */
export async function hostFetch(r, env) {
  const policy = egressPolicy(env);
  const dest = origin(r.url);
  if (dest === "" || !policy.allowed.includes(dest)) {
    return failure("denied", `destination not allowed: ${dest}`);
  }
  const headers = new Headers();
  for (const [name, value] of r.headers) {
    if (!REQUEST_HEADERS_DROPPED.has(name.toLowerCase())) headers.append(name, value);
  }
  let secret = "";
  if (r.credential) {
    const cred = policy.credentials.get(r.credential);
    if (!cred || cred.origin === "" || dest !== cred.origin) {
      return failure("denied", "credential not available for this destination");
    }
    if (cred.token) {
      headers.set("authorization", `Bearer ${cred.token}`);
      secret = cred.token;
    }
  }

  const timeoutMs = r.timeoutMs || DEFAULT_TIMEOUT_MS;
  const maxBytes = r.maxBytes || DEFAULT_MAX_BYTES;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const broken = () =>
    controller.signal.aborted ? failure("timeout", "upstream did not answer in time") : failure("connect", "upstream connection failed");
  try {
    let resp;
    try {
      resp = await fetch(r.url, {
        method: r.method || "GET",
        headers,
        body: r.body && r.body.length > 0 ? r.body : undefined,
        redirect: "manual",
        signal: controller.signal,
      });
    } catch {
      return broken();
    }
    let body;
    try {
      body = await readCapped(resp, maxBytes);
    } catch (e) {
      if (e instanceof TooLarge) return failure("too_large", `response body over ${maxBytes} bytes`);
      return broken();
    }
    if (secret && echoes(secret, body, resp.headers)) {
      // The upstream answered with the operator's own credential: none of
      // the answer may reach the module, which could pass it to a caller
      // or a log, and nothing of it is logged here.
      return failure("credential_leak", "the answer contained the credential sent with the request; it was dropped");
    }
    const out = [];
    for (const [name, value] of resp.headers) {
      if (!RESPONSE_HEADERS_DROPPED.has(name)) out.push([name, value]);
    }
    return { status: resp.status, headers: out, body, errKind: "", errMsg: "" };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * echoes reports whether an answer holds secret, in its body or any header
 * name or value, as sent or in the escaped forms an echo takes (JSON's \/,
 * percent-encoding), and in the body once its JSON escapes are decoded
 * (\u002d, up to three levels of a string inside a string); in any letter
 * case. As wasm-host/egress checks it.
 */
export function echoes(secret, body, headers) {
  const forms = [...new Set([secret, secret.replaceAll("/", "\\/"), encodeURIComponent(secret), queryEscape(secret), pathEscape(secret)])].map((f) => f.toLowerCase());
  let text = body && body.length > 0 ? lenient.decode(body) : "";
  const lower = text.toLowerCase();
  for (const form of forms) {
    if (lower.includes(form)) return true;
    for (const [name, value] of headers) {
      if (name.toLowerCase().includes(form) || value.toLowerCase().includes(form)) return true;
    }
  }
  for (let level = 0; level < MAX_ESCAPE_LEVELS && text.includes("\\"); level++) {
    text = unescapeJSON(text);
    if (text.toLowerCase().includes(forms[0])) return true;
  }
  return false;
}

/** MAX_ESCAPE_LEVELS: a JSON string holding JSON text escapes it again. */
const MAX_ESCAPE_LEVELS = 3;
const lenient = new TextDecoder();
const SHORT_ESCAPES = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

/**
 * unescapeJSON decodes every JSON escape sequence in text, in or out of a
 * string, and leaves anything else as it was: the text need not be JSON.
 */
function unescapeJSON(text) {
  return text.replace(/\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))/g, (_, hex, c) =>
    hex ? String.fromCharCode(parseInt(hex, 16)) : SHORT_ESCAPES[c],
  );
}

/**
 * pathEscape is Go's url.PathEscape: encodeURIComponent, but $ & + : = @
 * kept as they are.
 */
function pathEscape(s) {
  return encodeURIComponent(s).replace(/%(24|26|2B|3A|3D|40)/g, (m) => decodeURIComponent(m));
}

/** queryEscape is Go's url.QueryEscape: encodeURIComponent with + for space. */
function queryEscape(s) {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).replaceAll("%20", "+");
}

/** TooLarge is thrown by readStream when a body passes its limit. */
export class TooLarge extends Error {}

/** readCapped reads a response body, failing as soon as it passes maxBytes. */
async function readCapped(resp, maxBytes) {
  const declared = Number(resp.headers.get("content-length") ?? "NaN");
  if (declared > maxBytes) {
    await resp.body?.cancel();
    throw new TooLarge();
  }
  return readStream(resp.body, maxBytes);
}

/**
 * readStream reads a body stream (a request's or a response's) into one
 * array, throwing TooLarge as soon as it passes maxBytes: an oversized
 * body is never buffered whole.
 */
export async function readStream(stream, maxBytes) {
  if (!stream) return new Uint8Array(0);
  const reader = stream.getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > maxBytes) {
      await reader.cancel();
      throw new TooLarge();
    }
    chunks.push(value);
  }
  const body = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    body.set(c, off);
    off += c.length;
  }
  return body;
}
