// The fetch handler of a function Worker: one function module and the part
// of the host that lives around it (schema/abi.md, "Request handling around
// the module"): the route's body cap and deadline, the instance pool, the
// headers every response carries and the platform errors for a trap or a
// timeout. Each function is its own Worker so that each can be versioned and
// rolled out alone; the front Worker (front.js) routes to them.
//
// A function Worker is normally reached only through the front's service
// binding (its generated configuration sets workers_dev = false), which
// passes the request id and the version affinity key along. Called
// directly, it still routes among its own routes and answers like the
// wazero host.

import { match, requestPath } from "./router.js";
import { Pool, Overloaded, DeadlineExceeded } from "./pool.js";
import { VersionError, awaitCall, ledgerFor } from "./host.js";
import { record } from "./samples.js";
import { parseDuration } from "./duration.js";
import { DEFAULT_MAX_BODY, SETTINGS } from "./contract.gen.js";
import { SettingError, checkSettings } from "./settings.js";
import { readStream, TooLarge } from "./fetch.js";
import { INTERNAL_HEADERS, log, platformError, refused, requestIdOf, respond } from "./respond.js";

/** The request deadline: GATEWAY_REQUEST_TIMEOUT, checked, or its default. */
const DEFAULT_TIMEOUT = SETTINGS.find((s) => s.name === "GATEWAY_REQUEST_TIMEOUT").default;

function requestTimeout(env) {
  return parseDuration(env.GATEWAY_REQUEST_TIMEOUT || DEFAULT_TIMEOUT);
}

/**
 * settleMargin is the part of the request's deadline a decision keeps to
 * settle after its upstream call (shared/settings.UpstreamTimeout): a
 * quarter of it, at most 5 s.
 */
function settleMargin(timeoutMs) {
  return Math.min(timeoutMs / 4, 5000);
}

/** A new request's wait for an instance: GATEWAY_QUEUE_TIMEOUT, checked, or its default. */
const DEFAULT_QUEUE = SETTINGS.find((s) => s.name === "GATEWAY_QUEUE_TIMEOUT").default;

function queueTimeout(env) {
  return parseDuration(env.GATEWAY_QUEUE_TIMEOUT || DEFAULT_QUEUE);
}

/**
 * checked is env with its settings checked once per isolate (settings.js):
 * the env object a Worker gets is the same for every request of the isolate.
 * A bad setting is remembered as its error.
 */
const checked = new WeakMap();

function checkedEnv(env) {
  let c = checked.get(env);
  if (c === undefined) {
    try {
      c = checkSettings(env);
    } catch (e) {
      if (!(e instanceof SettingError)) throw e;
      log("error", "invalid setting: this Worker serves nothing until it is fixed", { error: e.message }, env);
      c = e;
    }
    checked.set(env, c);
  }
  return c;
}

/**
 * functionWorker returns the Worker of one function module.
 *
 * name     the function's name (build/functions/<name>.wasm)
 * module   its compiled WebAssembly.Module
 * version  the module version it answers with in X-Function-Version,
 *          name@<12 hex of the module's SHA-256>, as the wazero host names it
 * sha256   the module's whole SHA-256, under which its outcomes are counted
 * routes   the route table entries this function serves
 */
export function functionWorker({ name, module, version, sha256, routes }) {
  let pool = null; // instances need a request to be created in

  async function serve(request, env, requestId, timing) {
    const url = new URL(request.url);
    const path = requestPath(url);
    const { route, allow } = match(routes, request.method, path);
    if (!route) {
      if (allow.length > 0) {
        return platformError("method_not_allowed", `this path does not accept ${request.method}`, [["allow", allow.join(", ")]]);
      }
      return platformError("not_found", "no such route");
    }
    const maxBody = route.maxBody || DEFAULT_MAX_BODY;
    let body;
    try {
      body = await readStream(request.body, maxBody);
    } catch (e) {
      if (e instanceof TooLarge) {
        // Refused before any function runs: it costs nothing.
        return refused(route, platformError("body_too_large", `the request body exceeds ${maxBody} bytes`));
      }
      return refused(route, platformError("invalid_body", "the request body could not be read"));
    }
    const headers = [];
    for (const [h, value] of request.headers) {
      if (!INTERNAL_HEADERS.has(h)) headers.push([h, value]);
    }
    const message = {
      method: request.method,
      path,
      query: url.search.slice(1),
      clientAddr: request.headers.get("cf-connecting-ip") ?? "",
      requestId,
      headers,
      body,
    };
    // The env is the isolate's, the same for every request it serves:
    // instances read their settings from it once, as they initialise.
    pool ??= new Pool(name, module, env);
    const timeoutMs = requestTimeout(env);
    const queueMs = queueTimeout(env);
    const deadline = Date.now() + timeoutMs;
    try {
      // An Await hands the upstream call to us: the instance goes back to
      // the pool while the call runs, and the function continues on any
      // free instance with the result (schema/abi.md, "Awaiting").
      let call = message;
      for (let awaits = 0; ; awaits++) {
        const answer = await pool.run(async (inst) => {
          const start = Date.now();
          try {
            return await inst.handle(call, { env, requestId });
          } finally {
            timing.fnMs += Date.now() - start;
          }
        }, Math.max(1, deadline - Date.now()), awaits === 0 ? { queueMs } : { continuing: true }).catch((e) => {
          // A continuing call without an instance before the deadline is out
          // of time, not a refusal that ran nothing: its first call ran (a
          // decision reserved and called its upstream), as on the wazero
          // host (runtime.Function.run).
          throw awaits > 0 && e instanceof Overloaded ? new DeadlineExceeded(name, timeoutMs) : e;
        });
        if (!answer.await) {
          answer.headers.push(["x-function-version", version]);
          return answer;
        }
        if (awaits === MAX_AWAITS) throw new Error(`${name} asked for more than ${MAX_AWAITS} outbound calls`);
        const outbound = Date.now();
        call = { ...message, resume: await beforeDeadline(awaitCall(answer.await, env, deadline - settleMargin(timeoutMs)), deadline, name, timeoutMs) };
        timing.fnMs += Date.now() - outbound; // the function's own call, as on the wazero host
      }
    } catch (e) {
      // A refusal that ran nothing is not a failure to look into, and under
      // overload a line per refused request would only add to the load: no
      // line, as on the wazero host (server.failure).
      if (!(e instanceof Overloaded)) {
        log("error", "function failed", { request_id: requestId, function: name, version, error: String(e?.stack ?? e) }, env);
      }
      const failed = failure(e, name, route);
      failed.headers.push(["x-function-version", version]);
      return failed;
    }
  }

  return {
    async fetch(request, env, ctx) {
      // No access log line here: the platform logs every request already
      // (wrangler prints one per request, Workers Logs keep them), and a
      // console line costs about 10 ms per request under wrangler dev.
      const requestId = requestIdOf(request);
      const checkedOrError = checkedEnv(env ?? {});
      if (checkedOrError instanceof SettingError) {
        return respond(request, requestId, platformError("misconfigured", `this Worker's settings are invalid: ${checkedOrError.message}`), env);
      }
      const timing = { fnMs: 0, start: Date.now() };
      const work = serve(request, checkedOrError, requestId, timing).catch((e) => {
        log("error", "host failed", { request_id: requestId, error: String(e?.stack ?? e) }, env);
        return platformError("internal_error", "the function failed; the request id identifies it in the logs");
      });
      if (sha256 && env.LIBSQL_URL) {
        // Counted after the answer, off the request's path, for the
        // rollout analysis; routed requests only (404/405 never reach a
        // version's code, yet they are 4xx and left out of the rate).
        ctx?.waitUntil?.(
          work.then((answer) => {
            const total = Date.now() - timing.start;
            return record(ledgerFor(env.LIBSQL_URL, env.LIBSQL_AUTH_TOKEN ?? ""), name, sha256, answer.status, answer.headers,
              timing.fnMs, Math.max(0, total - timing.fnMs));
          }),
        );
      }
      // A client that hangs up must not stop a decision between reserving
      // and settling: waitUntil keeps it running to the end, so resending
      // the same Idempotency-Key replays it.
      ctx?.waitUntil?.(work);
      return respond(request, requestId, await work, env);
    },
  };
}

/** Outbound calls one request may hand over, as in the wazero host. */
const MAX_AWAITS = 8;

/** beforeDeadline settles like p, or throws DeadlineExceeded at the deadline. */
async function beforeDeadline(p, deadline, name, timeoutMs) {
  let timer;
  const expiry = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineExceeded(name, timeoutMs)), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([p, expiry]);
  } finally {
    clearTimeout(timer);
  }
}

/** failure maps a failed call to the wazero host's platform error. */
function failure(e, name, route) {
  if (e instanceof Overloaded) {
    return refused(route, platformError("overloaded", "every instance of this function is busy; retry shortly", [["retry-after", "1"]]));
  }
  if (e instanceof DeadlineExceeded) {
    return platformError("function_timeout", "the function did not finish before its deadline");
  }
  if (e instanceof VersionError) {
    return refused(route, platformError("function_unavailable", `the ${name} function is not deployed on this host`));
  }
  return platformError("internal_error", "the function failed; the request id identifies it in the logs");
}
