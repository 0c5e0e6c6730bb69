// What the console's browser test runs against: the real
// `bin/gateway serve --dev` (real modules, real ledger, the dev mail
// outbox) with a fake vendor upstream that records each body, plus the
// page checks every state of the console gets (no sideways scrolling,
// axe-core's accessibility rules).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';

export const cleanups = [];

// repositoryRoot is the nearest folder at or above dir with a go.mod, so
// the test does not depend on how deep the console sits in the tree.
export function repositoryRoot(dir) {
  for (let d = dir; ; d = path.dirname(d)) {
    if (existsSync(path.join(d, 'go.mod'))) return d;
    if (d === path.dirname(d)) throw new Error(`no go.mod above ${dir}`);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
    s.on('error', reject);
  });
}

// startVendor is a fake vendor API: it records each body and answers a
// valid decision (choice: even odds, the first option chosen; score: all
// on level 0; noul: 0.5), or, when the state is "upstream-401", refuses
// the operator's key as a vendor would. A state object can set the answer's
// model (`{"vendorModel": "…"}`) or the whole reply
// (`{"vendorReply": {"status": 400, "body": "…"}}`).
export function startVendor() {
  const received = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      received.push(body);
      const state = JSON.parse(body).state;
      const reply = state && typeof state === 'object' ? state.vendorReply : null;
      if (reply) {
        res.writeHead(reply.status, { 'Content-Type': 'application/json' });
        res.end(reply.body);
        return;
      }
      if (state === 'upstream-401') {
        res.writeHead(401, { 'Content-Type': 'application/json' });
        res.end('{"error":{"type":"authentication_error","message":"invalid x-api-key"}}');
        return;
      }
      const q = JSON.parse(body).questions; // numbers may round here: only names and types are read
      const answers = {};
      for (const [name, spec] of Object.entries(q)) {
        if (spec.type === 'choice') {
          const opts = Object.keys(spec.criteria);
          answers[name] = { type: 'choice', choice: opts[0], probabilities: Object.fromEntries(opts.map((o) => [o, 1 / opts.length])), confidence: 0.5 };
        } else if (spec.type === 'score') {
          const probs = {}; const legend = {};
          spec.criteria.forEach((d, i) => { probs[i] = i === 0 ? 1 : 0; legend[i] = String(d); });
          answers[name] = { type: 'score', score: 0, probabilities: probs, confidence: 0.5, legend };
        } else {
          answers[name] = { type: 'noul', noul: 0.5 };
        }
      }
      res.writeHead(200, { 'Content-Type': 'application/json', 'X-Vendor-Request-Id': 'vendor-browser-1' });
      res.end(JSON.stringify({ model: (state && state.vendorModel) || 'vendor-model-1', answers, usage: { input_tokens: 12, output_tokens: 4 } }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    cleanups.push(() => server.close());
    resolve({ url: `http://127.0.0.1:${server.address().port}`, received });
  }));
}

// startGateway migrates a fresh ledger under tmp and serves it as
// `make run` does; settings adds to or overrides its environment. The
// answer's admin(...args) runs `gateway admin` on the same ledger and
// returns its output.
export async function startGateway({ gatewayBin, root, tmp, vendorURL, settings = {} }) {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const data = path.join(tmp, 'data');
  const env = {
    ...process.env,
    SERVICE_ADDR: `127.0.0.1:${port}`, SERVICE_ORIGIN: origin,
    LIBSQL_URL: 'file:' + path.join(tmp, 'ledger.db'), GATEWAY_DATA_DIR: data,
    GATEWAY_FUNCTIONS_DIR: path.join(root, 'build/functions'),
    UPSTREAM_KIND: 'vendor', UPSTREAM_URL: vendorURL + '/v1', UPSTREAM_API_KEY: 'sk-browser-test',
    SERVICE_WELCOME_CREDITS: '100', MAIL_URL: '', ...settings,
  };
  const admin = (...args) => {
    const r = spawnSync(gatewayBin, ['admin', ...args], { env, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`gateway admin ${args.join(' ')} failed:\n${r.stderr}`);
    return r.stdout;
  };
  const migrated = spawnSync(gatewayBin, ['admin', 'migrate'], { env, encoding: 'utf8' });
  if (migrated.status !== 0) throw new Error(`gateway admin migrate failed:\n${migrated.stderr}`);
  const proc = spawn(gatewayBin, ['serve', '--dev'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr.on('data', (c) => { log += c; });
  cleanups.push(() => proc.kill('SIGTERM'));
  for (let i = 0; i < 300; i++) {
    if (proc.exitCode !== null) throw new Error(`gateway exited:\n${log}`);
    try {
      const r = await fetch(origin + '/api/service/config');
      if (r.ok) return { origin, outbox: path.join(data, 'outbox'), log: () => log, admin };
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`gateway did not start:\n${log}`);
}

// outboxLink returns the newest sign-in link in the dev outbox.
export function outboxLink(dir) {
  const files = readdirSync(dir).sort();
  for (let i = files.length - 1; i >= 0; i--) {
    const m = readFileSync(path.join(dir, files[i]), 'utf8').match(/https?:\/\/[^\s"<>]+\/#signin=[a-z0-9_]+(&n=[a-z0-9]+)?/);
    if (m) return m[0];
  }
  throw new Error('no sign-in link in the outbox');
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

// accessibility runs axe-core's WCAG 2.x A/AA and best-practice rules on
// the page as it is and returns the serious and critical violations, one
// line each. axe is injected through the DevTools protocol, which the
// page's CSP does not govern, so the CSP under test stays on.
export async function accessibility(page) {
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.evaluate(axeSource);
  const result = await page.evaluate(() => window.axe.run(document, {
    runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] },
    resultTypes: ['violations'],
  }));
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

// overflow returns how far the page is wider than the viewport (0 when it
// does not scroll sideways) and every visible element that sticks out of
// it, to name the culprit.
export function overflow(page) {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const out = [];
    for (const e of document.body.querySelectorAll('*')) {
      const r = e.getBoundingClientRect();
      if (r.width && r.right > width + 0.5 && !e.closest('.table-wrap, pre')) out.push(`${e.tagName.toLowerCase()}#${e.id}.${e.className} right=${Math.round(r.right)}`);
    }
    return { excess: document.documentElement.scrollWidth - width, out: out.slice(0, 5) };
  });
}

/**
 * run runs a browser test's main, then every cleanup and removes tmp, and
 * exits 0 with ok's message, or 1 with the failure.
 */
export async function run(main, tmp, ok) {
  let failed = false;
  try {
    await main();
    console.log(ok());
  } catch (e) {
    failed = true;
    console.error('FAIL:', e);
  } finally {
    for (const c of cleanups) { try { await c(); } catch { /* already gone */ } }
    rmSync(tmp, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}
