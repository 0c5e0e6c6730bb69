// The front Worker: the public entry of the Workers deployment. It holds the
// route table and passes each request, through a service binding, to the
// Worker of the function that serves it. Each function is its own Worker so
// that it has its own versions and its own gradual deployments; the front
// holds no module and changes only when the route table does.
//
// On the way it gives the request its platform id (the function Worker
// answers with it) and sets the version affinity key, so that during a
// gradual deployment Cloudflare keeps each account on one version of the
// function, as the wazero host's canary does (sticky.js). A smoke test pins a
// version with X-Gateway-Version: <Workers version id>, which becomes a
// Cloudflare-Workers-Version-Overrides header for that function's Worker.

import { match, requestPath } from "./router.js";
import { probes } from "./probes.js";
import { stickyKey } from "./sticky.js";
import {
  REQUEST_ID_HEADER,
  VERSION_KEY_HEADER,
  VERSION_OVERRIDES_HEADER,
  log,
  newRequestId,
  platformError,
  refused,
  respond,
} from "./respond.js";

/** The pin header of the wazero host (wasm-host/canary.HeaderPin). */
export const PIN_HEADER = "x-gateway-version";

/** A Workers version id, the only pin Workers can honour. */
const VERSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * forwarded builds the subrequest for a function Worker: the client's
 * request with the platform's headers set and any client-sent copy of them
 * replaced, so a caller cannot choose another caller's affinity key.
 */
export function forwarded(request, requestId, workerName) {
  const out = new Request(request);
  out.headers.set(REQUEST_ID_HEADER, requestId);
  out.headers.set(VERSION_KEY_HEADER, stickyKey(request));
  out.headers.delete(VERSION_OVERRIDES_HEADER);
  const pin = (request.headers.get(PIN_HEADER) ?? "").trim().toLowerCase();
  if (VERSION_ID.test(pin)) out.headers.set(VERSION_OVERRIDES_HEADER, `${workerName}="${pin}"`);
  return out;
}

/**
 * frontWorker returns the front Worker.
 *
 * table     the route table (wasm-host/routes, from `gateway routes`)
 * functions function name → { binding, worker }: the env binding of its
 *           Worker and that Worker's name; a routed function missing here
 *           is not deployed and its routes answer 503, as on the wazero host
 * migrations the ledger migrations ({ version, name }) this build needs,
 *           which /readyz checks the ledger for (probes.js)
 * openapi   the OpenAPI document served at /openapi.json (schema/openapi.json)
 */
export function frontWorker({ table, functions, migrations = [], openapi = null }) {
  const probe = probes({ table, functions, migrations, openapi });
  return {
    async fetch(request, env) {
      const requestId = newRequestId();
      const probed = await probe(request, env);
      if (probed) {
        if (probed.status === 405) {
          return respond(request, requestId, platformError("method_not_allowed", `this path does not accept ${request.method}`, [["allow", probed.allow]]), env);
        }
        return respond(request, requestId, { status: probed.status, headers: [["content-type", "application/json; charset=utf-8"], ...(probed.headers ?? [])], body: JSON.stringify(probed.body) }, env);
      }
      const { route, allow } = match(table, request.method, requestPath(new URL(request.url)));
      if (!route) {
        if (allow.length > 0) {
          return respond(request, requestId, platformError("method_not_allowed", `this path does not accept ${request.method}`, [["allow", allow.join(", ")]]), env);
        }
        return respond(request, requestId, platformError("not_found", "no such route"), env);
      }
      const fn = functions[route.function];
      const service = fn && env[fn.binding];
      if (!service) {
        return respond(request, requestId, refused(route, platformError("function_unavailable", `the ${route.function} function is not deployed on this host`)), env);
      }
      try {
        return await service.fetch(forwarded(request, requestId, fn.worker));
      } catch (e) {
        log("error", "function worker failed", { request_id: requestId, function: route.function, error: String(e?.stack ?? e) }, env);
        return respond(request, requestId, platformError("internal_error", "the function failed; the request id identifies it in the logs"), env);
      }
    },
  };
}
