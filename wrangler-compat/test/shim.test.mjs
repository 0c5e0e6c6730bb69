// Unit tests of the shim's pure parts under Node's test runner (run by
// units_test.go): settings, durations, routing, the WASI clock, and the
// fetch policy against a local HTTP server standing in for the upstream.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";

import { config, isSecret } from "../src/config.js";
import { parseDuration } from "../src/duration.js";
import { SettingError, checkSettings } from "../src/settings.js";
import { match, requestPath } from "../src/router.js";
import { hostFetch } from "../src/fetch.js";
import { parseLibsqlURL } from "../src/ledger.js";
import { classify, scalarSelect } from "../src/sqlshape.js";
import { Wasi } from "../src/wasi.js";
import { Pool, Overloaded, MAX_INSTANCES, STALLED_AFTER_MS } from "../src/pool.js";
import { functionWorker } from "../src/function.js";
import { redact, secretsOf } from "../src/respond.js";

test("config reads only module settings, fills their defaults and never reads a secret", () => {
  const env = {
    SERVICE_RATE_LIMIT: "7",
    SERVICE_WELCOME_CREDITS: 5,
    UPSTREAM_URL: "https://up.test/v1",
    UPSTREAM_API_KEY: "sk",
    LIBSQL_URL: "libsql://db",
    LIBSQL_AUTH_TOKEN: "t",
    MAIL_API_KEY: "m",
    OTHER_SECRET: "s",
    RANDOM_SETTING: "r",
    AI: { run() {} },
  };
  assert.equal(config(env, "SERVICE_RATE_LIMIT"), "7");
  assert.equal(config(env, "SERVICE_WELCOME_CREDITS"), "5");
  assert.equal(config(env, "UPSTREAM_URL"), "https://up.test/v1");
  assert.equal(config(env, "SERVICE_AUTH_RATE_LIMIT"), "600", "unset: the contract's default");
  for (const name of ["UPSTREAM_API_KEY", "LIBSQL_URL", "LIBSQL_AUTH_TOKEN", "MAIL_API_KEY", "OTHER_SECRET", "RANDOM_SETTING", "AI", "toString", "__proto__"]) {
    assert.equal(config(env, name), "", name);
  }
  assert.ok(isSecret("X_TOKEN") && isSecret("X_KEY") && isSecret("X_SECRET") && !isSecret("SERVICE_DOCS_URL"));
});

test("settings are checked by the contract's rules and a bad one is named", () => {
  const ok = checkSettings({ SERVICE_RATE_LIMIT: 7, UPSTREAM_KIND: "Edge", SERVICE_ORIGIN: "https://gw.example", AI: {} });
  assert.equal(ok.SERVICE_RATE_LIMIT, "7");
  assert.equal(ok.UPSTREAM_KIND, "edge", "an enum in the table's spelling");
  assert.ok(ok.AI, "bindings pass through");
  for (const [name, value] of [
    ["SERVICE_RATE_LIMIT", "0"],
    ["SERVICE_AUTH_RATE_LIMIT", "many"],
    ["SERVICE_WELCOME_CREDITS", "-1"],
    ["SERVICE_WELCOME_CREDITS", "9223372036854775807"],
    ["SERVICE_RATE_LIMIT", "2147483648"],
    ["SERVICE_IDEMPOTENCY_TTL", "24"],
    ["GATEWAY_REQUEST_TIMEOUT", "0s"],
    ["UPSTREAM_KIND", "openai"],
    ["UPSTREAM_URL", "ftp://x"],
    ["SERVICE_DOCS_URL", "javascript:alert(1)"],
    ["SERVICE_ORIGIN", "https://gw.example/"],
    ["SERVICE_ORIGIN", "https://GW.example"],
    ["GATEWAY_DEV", "yes"],
    ["SERVICE_DEFAULT_MODEL", "   "],
    ["SERVICE_DEFAULT_MODEL", "m".repeat(129)],
    ["SERVICE_DEFAULT_MODEL", "model\nlatest"],
    ["SERVICE_DEFAULT_MODEL", "model\u0085"],
    ["GATEWAY_QUEUE_TIMEOUT", "-1s"], // read by function.js: unchecked, it meant no queue timeout
    ["GATEWAY_QUEUE_TIMEOUT", "soon"],
  ]) {
    assert.throws(() => checkSettings({ [name]: value }), (e) => e instanceof SettingError && e.message.startsWith(`${name}=`), `${name}=${value}`);
  }
  assert.equal(checkSettings({ SERVICE_WELCOME_CREDITS: "0" }).SERVICE_WELCOME_CREDITS, "0", "0 grants nothing, and is allowed");
  for (const model of ["model-2026-01-15", "vendor/model", " model ", "é".repeat(128), "\u{1F600}".repeat(128)]) {
    assert.equal(checkSettings({ SERVICE_DEFAULT_MODEL: model }).SERVICE_DEFAULT_MODEL, model, model);
  }
  assert.throws(() => checkSettings({ UPSTREAM_URL: "https://ops:s3cret-pw@vendor.example/v1" }),
    (e) => e instanceof SettingError && e.message.startsWith("UPSTREAM_URL=") && !e.message.includes("s3cret-pw"),
    "a URL with credentials is refused without repeating them");
});

test("durations parse as Go's time.ParseDuration does", () => {
  assert.equal(parseDuration("30s"), 30_000);
  assert.equal(parseDuration("1m30s"), 90_000);
  assert.equal(parseDuration("250ms"), 250);
  assert.equal(parseDuration("1.5h"), 5_400_000);
  assert.equal(parseDuration("0"), 0);
  for (const bad of ["", "30", "s", "1x", "1s x"]) assert.ok(Number.isNaN(parseDuration(bad)), bad);
});

test("routes match as in the wazero host", () => {
  const table = [
    { method: "GET", pattern: "/api/service/keys", function: "keys" },
    { method: "POST", pattern: "/api/service/keys", function: "keys" },
    { method: "DELETE", pattern: "/api/service/keys/:id", function: "keys" },
  ];
  assert.equal(match(table, "GET", "/api/service/keys").route.function, "keys");
  assert.equal(match(table, "HEAD", "/api/service/keys").route.method, "GET");
  assert.equal(match(table, "DELETE", "/api/service/keys/k1").route.pattern, "/api/service/keys/:id");
  assert.deepEqual(match(table, "PUT", "/api/service/keys"), { route: null, allow: ["GET", "POST"] });
  assert.deepEqual(match(table, "DELETE", "/api/service/keys/"), { route: null, allow: [] });
  assert.deepEqual(match(table, "GET", "/api/service/keys/k1/x"), { route: null, allow: [] });
  // Routed by the decoded path, as Go's url.URL.Path is.
  const path = (raw) => requestPath(new URL(raw, "https://gw.test"));
  assert.equal(path("/api/service/%6Beys"), "/api/service/keys");
  assert.equal(path("/api/service%2Fkeys"), "/api/service/keys");
  assert.equal(path("/api/service/keys/a%20b"), "/api/service/keys/a b");
  assert.equal(path("/api/service/keys/%zz"), "/api/service/keys/%zz", "escapes that do not decode stay as sent");
});

test("LIBSQL_URL forms map to the Hrana endpoint", () => {
  assert.deepEqual(parseLibsqlURL("libsql://127.0.0.1:8080?tls=0"), { base: "http://127.0.0.1:8080", token: "" });
  assert.deepEqual(parseLibsqlURL("libsql://db.example.test?authToken=abc"), { base: "https://db.example.test", token: "abc" });
  assert.deepEqual(parseLibsqlURL("http://127.0.0.1:8080/"), { base: "http://127.0.0.1:8080", token: "" });
  assert.deepEqual(parseLibsqlURL("https://db.example.test"), { base: "https://db.example.test", token: "" });
  assert.throws(() => parseLibsqlURL("file:.data/ledger.db"), /not supported on Workers/);
});

test("a read is re-evaluated as a guard only where the wazero host does it", () => {
  // The wazero host's cases (wasm-host/ledger, TestScalarSelect): one
  // column, the same answer twice in a row, a plain SELECT.
  const cases = JSON.parse(readFileSync(new URL("../../wasm-host/ledger/testdata/scalar-select.json", import.meta.url), "utf8"));
  assert.ok(Object.keys(cases).length > 0);
  for (const [sql, want] of Object.entries(cases)) {
    assert.equal(scalarSelect(sql, classify(sql)), want, sql);
  }
  const dml = classify("WITH x AS (SELECT 1) UPDATE t SET a = 1 RETURNING a");
  assert.equal(dml.dml, true);
  assert.equal(dml.readOnly, false);
  assert.equal(classify("PRAGMA user_version").readOnly, false);
  assert.equal(classify("SELECT 1").readOnly, true);
});

test("the monotonic clock is never 0 and always increases", () => {
  const memory = new WebAssembly.Memory({ initial: 1 });
  const module = new WebAssembly.Module(minimalModuleImporting("clock_time_get"));
  const wasi = new Wasi("t");
  const ns = wasi.imports(module);
  wasi.bind(memory);
  const view = new DataView(memory.buffer);
  let last = 0n;
  for (let i = 0; i < 1000; i++) {
    assert.equal(ns.clock_time_get(1, 0n, 8), 0);
    const t = view.getBigUint64(8, true);
    assert.ok(t > last, `reading ${i}: ${t} after ${last}`);
    last = t;
  }
});

/** A module with one wasi_snapshot_preview1 function import, to drive Wasi.imports. */
function minimalModuleImporting(name) {
  const enc = new TextEncoder();
  const str = (s) => [s.length, ...enc.encode(s)];
  const mod = str("wasi_snapshot_preview1");
  const fn = str(name);
  const typeSec = [0x01, 0x04, 0x01, 0x60, 0x00, 0x00];
  const importBody = [0x01, ...mod, ...fn, 0x00, 0x00];
  return new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, ...typeSec, 0x02, importBody.length, ...importBody]);
}

/** upstream starts a local HTTP server that answers with handler. */
async function upstream(handler) {
  const server = createServer(handler);
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}

const fetchReq = (url, more = {}) => ({ method: "GET", url, headers: [], body: null, timeoutMs: 0, maxBytes: 0, credential: "", ...more });

test("fetch adds the upstream key for the upstream only, and never returns it", async () => {
  let seen;
  const up = await upstream((req, res) => {
    seen = req.headers.authorization;
    res.setHeader("authorization", "echo");
    res.setHeader("x-kept", "1");
    res.end("ok");
  });
  try {
    const env = { UPSTREAM_URL: `${up.url}/v1/`, UPSTREAM_API_KEY: "sk-test" };
    const r = await hostFetch(fetchReq(`${up.url}/v1/service`, { credential: "upstream", headers: [["authorization", "Bearer forged"]] }), env);
    assert.equal(r.status, 200);
    assert.equal(seen, "Bearer sk-test");
    assert.ok(!r.headers.some(([n]) => n === "authorization"));
    assert.ok(r.headers.some(([n, v]) => n === "x-kept" && v === "1"));
    assert.equal(new TextDecoder().decode(r.body), "ok");

    const forged = await hostFetch(fetchReq(`${up.url}/v1/service`, { headers: [["authorization", "Bearer forged"]] }), env);
    assert.equal(seen, undefined, "a module's own Authorization header is dropped");
    assert.equal(forged.status, 200);

    const elsewhere = await hostFetch(fetchReq("http://127.0.0.1:1/x", { credential: "upstream" }), env);
    assert.deepEqual([elsewhere.status, elsewhere.errKind], [0, "denied"]);
    const mail = await hostFetch(fetchReq("https://mail.test/send", { credential: "upstream" }), { ...env, MAIL_URL: "https://mail.test" });
    assert.deepEqual([mail.errKind, mail.errMsg], ["denied", "credential not available for this destination"]);
  } finally {
    await up.close();
  }
});

test("fetch drops an answer that echoes the credential it was sent", async () => {
  const key = "sk-live/echo+me==";
  const uEscape = (s) => [...s].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("");
  let mode = "";
  const up = await upstream((req, res) => {
    const auth = req.headers.authorization ?? "";
    switch (mode) {
      case "success body":
        res.end(JSON.stringify({ model: "m", debug: auth }));
        break;
      case "error body":
        res.statusCode = 401;
        res.end(`{"error":"bad key ${key}"}`);
        break;
      case "header":
        res.setHeader("x-request-id", `req-${key}`);
        res.end("{}");
        break;
      case "redirect":
        res.statusCode = 302;
        res.setHeader("location", `/again?key=${encodeURIComponent(key)}`);
        res.end();
        break;
      case "JSON-escaped":
        res.end(`{"k":"${key.replaceAll("/", "\\/")}"}`);
        break;
      case "path-escaped":
        res.end(`{"k":"${key.replaceAll("/", "%2F")}"}`); // Go's url.PathEscape of it
        break;
      case "upper case":
        res.setHeader("x-vendor-request-id", auth.toUpperCase());
        res.end("{}");
        break;
      case "JSON \\u-escaped":
        res.end(`{"k":"${uEscape(key)}"}`);
        break;
      case "JSON-escaped twice":
        // A JSON text inside a string: a caller that parses both gets the key.
        res.end(JSON.stringify({ inner: `{"k":"${uEscape(key)}"}` }));
        break;
      case "clean with escapes":
        res.end(String.raw`{"model":"m","note":"a\nb \u00e9 \ud83d\ude00 \/ \\ \"q\" \u12"}`);
        break;
      default:
        res.setHeader("x-request-id", "req-1");
        res.end(`{"model":"m","seen":"${[...auth].reverse().join("")}"}`);
    }
  });
  try {
    const env = { UPSTREAM_URL: `${up.url}/v1`, UPSTREAM_API_KEY: key };
    for (mode of ["success body", "error body", "header", "redirect", "JSON-escaped", "path-escaped", "upper case", "JSON \\u-escaped", "JSON-escaped twice"]) {
      const r = await hostFetch(fetchReq(`${up.url}/v1/service`, { method: "POST", credential: "upstream" }), env);
      assert.deepEqual([r.status, r.errKind, r.headers, r.body], [0, "credential_leak", [], null], mode);
      assert.ok(!r.errMsg.includes(key), mode);
    }
    for (mode of ["clean", "clean with escapes"]) {
      const clean = await hostFetch(fetchReq(`${up.url}/v1/service`, { method: "POST", credential: "upstream" }), env);
      assert.deepEqual([clean.status, clean.errKind], [200, ""], mode);
    }
    mode = "success body";
    const none = await hostFetch(fetchReq(`${up.url}/v1/service`), env);
    assert.deepEqual([none.status, none.errKind], [200, ""], "an answer to a request without the credential is the module's own");
  } finally {
    await up.close();
  }
});

test("fetch failures come back as timeout, too_large and connect", async () => {
  const up = await upstream((req, res) => {
    if (req.url === "/slow") setTimeout(() => res.end("late"), 2000).unref();
    else res.end("x".repeat(1000));
  });
  try {
    const env = { UPSTREAM_URL: up.url };
    const slow = await hostFetch(fetchReq(`${up.url}/slow`, { timeoutMs: 100 }), env);
    assert.deepEqual([slow.status, slow.errKind], [0, "timeout"]);
    const big = await hostFetch(fetchReq(`${up.url}/big`, { maxBytes: 999 }), env);
    assert.deepEqual([big.status, big.errKind, big.errMsg], [0, "too_large", "response body over 999 bytes"]);
    const fits = await hostFetch(fetchReq(`${up.url}/big`, { maxBytes: 1000 }), env);
    assert.equal(fits.body.length, 1000);
  } finally {
    await up.close();
  }
  const gone = await hostFetch(fetchReq(`${up.url}/x`), { UPSTREAM_URL: up.url });
  assert.deepEqual([gone.status, gone.errKind], [0, "connect"]);
});

test("a new request waits for an instance at most its queue timeout; a resumed call waits for its deadline, ahead of new ones", async () => {
  // Every instance the isolate may keep is live, one of them idle; a call
  // takes that one for 300 ms.
  const pool = new Pool("f", null, {});
  pool.idle.push({ memoryBytes: () => 0, reset: () => true });
  pool.live = MAX_INSTANCES;
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  let busyDone = false;
  const busy = pool.run(async () => { await sleep(300); return "busy"; }, 10_000).finally(() => { busyDone = true; });
  const served = [];
  const fresh = pool.run(async () => "fresh", 10_000, { queueMs: 50 }); // a new request: queue timeout 50 ms
  const patient = pool.run(async () => served.push("new"), 10_000, { queueMs: 5_000 }); // a new request that waits long enough
  const resumed = pool.run(async () => served.push("resumed"), 10_000, { continuing: true }); // a continuation: no queue timeout
  await assert.rejects(fresh, Overloaded);
  assert.equal(busyDone, false, "the new request was refused at its queue timeout, before the instance was free");
  await Promise.all([resumed, patient, busy]);
  assert.deepEqual(served, ["resumed", "new"], "the continuation, queued last, was served first");
});

test("freed instances go to waiters in the order they came until the line stalls, then to resumed calls first", async () => {
  // As on the wazero host (runtime, lines.go): always first, resumed calls
  // kept a herd of clients that started together in step.
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const order = async (holdMs) => {
    const pool = new Pool("f", null, {});
    pool.idle.push({ memoryBytes: () => 0, reset: () => true });
    pool.live = MAX_INSTANCES;
    const busy = pool.run(() => sleep(holdMs), 10_000);
    const served = [];
    const first = pool.run(async () => served.push("new"), 10_000, { queueMs: 5_000 });
    await sleep(5);
    const resumed = pool.run(async () => served.push("resumed"), 10_000, { continuing: true });
    await Promise.all([busy, first, resumed]);
    return served;
  };
  assert.deepEqual(await order(20), ["new", "resumed"], "within STALLED_AFTER_MS: in the order they came");
  assert.deepEqual(await order(STALLED_AFTER_MS + 50), ["resumed", "new"], "past it: the resumed call first");
});

test("a call resuming after an Await that finds no instance is out of time (504), not overloaded (503)", async () => {
  // A decision's first call reserved and handed its upstream call over (an
  // Await); its continuation then finds no instance before the deadline.
  // Something of it ran, so it is no refusal that ran nothing: 504
  // function_timeout, without Retry-After and without X-Service-Credits: 0
  // (the charge is unknown until reconciled), as runtime.Function.run
  // answers on the wazero host. A first call that finds none stays 503.
  const routes = [{ method: "POST", pattern: "/v1/service", function: "decide", maxBody: 65536, charges: true }];
  const worker = functionWorker({ name: "decide", module: null, version: "decide@0123456789ab", sha256: "", routes });
  const awaiting = { handle: async () => ({ await: { state: new Uint8Array([1]), fetch: { method: "POST", url: "https://not-allowed.example/", headers: [] } } }) };
  const run = Pool.prototype.run;
  const serve = async (refuse) => {
    const calls = [];
    Pool.prototype.run = async function (fn, timeoutMs, opts = {}) {
      const which = opts.continuing ? "continuing" : "first";
      calls.push(which);
      if (which === refuse) throw new Overloaded(this.name);
      return fn(awaiting);
    };
    const logged = [];
    const error = console.error;
    console.error = (line) => logged.push(JSON.parse(line).msg);
    try {
      const resp = await worker.fetch(new Request("https://gw.test/v1/service", { method: "POST", body: "{}" }), {});
      return { calls, resp, body: await resp.json(), logged };
    } finally {
      console.error = error;
    }
  };
  try {
    const late = await serve("continuing");
    assert.deepEqual(late.calls, ["first", "continuing"]);
    assert.equal(late.resp.status, 504);
    assert.equal(late.body.error.code, "function_timeout");
    assert.equal(late.resp.headers.get("x-service-error-code"), "function_timeout");
    assert.equal(late.resp.headers.get("retry-after"), null, "out of time is not a retry-shortly refusal");
    assert.equal(late.resp.headers.get("x-service-credits"), null, "the reservation may stand: the charge is unknown");
    assert.equal(late.resp.headers.get("x-function-version"), "decide@0123456789ab");
    assert.deepEqual(late.logged, ["function failed"]);

    const refused = await serve("first");
    assert.deepEqual(refused.calls, ["first"]);
    assert.equal(refused.resp.status, 503);
    assert.equal(refused.body.error.code, "overloaded");
    assert.equal(refused.resp.headers.get("retry-after"), "1");
    assert.equal(refused.resp.headers.get("x-service-credits"), "0", "nothing ran, nothing was charged");
    assert.deepEqual(refused.logged, [], "a refusal is no failure: no line, as on the wazero host");
  } finally {
    Pool.prototype.run = run;
  }
});

test("log lines lose the Worker's secrets, as written or JSON-escaped, as on the wazero host", () => {
  const env = { UPSTREAM_API_KEY: "sk-up/key", MAIL_API_KEY: 'mk"mail', LIBSQL_URL: "libsql://db.example?authToken=tok-url", UPSTREAM_URL: "https://vendor.example/v1" };
  assert.deepEqual(secretsOf(env), ["sk-up/key", 'mk"mail', "tok-url"]);
  const line = JSON.stringify({ msg: "ledger: HTTP 500: token tok-url refused", error: 'sk-up/key and mk"mail', url: env.UPSTREAM_URL });
  assert.equal(redact(line, secretsOf(env)), JSON.stringify({ msg: "ledger: HTTP 500: token [REDACTED] refused", error: "[REDACTED] and [REDACTED]", url: env.UPSTREAM_URL }));
  const lines = [];
  const wasi = new Wasi("decide", (text) => redact(text, secretsOf(env)));
  const log = console.log;
  console.log = (text) => lines.push(text);
  try {
    const ns = wasi.imports(new WebAssembly.Module(minimalModuleImporting("fd_write")));
    const memory = new WebAssembly.Memory({ initial: 1 });
    wasi.bind(memory);
    const text = new TextEncoder().encode("panic: sk-up/key\n");
    new Uint8Array(memory.buffer).set(text, 64);
    new DataView(memory.buffer).setUint32(0, 64, true);
    new DataView(memory.buffer).setUint32(4, text.length, true);
    ns.fd_write(1, 0, 1, 8);
  } finally {
    console.log = log;
  }
  assert.deepEqual(lines, ["[decide] panic: [REDACTED]"]);
});
