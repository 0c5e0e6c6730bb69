// Browser test of the console: Playwright drives Debian's headless Chromium
// against the real `bin/gateway serve --dev` (real modules, real ledger,
// the dev mail outbox). Only the vendor upstream is a fake, here, so the
// test can check what the server received byte for byte.
//
// It signs in through the outbox link, creates a key and sees its secret
// once, runs a playground decision with high-precision numbers, sees the
// usage update, revokes the key and signs out. Screenshots go to
// test-artifacts/console/.
//
// Environment: GATEWAY_BIN (default bin/gateway), CHROMIUM (default
// /usr/bin/chromium), ARTIFACTS (default test-artifacts/console).
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const gatewayBin = process.env.GATEWAY_BIN || path.join(root, 'bin/gateway');
const artifacts = path.resolve(root, process.env.ARTIFACTS || 'test-artifacts/console');
const PRECISE = '0.1000000000000000055511151231257827';
const BIG = '12345678901234567890';

mkdirSync(artifacts, { recursive: true });
const tmp = mkdtempSync(path.join(os.tmpdir(), 'dg-browser-'));
const cleanups = [];

function step(name) { console.log(`  - ${name}`); }

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
    s.on('error', reject);
  });
}

// A fake vendor API: records each body and answers a valid decision.
function startVendor() {
  const received = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      received.push(body);
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
      res.end(JSON.stringify({ model: 'vendor-model-1', answers, usage: { input_tokens: 12, output_tokens: 4 } }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    cleanups.push(() => server.close());
    resolve({ url: `http://127.0.0.1:${server.address().port}`, received });
  }));
}

async function startGateway(vendorURL) {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const data = path.join(tmp, 'data');
  const env = {
    ...process.env,
    SERVICE_ADDR: `127.0.0.1:${port}`, SERVICE_ORIGIN: origin,
    LIBSQL_URL: 'file:' + path.join(tmp, 'ledger.db'), GATEWAY_DATA_DIR: data,
    GATEWAY_FUNCTIONS_DIR: path.join(root, 'build/functions'),
    UPSTREAM_KIND: 'vendor', UPSTREAM_URL: vendorURL + '/v1', UPSTREAM_API_KEY: 'sk-browser-test',
    SERVICE_WELCOME_CREDITS: '100', MAIL_URL: '',
  };
  // As `make run` does: only `admin migrate` creates a ledger.
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
      if (r.ok) return { origin, outbox: path.join(data, 'outbox'), log: () => log };
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`gateway did not start:\n${log}`);
}

// The newest sign-in link in the dev outbox.
function outboxLink(dir) {
  const files = readdirSync(dir).sort();
  for (let i = files.length - 1; i >= 0; i--) {
    const m = readFileSync(path.join(dir, files[i]), 'utf8').match(/https?:\/\/\S+\/api\/service\/auth\/verify\?token=[a-z0-9_]+/);
    if (m) return m[0];
  }
  throw new Error('no sign-in link in the outbox');
}

async function main() {
  const vendor = await startVendor();
  const gw = await startGateway(vendor.url);
  console.log(`console browser test on ${gw.origin}`);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  cleanups.unshift(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: gw.origin });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(e.message));
  const shot = (name) => page.screenshot({ path: path.join(artifacts, name + '.png'), fullPage: true });

  step('sign in through the outbox link');
  await page.goto(gw.origin + '/');
  await page.getByLabel('E-mail address').fill('browser@example.com');
  await page.getByRole('button', { name: 'Send sign-in link' }).click();
  await page.getByText('Check your mail.').waitFor();
  assert.ok(await page.locator('#signin-dev').isVisible(), 'the dev outbox hint is shown');
  await shot('01-sign-in-sent');
  const link = outboxLink(gw.outbox);
  assert.ok(gw.log().includes(link), 'the server log carries the link');
  await page.goto(link);
  assert.equal(page.url(), gw.origin + '/', 'the link lands in the console');
  await page.locator('#who-email').getByText('browser@example.com').waitFor();
  const [cookie] = (await context.cookies()).filter((c) => c.name === 'dg_session');
  assert.ok(cookie && cookie.httpOnly && cookie.sameSite === 'Lax', 'HttpOnly, SameSite=Lax session cookie');
  assert.equal(await page.evaluate(() => document.cookie), '', 'scripts cannot read the session');
  await shot('02-signed-in');

  step('create a key and see its secret once');
  await page.getByLabel('Name of a new key').fill('browser test');
  await page.getByRole('button', { name: 'Create key' }).click();
  const secretField = page.locator('#key-secret-value');
  await secretField.waitFor();
  const secret = await secretField.inputValue();
  assert.match(secret, /^dgk_[a-z2-7]{12}_[a-z2-7]{38}$/);
  await page.getByRole('button', { name: 'Copy' }).click();
  await page.getByText('Secret copied to the clipboard.').waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret, 'Copy puts the secret on the clipboard');
  const row = page.locator('#keys-body tr');
  await row.first().getByText(secret.slice(0, 21) + '…').waitFor();
  await shot('03-key-secret-shown-once');
  await page.getByRole('button', { name: 'Done' }).click();
  assert.ok(!(await page.content()).includes(secret), 'the secret is gone after Done');
  await page.reload();
  await row.first().getByText('browser test').waitFor();
  assert.ok(!(await page.content()).includes(secret), 'a reload never shows the secret');
  const live = await fetch(gw.origin + '/v1/service', {
    method: 'POST', headers: { Authorization: 'Bearer ' + secret, 'Content-Type': 'application/json' },
    body: '{"state":"s","questions":{"q":{"type":"noul"}}}',
  });
  assert.equal(live.status, 200, 'the new key authenticates');

  step('run a playground decision with high-precision numbers');
  const tab = page.getByRole('tab', { name: 'API keys' });
  await tab.focus();
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.getByRole('tab', { name: 'Playground' }).getAttribute('aria-selected'), 'true', 'arrow keys move between tabs');
  const editor = page.getByLabel('Request (JSON)');
  assert.ok((await editor.inputValue()).includes(PRECISE) && (await editor.inputValue()).includes(BIG), 'the example carries the precise numbers');
  await page.getByLabel('Model').fill('model-browser-1');
  await page.getByLabel('Model').press('Tab');
  await editor.focus();
  const before = vendor.received.length;
  await page.keyboard.press('Control+Enter');
  await page.locator('#pg-result').waitFor();
  await page.locator('#pg-status').getByText('200').waitFor();
  const sent = await page.locator('#pg-sent').textContent();
  const requestId = await page.locator('#pg-rid').textContent();
  assert.match(requestId, /^[0-9a-f]{32}$/);
  assert.equal(await page.locator('#pg-credits').textContent(), '3', 'three questions cost three credits');
  assert.equal(vendor.received.length, before + 1, 'one upstream call');
  const received = vendor.received.at(-1);
  assert.equal(received, sent, 'the upstream received exactly the compact body the browser sent');
  assert.ok(received.includes(`"amount":${PRECISE}`) && received.includes(`"order":${BIG}`), `numbers unchanged: ${received}`);
  assert.ok(received.startsWith('{"model":"model-browser-1",'), 'the model typed is sent');
  assert.ok((await page.locator('#pg-answers').textContent()).includes('"answers"'));
  await shot('04-playground');

  step('see the usage update');
  await page.getByRole('tab', { name: 'Usage' }).click();
  await page.locator('#requests-body').getByText(requestId).waitFor();
  assert.equal(await page.locator('#balance').textContent(), String(100 - 1 - 3), 'balance after the API call and the playground call');
  assert.equal(await page.locator('#chart rect').count(), 30, 'one bar per day');
  assert.match(await page.locator('#chart').getAttribute('aria-label'), /^4 credits charged over 2 requests/);
  assert.equal(await page.locator('#requests-body tr').count(), 2);
  await shot('05-usage');

  step('revoke the key');
  await page.getByRole('tab', { name: 'API keys' }).click();
  page.once('dialog', (d) => d.accept());
  await page.getByRole('button', { name: /^Revoke key browser test/ }).click();
  await page.getByText('No active keys yet.').waitFor();
  const dead = await fetch(gw.origin + '/v1/service', {
    method: 'POST', headers: { Authorization: 'Bearer ' + secret, 'Content-Type': 'application/json' },
    body: '{"state":"s","questions":{"q":{"type":"noul"}}}',
  });
  assert.equal(dead.status, 401, 'the revoked key no longer authenticates');
  await shot('06-key-revoked');

  step('every field has a label');
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input, textarea')].filter((e) => e.labels.length === 0).map((e) => e.id));
  assert.deepEqual(unlabelled, []);

  step('sign out ends the session');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('button', { name: 'Send sign-in link' }).waitFor();
  const after = await fetch(gw.origin + '/api/service/auth/session', { headers: { Cookie: `dg_session=${cookie.value}` } });
  assert.equal((await after.json()).signedIn, false, 'the old cookie is dead server-side');
  await shot('07-signed-out');

  assert.deepEqual(problems, [], 'no script errors or CSP violations');
}

let failed = false;
try {
  await main();
  console.log(`ok: console browser test (screenshots in ${path.relative(root, artifacts)}/)`);
} catch (e) {
  failed = true;
  console.error('FAIL:', e);
} finally {
  for (const c of cleanups) { try { await c(); } catch { /* already gone */ } }
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
