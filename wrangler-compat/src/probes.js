// Liveness and readiness of the Workers deployment, answered by the front
// Worker at the wazero host's paths and with its bodies (wasm-host/app,
// health.go), so a monitor or load balancer treats both hosts alike.
//
// /healthz says the front Worker runs. /readyz says whether decisions can
// be served: the ledger answers and has every migration this build
// expects, an upstream is configured, and every routed function has its
// Worker. The front reads the ledger with one lone read through ledger.js
// (no transaction, no write lock); it needs LIBSQL_URL and
// LIBSQL_AUTH_TOKEN for that, and the plain settings, which the generator
// gives it (wrangler-compat/workers).

import { Ledger, parseLibsqlURL } from "./ledger.js";
import { requestPath } from "./router.js";
import { log } from "./respond.js";

export const HEALTH_PATH = "/healthz";
export const READY_PATH = "/readyz";
/** The OpenAPI document (schema/openapi.json), as the wazero host serves it. */
export const OPENAPI_PATH = "/openapi.json";

/** How long a readiness answer is reused by an isolate. */
const READY_CACHE_MS = 1000;

/** The upstream kinds and whether they need UPSTREAM_URL on Workers. */
const KINDS = { vendor: true, router: true, edge: false };

/**
 * readiness checks the deployment, in the wazero host's order (ledger,
 * upstream, functions). migrations are the names of the
 * migrations the ledger must have ({ version, name }); table is the route
 * table and functions maps a function to its binding.
 */
export async function readiness(env, { table, functions, migrations }) {
  const r = { ready: false, checks: { ledger: "ok", upstream: "ok", functions: "ok" } };
  const reasons = [];

  const ledger = await ledgerState(env, migrations);
  if (ledger !== "ok") {
    r.checks.ledger = ledger;
    reasons.push(
      ledger === "not_configured" ? "ledger not configured: give the front Worker LIBSQL_URL"
      : ledger === "not_migrated" ? "ledger not migrated: run `bin/gateway admin migrate`"
      : "ledger unreachable",
    );
  }

  const kind = env.UPSTREAM_KIND ?? "";
  if (!(kind in KINDS) || (KINDS[kind] && !env.UPSTREAM_URL)) {
    r.checks.upstream = "not_configured";
    reasons.push(
      kind === "" ? "upstream not configured: set UPSTREAM_KIND and UPSTREAM_URL"
      : !(kind in KINDS) ? `upstream not configured: UPSTREAM_KIND=${kind} is not vendor, edge or router`
      : `upstream not configured: UPSTREAM_KIND=${kind} needs UPSTREAM_URL`,
    );
  }

  const missing = [];
  for (const route of table) {
    const fn = functions[route.function];
    if ((!fn || !env[fn.binding]) && !missing.includes(route.function)) missing.push(route.function);
  }
  if (missing.length > 0) {
    r.checks.functions = "missing";
    r.missingFunctions = missing;
    reasons.push(`functions missing: ${missing.join(", ")}`);
  }
  if (reasons.length > 0) r.reasons = reasons;
  r.ready = reasons.length === 0;
  return r;
}

/** ledgerState is ok, not_configured, unreachable or not_migrated. */
async function ledgerState(env, migrations) {
  if (!env.LIBSQL_URL) return "not_configured";
  let ledger;
  try {
    parseLibsqlURL(env.LIBSQL_URL);
    ledger = new Ledger(env.LIBSQL_URL, env.LIBSQL_AUTH_TOKEN ?? "");
  } catch {
    return "not_configured";
  }
  let rows;
  try {
    const [[tables]] = await ledger.read("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'");
    if (tables.value === 0n) return migrations.length > 0 ? "not_migrated" : "ok";
    rows = await ledger.read("SELECT version FROM schema_migrations");
  } catch (e) {
    log("warn", "readiness: ledger check failed", { error: String(e?.message ?? e) }, env);
    return "unreachable";
  }
  const applied = new Set(rows.map(([v]) => Number(v.value)));
  return migrations.every((m) => applied.has(m.version)) ? "ok" : "not_migrated";
}

/**
 * probes returns the front's handler of the probe paths and of the OpenAPI
 * document (deployment.openapi, given by the generator): a function of
 * (request, env, requestId) that answers them, or returns null for any
 * other path. Answers are reused for a second per isolate, so probes cost
 * the ledger at most two reads a second each.
 */
export function probes(deployment) {
  let cached = null;
  return async (request, env) => {
    const path = requestPath(new URL(request.url));
    const openapi = path === OPENAPI_PATH && deployment.openapi;
    if (path !== HEALTH_PATH && path !== READY_PATH && !openapi) return null;
    if (request.method !== "GET" && request.method !== "HEAD") return { status: 405, allow: "GET, HEAD" };
    if (path === HEALTH_PATH) return { status: 200, body: { status: "ok" } };
    // Client generators and API browsers fetch it from other origins.
    if (openapi) return { status: 200, body: openapi, headers: [["access-control-allow-origin", "*"]] };
    if (!cached || Date.now() - cached.at >= READY_CACHE_MS) {
      cached = { at: Date.now(), body: await readiness(env, deployment) };
    }
    return { status: cached.body.ready ? 200 : 503, body: cached.body };
  };
}
