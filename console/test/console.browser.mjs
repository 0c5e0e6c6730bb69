// Browser test of the console: Playwright drives Debian's headless Chromium
// against the real `bin/gateway serve --dev` (harness.mjs). Only the vendor
// upstream is a fake, so the test can check what the server received byte
// for byte.
//
// It signs in through the outbox link (after a refused address), sees the
// welcome credits, creates a key, sees its secret once and runs the
// snippets shown with it, runs playground decisions (answers drawn as bars
// and a gauge, a replay marked as one, a JSON error clearing the old
// result), sees the usage update, revokes the key and signs out. Every
// state is checked at desktop and phone (390 px) widths: no sideways
// scrolling and no serious or critical axe-core violation; screenshots go
// to test-artifacts/console/ as NN-state-desktop.png and -phone.png.
//
// Environment: GATEWAY_BIN (default bin/gateway), CHROMIUM (default
// /usr/bin/chromium), ARTIFACTS (default test-artifacts/console).
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { accessibility, cleanups, outboxLink, overflow, repositoryRoot, run, startGateway, startVendor } from './harness.mjs';

const root = repositoryRoot(path.dirname(fileURLToPath(import.meta.url)));
const gatewayBin = process.env.GATEWAY_BIN || path.join(root, 'bin/gateway');
const artifacts = path.resolve(root, process.env.ARTIFACTS || 'test-artifacts/console');
const PRECISE = '0.1000000000000000055511151231257827';
const BIG = '12345678901234567890';
const DESKTOP = { width: 1200, height: 900 };
const PHONE = { width: 390, height: 844 };

mkdirSync(artifacts, { recursive: true });
const tmp = mkdtempSync(path.join(os.tmpdir(), 'dg-browser-'));

function step(name) { console.log(`  - ${name}`); }

// runSnippet runs the code the console showed for lang and returns its
// output; the Go one is built inside this module (a folder ./... skips),
// so it compiles against the repository's own client package. It runs
// asynchronously: the fake vendor answering it lives in this process.
async function runSnippet(lang, code) {
  const runs = {
    curl: () => ['bash', [write('decide.sh', code)]],
    python: () => ['python3', [write('decide.py', code)]],
    javascript: () => [process.execPath, [write('decide.mjs', code)]],
    go: () => {
      const dir = path.join(root, 'build', '_console-snippet');
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'main.go'), code);
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      return ['go', ['run', './build/_console-snippet']];
    },
  };
  const [cmd, args] = runs[lang]();
  try {
    return (await promisify(execFile)(cmd, args, { cwd: root, encoding: 'utf8', timeout: 300_000 })).stdout;
  } catch (e) {
    throw new Error(`${lang} snippet failed:\n${code}\n${e.stdout}\n${e.stderr}`);
  }
}

function write(name, text) {
  const file = path.join(tmp, name);
  writeFileSync(file, text);
  return file;
}

async function main() {
  const vendor = await startVendor();
  const gw = await startGateway({ gatewayBin, root, tmp, vendorURL: vendor.url });
  console.log(`console browser test on ${gw.origin}`);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  cleanups.unshift(() => browser.close());
  const context = await browser.newContext({ viewport: DESKTOP });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: gw.origin });
  const page = await context.newPage();
  const problems = [];
  const logged = [];
  page.on('console', (m) => { logged.push(m.text()); if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(e.message));

  // check looks at the page as it is at both widths: screenshots, no
  // sideways scrolling at 390 px (the Sign out button inside the screen),
  // and no serious or critical accessibility violation.
  const checked = [];
  async function check(name) {
    for (const [size, viewport] of [['desktop', DESKTOP], ['phone', PHONE]]) {
      await page.setViewportSize(viewport);
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      await page.screenshot({ path: path.join(artifacts, `${name}-${size}.png`), fullPage: true });
      const o = await overflow(page);
      assert.equal(o.excess, 0, `${name} at ${size} width scrolls sideways by ${o.excess} px: ${o.out.join('; ')}`);
      assert.deepEqual(o.out, [], `${name} at ${size}: elements outside the screen`);
      const signout = page.getByRole('button', { name: 'Sign out' });
      if (await signout.isVisible()) {
        const box = await signout.boundingBox();
        assert.ok(box.x >= 0 && box.x + box.width <= viewport.width, `${name} at ${size}: Sign out off-screen at x=${box.x}`);
      }
      assert.deepEqual(await accessibility(page), [], `${name} at ${size}: accessibility`);
    }
    await page.setViewportSize(DESKTOP);
    checked.push(name);
  }

  step('signed out: no Sign out button; a bad address is explained in words');
  await page.goto(gw.origin + '/');
  await page.getByRole('button', { name: 'Send sign-in link' }).waitFor();
  assert.equal(await page.getByRole('button', { name: 'Sign out' }).isVisible(), false, 'no Sign out while signed out');
  assert.equal(await page.locator('#who').isVisible(), false);
  await check('01-sign-in');
  const emailField = page.getByLabel('E-mail address');
  await emailField.fill('someone@localhost');
  await page.getByRole('button', { name: 'Send sign-in link' }).click();
  await page.locator('#signin-error').getByText('does not look like an e-mail address').waitFor();
  assert.equal(await emailField.getAttribute('aria-invalid'), 'true');
  assert.ok(!(await page.locator('body').innerText()).includes('"email"'), 'no API wording on the page');
  await check('02-sign-in-bad-address');
  await emailField.fill('');
  await page.getByRole('button', { name: 'Send sign-in link' }).click();
  await page.locator('#signin-error').getByText('Enter your e-mail address.').waitFor();

  step('sign in through the outbox link; the welcome credits are noted');
  await emailField.fill('browser@example.com');
  assert.equal(await page.locator('#signin-error').textContent(), '', 'typing clears the error');
  await page.getByRole('button', { name: 'Send sign-in link' }).click();
  await page.getByText('Check your mail.').waitFor();
  assert.ok(await page.locator('#signin-dev').isVisible(), 'the dev outbox hint is shown');
  await check('03-sign-in-sent');
  const link = outboxLink(gw.outbox);
  assert.ok(gw.log().includes(link), 'the server log carries the link');
  await page.goto(link);
  await page.locator('#who-email').getByText('browser@example.com').waitFor();
  assert.equal(page.url(), gw.origin + '/', 'the link lands in the console, the query cleaned away');
  await page.locator('#welcome').getByText('Your account starts with 100 free credits').waitFor();
  const [cookie] = (await context.cookies()).filter((c) => c.name === 'dg_session');
  assert.ok(cookie && cookie.httpOnly && cookie.sameSite === 'Lax', 'HttpOnly, SameSite=Lax session cookie');
  assert.equal(await page.evaluate(() => document.cookie), '', 'scripts cannot read the session');
  await check('04-signed-in-welcome');
  await page.getByRole('button', { name: 'Got it' }).click();
  assert.equal(await page.locator('#welcome').isVisible(), false);

  step('create a key: its secret once, with snippets that work');
  await page.getByLabel('Name of a new key').fill('browser test');
  await page.getByRole('button', { name: 'Create key' }).click();
  const secretField = page.locator('#key-secret-value');
  await secretField.waitFor();
  const secret = await secretField.inputValue();
  assert.match(secret, /^dgk_[a-z2-7]{12}_[a-z2-7]{38}$/);
  await page.getByRole('button', { name: 'Copy', exact: true }).click();
  await page.getByText('Secret copied to the clipboard.').waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret, 'Copy puts the secret on the clipboard');
  const row = page.locator('#keys-body tr');
  await row.first().getByText(secret.slice(0, 21) + '…').waitFor();
  await check('05-key-secret-and-snippet');
  const ran = [];
  for (const [lang, tabName] of [['curl', 'curl'], ['python', 'Python'], ['javascript', 'JavaScript'], ['go', 'Go']]) {
    await page.getByRole('tab', { name: tabName, exact: true }).click();
    assert.equal(await page.locator('#snippet-panel').getAttribute('data-lang'), lang);
    const code = await page.locator('#snippet-code').textContent();
    assert.ok(code.includes(secret) && code.includes(gw.origin + '/v1'), `${lang} snippet carries the key and the base URL`);
    if (lang === 'go' && !existsSync(path.join(root, 'client', 'client.go'))) {
      console.log('    (Go snippet not run: this tree has no client/ package yet)');
      continue;
    }
    const out = await runSnippet(lang, code);
    assert.ok(/refund/.test(out) && /0\.5/.test(out), `${lang} snippet output: ${out}`);
    ran.push(lang);
  }
  await page.getByRole('tab', { name: 'Python', exact: true }).click();
  await page.getByRole('button', { name: 'Copy snippet' }).click();
  assert.ok((await page.evaluate(() => navigator.clipboard.readText())).startsWith('import json'), 'Copy snippet copies the shown code');
  await page.getByRole('button', { name: 'Done' }).click();
  assert.ok(!(await page.content()).includes(secret), 'the secret and snippets are gone after Done');
  await page.reload();
  await row.first().getByText('browser test').waitFor();
  assert.ok(!(await page.content()).includes(secret), 'a reload never shows the secret');
  assert.ok(!logged.some((l) => l.includes(secret)) && !gw.log().includes(secret), 'the secret is never logged');

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
  await page.locator('#pg-status').getByText('200').waitFor();
  await page.locator('#status').getByText('Decision answered.').waitFor();
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
  assert.equal(await page.locator('#pg-replay').isVisible(), false, 'a fresh answer is not marked as a replay');

  step('answers drawn per question beside the JSON');
  const card = (q) => page.locator(`#pg-charts article[data-question="${q}"]`);
  assert.equal(await page.locator('#pg-charts article').count(), 3);
  const route = card('route').locator('.bars li');
  assert.deepEqual(await route.locator('.name').allTextContents(), ['refunds ✓', 'shipping', 'other'], 'choice options in the request order, the chosen one marked');
  assert.deepEqual(await route.locator('.value').allTextContents(), ['33.3%', '33.3%', '33.3%']);
  const widths = await route.locator('.fill').evaluateAll((fs) => fs.map((f) => f.getBoundingClientRect().width / f.parentElement.getBoundingClientRect().width));
  assert.ok(widths.every((w) => Math.abs(w - 1 / 3) < 0.02), `bar lengths follow the probabilities: ${widths}`);
  const urgency = card('urgency');
  assert.deepEqual(await urgency.locator('.bars .value').allTextContents(), ['100.0%', '0.0%', '0.0%', '0.0%']);
  assert.match(await urgency.locator('.bars .name').first().textContent(), /^0 · Not urgent/);
  assert.match(await urgency.locator('.scale').getAttribute('aria-label'), /^Weighted score 0\.00 on a scale from 0 to 3/);
  const marker = await urgency.locator('.scale .marker').boundingBox();
  const scale = await urgency.locator('.scale').boundingBox();
  assert.ok(Math.abs(marker.x + marker.width / 2 - scale.x) < 2, 'the score marker sits at level 0');
  assert.equal(await card('upset').locator('svg.gauge text.big').textContent(), '50.0%', 'noul as a gauge');
  const [visual, json] = [await page.locator('#pg-visual').boundingBox(), await page.locator('#pg-answers').boundingBox()];
  assert.ok(visual.x + visual.width <= json.x && Math.abs(visual.y - json.y) < 80, 'the answers sit beside the exact JSON on a desktop');
  await check('06-playground-answers');

  step('a message stays with its tab');
  await page.getByRole('tab', { name: 'Usage' }).click();
  assert.equal(await page.locator('#status').textContent(), '', 'the playground banner does not follow to Usage');
  await page.getByRole('tab', { name: 'Playground' }).click();

  step('a replay is marked as a replay');
  await page.getByLabel('Idempotency-Key (optional)').fill('browser-replay-1');
  await page.getByRole('button', { name: 'Send decision' }).click();
  await page.locator('#status').getByText('Decision answered.').waitFor();
  const original = await page.locator('#pg-rid').textContent();
  const upstreamCalls = vendor.received.length;
  await page.getByRole('button', { name: 'Send decision' }).click();
  await page.locator('#pg-replay').waitFor();
  await page.locator('#status').getByText('Replayed').waitFor();
  assert.equal(await page.locator('#pg-credits').textContent(), '0', 'a replay charges nothing');
  assert.equal(await page.locator('#pg-rid').textContent(), original, 'a replay keeps the original request id');
  assert.equal(await page.locator('#pg-replay-rid').textContent(), original);
  assert.equal(vendor.received.length, upstreamCalls, 'a replay calls no upstream');
  await check('07-playground-replay');

  step('no answer at all is said to prove nothing');
  await page.route('**/api/service/playground', (r) => r.abort('connectionreset'));
  await page.getByRole('button', { name: 'Send decision' }).click();
  await page.locator('#status').getByText('No answer came').waitFor();
  assert.equal(await page.locator('#pg-result').isVisible(), false, 'no earlier result stands in for the lost one');
  await page.unroute('**/api/service/playground');

  step('a JSON error clears the earlier result and banner');
  await page.getByRole('button', { name: 'Send decision' }).click();
  await page.locator('#status').getByText('Replayed').waitFor();
  await page.getByLabel('Idempotency-Key (optional)').fill('');
  await editor.fill('{"state": "s", "questions": ');
  await page.getByRole('button', { name: 'Send decision' }).click();
  await page.locator('#pg-error').getByText('Not valid JSON').waitFor();
  assert.equal(await page.locator('#pg-result').isVisible(), false, 'the old result is gone');
  assert.equal(await page.locator('#status').textContent(), '', '"Decision answered." is gone');
  await check('08-playground-json-error');
  await page.getByRole('button', { name: 'Reset example' }).click();
  assert.equal(await page.locator('#pg-error').textContent(), '');

  step('see the usage update: chart with axis values and dates');
  await page.getByRole('tab', { name: 'Usage' }).click();
  // The newest request: the Usage tab was opened before it, and that
  // earlier, stale listing already holds the first one.
  await page.locator('#requests-body').getByText(original).waitFor();
  await page.locator('#requests-body').getByText(requestId).waitFor();
  const charged = ran.length + 3 + 3; // a credit per snippet run, three per fresh playground decision
  assert.equal(await page.locator('#balance').textContent(), String(100 - charged), 'balance after the snippets and the playground calls');
  assert.equal(await page.locator('#chart rect').count(), 30, 'one bar per day');
  assert.match(await page.locator('#chart').getAttribute('aria-label'), new RegExp(`^${charged} credits charged over ${ran.length + 2} requests`));
  const values = (await page.locator('#chart text:not(.date)').allTextContents()).map(Number);
  assert.equal(values[0], 0, 'the value axis starts at zero');
  assert.ok(values.at(-1) >= charged && values.every((v, i) => i === 0 || v > values[i - 1]), `value axis ${values}`);
  const dates = await page.locator('#chart text.date').allTextContents();
  assert.ok(dates.length >= 4 && dates.every((d) => /^[A-Z][a-z]{2} \d{1,2}$/.test(d)), `readable dates ${dates}`);
  const today = new Intl.DateTimeFormat('en', { month: 'short', day: 'numeric', timeZone: 'UTC' }).format(new Date());
  assert.ok(dates.includes(today), `today (${today}) is labelled: ${dates}`);
  assert.match(await page.locator('#usage-window').textContent(), /^[A-Z][a-z]{2} \d{1,2} to [A-Z][a-z]{2} \d{1,2}$/);
  assert.equal(await page.locator('#requests-body tr').count(), ran.length + 2, 'a replay is no new request');
  await check('09-usage');
  await page.setViewportSize(PHONE);
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const phoneDates = await page.locator('#chart text.date').allTextContents();
  assert.ok(phoneDates.length >= 2 && phoneDates.length < dates.length, `fewer dates on a phone: ${phoneDates}`);
  await page.setViewportSize(DESKTOP);

  step('an upstream 401 is a failed decision, not the end of the session');
  // Spec §5 rule 5: the vendor refusing the operator's key says nothing
  // about the browser session.
  await page.getByRole('tab', { name: 'Playground' }).click();
  await editor.fill('{"state": "upstream-401", "questions": {"q": {"type": "noul"}}}');
  await page.getByRole('button', { name: 'Send decision' }).click();
  await page.locator('#status').getByText('The decision failed').waitFor();
  assert.equal(await page.locator('#pg-code').textContent(), 'upstream_auth_failed (upstream)');
  assert.equal(await page.locator('#pg-credits').textContent(), '0', 'refunded');
  assert.ok(await page.locator('#console').isVisible(), 'the console stays');
  assert.equal(await page.locator('#signin').isVisible(), false, 'no sign-in form');
  await page.getByRole('button', { name: 'Reset example' }).click();

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
  await check('10-key-revoked');

  step('every field has a label');
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input, textarea')].filter((e) => e.labels.length === 0).map((e) => e.id));
  assert.deepEqual(unlabelled, []);

  step('sign out ends the session and hides Sign out');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('button', { name: 'Send sign-in link' }).waitFor();
  assert.equal(await page.getByRole('button', { name: 'Sign out' }).isVisible(), false);
  const after = await fetch(gw.origin + '/api/service/auth/session', { headers: { Cookie: `dg_session=${cookie.value}` } });
  assert.equal((await after.json()).signedIn, false, 'the old cookie is dead server-side');
  await check('11-signed-out');

  step('a link this browser did not ask for asks first, even while its own request is fresh; fetching a link spends nothing');
  // This browser asks for a link of its own (its nonce is fresh)...
  await emailField.fill('mine@example.com');
  await page.getByRole('button', { name: 'Send sign-in link' }).click();
  await page.getByText('Check your mail.').waitFor();
  // ...and another link is asked for from elsewhere, as an attacker would
  // ask for their own to send this browser to.
  const asked = await fetch(gw.origin + '/api/service/auth/signin', {
    method: 'POST', headers: { Origin: gw.origin, 'Content-Type': 'application/json' }, body: JSON.stringify({ email: 'elsewhere@example.com' }),
  });
  assert.equal(asked.status, 202);
  const other = outboxLink(gw.outbox);
  const token = other.slice(other.indexOf('#signin=') + 8);
  // A mail scanner fetches the link (and a link of the earlier form): nothing is spent.
  for (const method of ['HEAD', 'GET']) {
    assert.equal((await fetch(other, { method })).status, 200, `${method} of the link`);
    const old = await fetch(`${gw.origin}/api/service/auth/verify?token=${token}`, { method, redirect: 'manual' });
    assert.equal(old.status, 303);
    assert.equal(old.headers.get('location'), other, 'the earlier form leads to the console with the token in the fragment');
    assert.equal(old.headers.get('set-cookie'), null, `${method} of the earlier form opens no session`);
  }
  await page.goto(other);
  await page.locator('#signin-confirm').getByText('Finish signing in?').waitFor();
  assert.equal(page.url(), gw.origin + '/', 'the token leaves the address bar');
  assert.equal(await page.locator('#signin').isVisible(), false);
  assert.equal((await context.cookies()).filter((c) => c.name === 'dg_session').length, 0, 'nothing spent before the person agrees');
  await check('12-signin-confirm');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('#who-email').getByText('elsewhere@example.com').waitFor();
  await page.locator('#welcome').getByText('Your account starts with 100 free credits').waitFor();

  // Chromium reports the refused address's 400, the cut connection and the
  // upstream's 401 as console errors: the three expected lines.
  const refused = /^Failed to load resource: (the server responded with a status of 40[01]|net::ERR_CONNECTION_RESET)/;
  assert.equal(problems.filter((p) => refused.test(p)).length, 3, `the refused, the cut and the upstream-refused request: ${problems}`);
  assert.deepEqual(problems.filter((p) => !refused.test(p)), [], 'no script errors or CSP violations');
  console.log(`    checked at ${DESKTOP.width} and ${PHONE.width} px: ${checked.length} states; snippets run: ${ran.join(', ')}`);
}

await run(main, tmp, () => `ok: console browser test (screenshots in ${path.relative(root, artifacts)}/)`);
