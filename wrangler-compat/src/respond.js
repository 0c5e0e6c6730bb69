// What every answer of the Workers host carries, shared by the front Worker
// and the function Workers: the platform error body and headers
// (shared/policy.Error), the request id, Cache-Control and nosniff. Error
// codes and their statuses come from the generated contract (the Go table
// in shared/contract); messages are those of the wazero host
// (wasm-host/server), so a client cannot tell the two hosts apart.

import { ERRORS } from "./contract.gen.js";

const JSON_TYPE = "application/json; charset=utf-8";

/**
 * Headers the front Worker adds to the subrequest it makes to a function
 * Worker. They are the hosts' business: a function Worker drops them before
 * the module sees the request, as the wazero host has no such headers.
 */
export const REQUEST_ID_HEADER = "x-gateway-request-id";
export const VERSION_KEY_HEADER = "cloudflare-workers-version-key";
export const VERSION_OVERRIDES_HEADER = "cloudflare-workers-version-overrides";
export const INTERNAL_HEADERS = new Set([REQUEST_ID_HEADER, VERSION_KEY_HEADER, VERSION_OVERRIDES_HEADER]);

const REQUEST_ID = /^[0-9a-f]{32}$/;

/**
 * newRequestId returns 32 lower-case hex digits, the wazero host's format
 * (wasm-host/server.NewRequestID): 12 of milliseconds since 1970, then 20
 * random, so ids sort by time and the ledger's index on them grows at its
 * end (schema/ledger.md, "Request ids").
 */
export function newRequestId() {
  const random = crypto.getRandomValues(new Uint8Array(10));
  let hex = Date.now().toString(16).padStart(12, "0").slice(-12);
  for (const b of random) hex += b.toString(16).padStart(2, "0");
  return hex;
}

/** requestIdOf keeps the front Worker's id for the request, or makes one. */
export function requestIdOf(request) {
  const id = request.headers.get(REQUEST_ID_HEADER) ?? "";
  return REQUEST_ID.test(id) ? id : newRequestId();
}

/**
 * platformError is the platform's error answer (shared/policy.Error): the
 * code's status from the contract, body {"error":{"code":…,"message":…}}
 * and the X-Service-Error-* headers. A code not in the contract is a bug of
 * this shim and throws.
 */
export function platformError(code, message, extra = []) {
  const status = ERRORS[code];
  if (!status) throw new Error(`platformError: ${code} is not a platform error code with a status of its own (shared/contract)`);
  return {
    status,
    headers: [
      ["content-type", JSON_TYPE],
      ["x-service-error-source", "platform"],
      ["x-service-error-code", code],
      ...extra,
    ],
    body: JSON.stringify({ error: { code, message } }),
  };
}

/**
 * refused marks the host's answer to a request none of whose function ran:
 * on a route that charges (route.charges, shared/contract) it says that
 * nothing was, x-service-credits: 0, since a missing header means unknown
 * (spec §4.8), as the wazero host's refusals do (wasm-host/server).
 */
export function refused(route, answer) {
  if (route?.charges) answer.headers.push(["x-service-credits", "0"]);
  return answer;
}

/** REDACTED stands in a log line for a secret the Worker holds. */
const REDACTED = "[REDACTED]";

/**
 * secretsOf lists the secrets of env that no log line may hold: the
 * upstream and mail keys and the ledger's token (LIBSQL_AUTH_TOKEN, or the
 * authToken of LIBSQL_URL), as the wazero host's logger removes them
 * (wasm-host/app, redact.go). No answer should bring one back (fetch.js
 * drops an echo); this is the second line, for text nobody thought of: a
 * ledger error that quotes a proxy's message, a module's output.
 */
export function secretsOf(env) {
  let urlToken = "";
  try {
    urlToken = new URL(env?.LIBSQL_URL ?? "").searchParams.get("authToken") ?? "";
  } catch {}
  return [env?.UPSTREAM_API_KEY, env?.MAIL_API_KEY, env?.LIBSQL_AUTH_TOKEN, urlToken].filter((s) => typeof s === "string" && s !== "");
}

/** redact replaces each secret in a log line, as written or JSON-escaped. */
export function redact(line, secrets) {
  for (const secret of secrets) {
    for (const form of new Set([secret, JSON.stringify(secret).slice(1, -1)])) line = line.replaceAll(form, REDACTED);
  }
  return line;
}

/** log writes a JSON log line without any of env's secrets. */
export function log(level, msg, fields, env) {
  const line = redact(JSON.stringify({ level, msg, ...fields }), secretsOf(env));
  if (level === "error") console.error(line);
  else console.log(line);
}

/**
 * respond builds the HTTP response. The platform owns Cache-Control and adds
 * the request id unless the function set one (a replay keeps its original).
 * With an https:// SERVICE_ORIGIN in env every answer carries
 * Strict-Transport-Security, as on the wazero host (wasm-host/app,
 * strictTransport): a browser that has seen it never sends the session
 * cookie over plain http to this host again.
 */
export function respond(request, requestId, answer, env) {
  const headers = new Headers();
  for (const [name, value] of answer.headers) headers.append(name, value);
  headers.set("cache-control", "no-store");
  headers.set("x-content-type-options", "nosniff");
  if (String(env?.SERVICE_ORIGIN ?? "").startsWith("https://")) headers.set("strict-transport-security", "max-age=31536000");
  if (!headers.has("x-request-id")) headers.set("x-request-id", requestId);
  let status = answer.status;
  // The wazero host sends any status from 100 to 999; a Response takes
  // 200–599 only, so the rest become 500 here.
  if (status < 200 || status > 599) status = 500;
  const nullBody = request.method === "HEAD" || status === 204 || status === 205 || status === 304;
  return new Response(nullBody ? null : answer.body, { status, headers });
}
