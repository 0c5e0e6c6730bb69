// The Worker's fetch handler: the part of the host that lives around a
// function module (schema/abi.md, "Request handling around the module"). It
// owns the request id, the route table, a route's body cap and deadline, the
// headers every response carries and the platform errors. Status codes,
// error codes and messages are those of the wazero host (wasm-host/server),
// so a client cannot tell the two hosts apart.

import { table, modules } from "./routes.js";
import { match } from "./router.js";
import { Pool, Overloaded, DeadlineExceeded } from "./pool.js";
import { VersionError } from "./host.js";
import { parseDuration } from "./duration.js";

/** Body cap of a route whose maxBody is 0. */
const DEFAULT_MAX_BODY = 1 << 20;

/** Deadline of a request unless GATEWAY_REQUEST_TIMEOUT sets another. */
const DEFAULT_TIMEOUT_MS = 60_000;

const JSON_TYPE = "application/json; charset=utf-8";

/** One pool per module, created on first use (instances need a request). */
const pools = new Map();

function poolFor(name) {
  let pool = pools.get(name);
  if (!pool) {
    pool = new Pool(name, modules[name]);
    pools.set(name, pool);
  }
  return pool;
}

/** newRequestId returns 32 lower-case hex digits, the wazero host's format. */
function newRequestId() {
  return crypto.randomUUID().replaceAll("-", "");
}

/**
 * platformError is the platform's error answer (shared/policy.Error): body
 * {"error":{"code":…,"message":…}} and the X-Service-Error-* headers.
 */
function platformError(status, code, message, extra = []) {
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

function log(level, msg, fields) {
  const line = JSON.stringify({ level, msg, ...fields });
  if (level === "error") console.error(line);
  else console.log(line);
}

class BodyTooLarge extends Error {}

/** readBody reads at most max bytes of the request body. */
async function readBody(request, max) {
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > max) {
      await reader.cancel();
      throw new BodyTooLarge();
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

function requestTimeout(env) {
  const ms = parseDuration(env.GATEWAY_REQUEST_TIMEOUT ?? "");
  return ms > 0 ? ms : DEFAULT_TIMEOUT_MS;
}

/** serve returns the answer to request as { status, headers, body }. */
async function serve(request, env, requestId) {
  const url = new URL(request.url);
  const { route, allow } = match(table, request.method, url.pathname);
  if (!route) {
    if (allow.length > 0) {
      return platformError(405, "method_not_allowed", `this path does not accept ${request.method}`, [["allow", allow.join(", ")]]);
    }
    return platformError(404, "not_found", "no such route");
  }
  const fn = route.function;
  if (!modules[fn]) {
    return platformError(503, "function_unavailable", `the ${fn} function is not deployed on this host`);
  }
  const maxBody = route.maxBody || DEFAULT_MAX_BODY;
  let body;
  try {
    body = await readBody(request, maxBody);
  } catch (e) {
    if (e instanceof BodyTooLarge) {
      // Refused before any function runs: it costs nothing.
      return platformError(413, "body_too_large", `the request body exceeds ${maxBody} bytes`);
    }
    return platformError(400, "invalid_body", "the request body could not be read");
  }
  const headers = [];
  for (const [name, value] of request.headers) headers.push([name, value]);
  const message = {
    method: request.method,
    path: url.pathname,
    query: url.search.slice(1),
    clientAddr: request.headers.get("cf-connecting-ip") ?? "",
    requestId,
    headers,
    body,
  };
  try {
    const answer = await poolFor(fn).run((inst) => inst.handle(message, { env, requestId }), requestTimeout(env));
    return answer;
  } catch (e) {
    log("error", "function failed", { request_id: requestId, function: fn, error: String(e?.stack ?? e) });
    if (e instanceof Overloaded) {
      return platformError(503, "overloaded", "every instance of this function is busy; retry shortly", [["retry-after", "1"]]);
    }
    if (e instanceof DeadlineExceeded) {
      return platformError(504, "function_timeout", "the function did not finish before its deadline");
    }
    if (e instanceof VersionError) {
      return platformError(503, "function_unavailable", `the ${fn} function is not deployed on this host`);
    }
    return platformError(500, "internal_error", "the function failed; the request id identifies it in the logs");
  }
}

/**
 * respond builds the HTTP response. The platform owns Cache-Control and adds
 * the request id unless the function set one (a replay keeps its original).
 */
function respond(request, requestId, answer) {
  const headers = new Headers();
  for (const [name, value] of answer.headers) headers.append(name, value);
  headers.set("cache-control", "no-store");
  headers.set("x-content-type-options", "nosniff");
  if (!headers.has("x-request-id")) headers.set("x-request-id", requestId);
  let status = answer.status;
  // The wazero host sends any status from 100 to 999; a Response takes
  // 200–599 only, so the rest become 500 here.
  if (status < 200 || status > 599) status = 500;
  const nullBody = request.method === "HEAD" || status === 204 || status === 205 || status === 304;
  return new Response(nullBody ? null : answer.body, { status, headers });
}

export default {
  async fetch(request, env) {
    // No access log line here: the platform logs every request already
    // (wrangler prints one per request, Workers Logs keep them), and a
    // console line costs about 10 ms per request under wrangler dev.
    const requestId = newRequestId();
    let answer;
    try {
      answer = await serve(request, env, requestId);
    } catch (e) {
      log("error", "host failed", { request_id: requestId, error: String(e?.stack ?? e) });
      answer = platformError(500, "internal_error", "the function failed; the request id identifies it in the logs");
    }
    return respond(request, requestId, answer);
  },
};
