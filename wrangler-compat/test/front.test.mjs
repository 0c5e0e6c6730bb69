// Unit tests of the front Worker (src/front.js) under Node's test runner,
// with plain objects standing in for the service bindings: routing, the
// platform errors it answers itself, and the headers it gives the function
// Worker (request id, version affinity key, version override).

import { test } from "node:test";
import assert from "node:assert/strict";

import { frontWorker, forwarded } from "../src/front.js";
import { newRequestId } from "../src/respond.js";

const table = [
  { method: "GET", pattern: "/api/service/config", function: "config", maxBody: 0 },
  { method: "GET", pattern: "/v1/models", function: "models", maxBody: 0 },
  { method: "DELETE", pattern: "/api/service/keys/:id", function: "keys", maxBody: 0 },
];
const front = frontWorker({
  table,
  functions: {
    config: { binding: "FN_CONFIG", worker: "dg-config" },
    keys: { binding: "FN_KEYS", worker: "dg-keys" },
  },
});

/** binding records the requests a function Worker receives. */
function binding() {
  const seen = [];
  return { seen, fetch: async (req) => (seen.push(req), new Response("from the function", { headers: { "x-function-version": "config@0123456789ab" } })) };
}

test("a routed request reaches its function's Worker with the platform's headers", async () => {
  const fn = binding();
  const resp = await front.fetch(
    new Request("https://gw.test/api/service/config?x=1", {
      headers: {
        "cf-connecting-ip": "192.0.2.7",
        "cloudflare-workers-version-key": "someone-else",
        "cloudflare-workers-version-overrides": 'dg-config="11111111-1111-1111-1111-111111111111"',
        "x-gateway-request-id": "f".repeat(32),
      },
    }),
    { FN_CONFIG: fn },
  );
  assert.equal(await resp.text(), "from the function");
  assert.equal(resp.headers.get("x-function-version"), "config@0123456789ab");
  const req = fn.seen[0];
  assert.equal(req.url, "https://gw.test/api/service/config?x=1");
  assert.match(req.headers.get("x-gateway-request-id"), /^[0-9a-f]{32}$/);
  assert.notEqual(req.headers.get("x-gateway-request-id"), "f".repeat(32), "a client cannot choose the request id");
  assert.equal(req.headers.get("cloudflare-workers-version-key"), "addr:192.0.2.7", "an anonymous caller is kept by address");
  assert.equal(req.headers.get("cloudflare-workers-version-overrides"), null, "only a pin sets an override");
});

test("X-Gateway-Version with a Workers version id pins that version of the function's Worker", () => {
  const id = "dc8dcd28-271b-4367-9840-6c244f84cb40";
  const pinned = forwarded(new Request("https://gw.test/", { headers: { "x-gateway-version": id.toUpperCase() } }), "a".repeat(32), "dg-decide");
  assert.equal(pinned.headers.get("cloudflare-workers-version-overrides"), `dg-decide="${id}"`);
  for (const pin of ["canary", "stable", "decide@0123456789ab", 'x"y']) {
    const r = forwarded(new Request("https://gw.test/", { headers: { "x-gateway-version": pin } }), "a".repeat(32), "dg-decide");
    assert.equal(r.headers.get("cloudflare-workers-version-overrides"), null, pin);
  }
});

test("the front answers 404, 405 and 503 itself, like the wazero host", async () => {
  const env = { FN_CONFIG: binding() };
  const cases = [
    ["GET", "/nowhere", 404, "not_found", null],
    ["POST", "/api/service/config", 405, "method_not_allowed", "GET"],
    ["GET", "/v1/models", 503, "function_unavailable", null], // routed, not deployed
    ["DELETE", "/api/service/keys/k1", 503, "function_unavailable", null], // deployed, binding missing
  ];
  for (const [method, path, status, code, allow] of cases) {
    const resp = await front.fetch(new Request(`https://gw.test${path}`, { method }), env);
    assert.equal(resp.status, status, path);
    assert.equal(resp.headers.get("x-service-error-code"), code);
    assert.equal(resp.headers.get("x-service-error-source"), "platform");
    assert.equal(resp.headers.get("cache-control"), "no-store");
    assert.match(resp.headers.get("x-request-id"), /^[0-9a-f]{32}$/);
    assert.equal(resp.headers.get("allow"), allow);
    assert.equal((await resp.json()).error.code, code);
  }
});

test("the front answers liveness, and readiness with what is not ready", async () => {
  const fn = binding();
  const health = await front.fetch(new Request("https://gw.test/healthz"), {});
  assert.equal(health.status, 200);
  assert.equal(await health.text(), '{"status":"ok"}');
  assert.equal(health.headers.get("cache-control"), "no-store");
  assert.match(health.headers.get("x-request-id"), /^[0-9a-f]{32}$/);

  const ready = await front.fetch(new Request("https://gw.test/readyz"), { FN_CONFIG: fn, UPSTREAM_KIND: "vendor" });
  assert.equal(ready.status, 503);
  assert.deepEqual(await ready.json(), {
    ready: false,
    checks: { ledger: "not_configured", upstream: "not_configured", functions: "missing" },
    missingFunctions: ["models", "keys"],
    reasons: [
      "ledger not configured: give the front Worker LIBSQL_URL",
      "upstream not configured: UPSTREAM_KIND=vendor needs UPSTREAM_URL",
      "functions missing: models, keys",
    ],
  });
  assert.equal(fn.seen.length, 0, "probes reach no function");

  const post = await front.fetch(new Request("https://gw.test/readyz", { method: "POST" }), {});
  assert.deepEqual([post.status, post.headers.get("allow"), post.headers.get("x-service-error-code")], [405, "GET, HEAD", "method_not_allowed"]);
});

test("readiness reports a ledger that does not answer as unreachable", async () => {
  const lonely = frontWorker({ table: [], functions: {}, migrations: [{ version: 1, name: "0001_init.sql" }] });
  const resp = await lonely.fetch(new Request("https://gw.test/readyz"), { LIBSQL_URL: "http://127.0.0.1:1", UPSTREAM_KIND: "edge" });
  assert.equal(resp.status, 503);
  assert.deepEqual(await resp.json(), { ready: false, checks: { ledger: "unreachable", upstream: "ok", functions: "ok" }, reasons: ["ledger unreachable"] });
});

test("request ids are 32 hex digits that begin with the milliseconds they were made at", () => {
  const before = Date.now();
  const ids = Array.from({ length: 50 }, () => newRequestId());
  const after = Date.now();
  for (const id of ids) {
    assert.match(id, /^[0-9a-f]{32}$/);
    const ms = parseInt(id.slice(0, 12), 16);
    assert.ok(ms >= before && ms <= after, `${id}: ${ms} not in [${before}, ${after}]`);
  }
  assert.equal(new Set(ids.map((id) => id.slice(12))).size, ids.length, "the random part repeats");
});

test("an https SERVICE_ORIGIN puts Strict-Transport-Security on every answer, as on the wazero host", async () => {
  const https = { SERVICE_ORIGIN: "https://gw.example" };
  const notFound = await front.fetch(new Request("https://gw.test/nowhere"), https);
  assert.equal(notFound.status, 404);
  assert.equal(notFound.headers.get("strict-transport-security"), "max-age=31536000");
  const live = await front.fetch(new Request("https://gw.test/healthz"), https);
  assert.equal(live.headers.get("strict-transport-security"), "max-age=31536000");
  const plain = await front.fetch(new Request("https://gw.test/nowhere"), { SERVICE_ORIGIN: "http://127.0.0.1:8787" });
  assert.equal(plain.headers.get("strict-transport-security"), null, "not for a console served over http");
});
