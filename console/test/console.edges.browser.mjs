// Browser test of the console's edges, beside the happy path of
// console.browser.mjs: hostile strings from a person, the ledger and the
// upstream stay text; every refusal a person can meet is put in words
// with what to do (the key limits, a key revoked elsewhere, insufficient
// credits, the decision rate limit with its Retry-After, the body limit,
// an upstream's refusal); a session that ends mid-use leads back to the
// sign-in form, while an upstream 401 does not; focus lands somewhere
// useful after an action; long names fit a 390 px screen.
//
// It runs the real `bin/gateway serve --dev` with a small welcome grant
// and decision rate limit so the refusals come from the server itself;
// sessions and keys come from `gateway admin`. Environment as for
// console.browser.mjs (GATEWAY_BIN, CHROMIUM).
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { accessibility, cleanups, outboxLink, overflow, repositoryRoot, run, startGateway, startVendor } from './harness.mjs';

const root = repositoryRoot(path.dirname(fileURLToPath(import.meta.url)));
const gatewayBin = process.env.GATEWAY_BIN || path.join(root, 'bin/gateway');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'dg-browser-edges-'));
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1200, height: 900 };

// Strings that would run script or make markup if a page wrote them as
// HTML, into an attribute or as a link.
const IMG = '<img src=x onerror=__pwned=1>';
const SVG = '"><svg onload=__pwned=2>';
const JS = 'javascript:__pwned=3';

function step(name) { console.log(`  - ${name}`); }

async function main() {
  const vendor = await startVendor();
  const gw = await startGateway({
    gatewayBin, root, tmp, vendorURL: vendor.url,
    settings: { SERVICE_WELCOME_CREDITS: '6', SERVICE_RATE_LIMIT: '6' },
  });
  console.log(`console edge browser test on ${gw.origin}`);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  cleanups.unshift(() => browser.close());
  const context = await browser.newContext({ viewport: DESKTOP });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) problems.push(m.text()); });

  // signIn opens a session as `gateway admin session` does and loads the
  // console with it.
  const email = `${'a'.repeat(30)}.${'b'.repeat(33)}@${'c'.repeat(50)}.example.com`;
  async function signIn() {
    const cookie = gw.admin('session', email).trim().split('\n').at(-1);
    const [name, value] = [cookie.slice(0, cookie.indexOf('=')), cookie.slice(cookie.indexOf('=') + 1)];
    await context.addCookies([{ name, value, url: gw.origin, httpOnly: true, sameSite: 'Lax' }]);
    await page.goto(gw.origin + '/');
    await page.locator('#who-email').getByText(email).waitFor();
  }
  const statusText = () => page.locator('#status').textContent();
  const focused = () => page.evaluate(() => document.activeElement && (document.activeElement.id || document.activeElement.tagName));
  // noMarkup: nothing hostile became an element, an attribute or ran.
  async function noMarkup(where) {
    const found = await page.evaluate(() => ({
      pwned: window.__pwned,
      img: document.querySelectorAll('img').length,
      svg: [...document.querySelectorAll('svg')].filter((s) => s.id !== 'chart' && !s.classList.contains('gauge')).length,
      handlers: document.querySelectorAll('[onerror], [onload]').length,
      links: [...document.querySelectorAll('a[href]')].map((a) => a.getAttribute('href')),
    }));
    assert.deepEqual(found, { pwned: undefined, img: 0, svg: 0, handlers: 0, links: [] }, `${where}: hostile text became markup`);
  }
  async function fitsPhone(where) {
    await page.setViewportSize(PHONE);
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const o = await overflow(page);
    assert.equal(o.excess, 0, `${where} at 390 px scrolls sideways by ${o.excess} px: ${o.out.join('; ')}`);
    assert.deepEqual(o.out, [], `${where} at 390 px: elements outside the screen`);
    assert.deepEqual(await accessibility(page), [], `${where} at 390 px: accessibility`);
    await page.setViewportSize(DESKTOP);
  }

  step('the page is served with a CSP that forbids inline script');
  const csp = (await (await fetch(gw.origin + '/')).headers.get('content-security-policy'));
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.ok(!csp.includes('unsafe-inline') && !csp.includes('unsafe-eval'), csp);

  step('a new account: empty keys, empty usage, a long address fits a phone');
  await signIn();
  await page.getByText('No active keys yet.').waitFor();
  await page.getByRole('tab', { name: 'Usage' }).click();
  await page.getByText('No requests in the last 30 days.').waitFor();
  assert.equal(await page.locator('#balance').textContent(), '6');
  assert.equal(await page.locator('#chart rect').count(), 30);
  await fitsPhone('empty usage with a long address');
  await page.getByRole('tab', { name: 'API keys' }).click();

  step('the empty status region is in the accessibility tree, ready to announce');
  // A live region added to the tree together with its first message is
  // not announced: it must be there, empty, before.
  assert.equal(await statusText(), '');
  const cdp = await context.newCDPSession(page);
  const { nodes } = await cdp.send('Accessibility.getFullAXTree');
  const live = nodes.filter((n) => n.role && n.role.value === 'status' && !n.ignored);
  assert.equal(live.length, 1, 'one status region, not ignored while empty');
  await cdp.detach();

  step('a hostile key name is text everywhere it is shown');
  const hostile = `${IMG}${SVG}`;
  await page.getByLabel('Name of a new key').fill(hostile);
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.locator('#key-secret-value').waitFor();
  assert.equal(await page.locator('#key-secret-name').textContent(), hostile);
  assert.equal(await statusText(), `Key “${hostile}” created.`);
  await page.locator('#keys-body td').getByText(hostile, { exact: true }).waitFor();
  await noMarkup('key name');
  await page.getByRole('button', { name: 'Done' }).click();

  step('a double click on Create key makes one key');
  await page.getByLabel('Name of a new key').fill('double');
  const posts = [];
  page.on('request', (q) => { if (q.method() === 'POST' && q.url().endsWith('/api/service/keys')) posts.push(q); });
  await page.getByRole('button', { name: 'Create key' }).dblclick();
  await page.locator('#keys-body td').getByText('double', { exact: true }).waitFor();
  assert.equal(posts.length, 1, 'one creation request');
  page.once('dialog', (d) => d.accept());
  await page.getByRole('button', { name: /^Revoke key double/ }).click();
  await page.locator('#keys-body td').getByText('double', { exact: true }).waitFor({ state: 'detached' });
  await page.getByRole('button', { name: 'Done' }).click();

  step('a long key name fits a phone in the messages that repeat it');
  const long = 'x'.repeat(64);
  await page.getByLabel('Name of a new key').fill(long);
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.locator('#key-secret-value').waitFor();
  await fitsPhone('a created key with a 64-character name');
  await page.getByRole('button', { name: 'Done' }).click();

  step('a key revoked elsewhere: said in words and the list refreshed');
  const keyID = /^key (key_\S+) /m.exec(gw.admin('key', email, 'revoked elsewhere'))[1];
  await page.reload();
  await page.locator('#keys-body td').getByText('revoked elsewhere', { exact: true }).waitFor();
  gw.admin('revoke', keyID);
  page.once('dialog', (d) => d.accept());
  await page.getByRole('button', { name: /^Revoke key revoked elsewhere/ }).click();
  await page.locator('#status').getByText('That key no longer exists').waitFor();
  await page.locator('#keys-body td').getByText('revoked elsewhere', { exact: true }).waitFor({ state: 'detached' });

  step('a revoke asks first, and afterwards focus is not lost');
  page.once('dialog', (d) => d.dismiss());
  await page.getByRole('button', { name: /^Revoke key x{64}/ }).click();
  assert.equal(await page.locator('#keys-body tr').count(), 2, 'a dismissed confirm revokes nothing');
  page.once('dialog', (d) => d.accept());
  await page.getByRole('button', { name: /^Revoke key x{64}/ }).click();
  await page.locator('#status').getByText(`Key “${long}” revoked.`).waitFor();
  await page.locator('#keys-body tr').nth(1).waitFor({ state: 'detached' });
  assert.notEqual(await focused(), 'BODY', 'focus stays in the page after the row went');

  step('the key limits are put in words');
  await page.route('**/api/service/keys', (r) => (r.request().method() !== 'POST' ? r.fallback() : r.fulfill({
    status: 409, contentType: 'application/json; charset=utf-8',
    headers: { 'X-Service-Error-Code': 'key_limit_reached', 'X-Service-Error-Source': 'platform' },
    body: '{"error":{"code":"key_limit_reached","message":"an account can have at most 20 active keys; revoke one first"}}',
  })));
  await page.getByLabel('Name of a new key').fill('twenty-first');
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.locator('#status').getByText('You have the most active keys allowed.').waitFor();
  await page.unroute('**/api/service/keys');
  let rateLimited = false;
  for (let i = 0; i < 12 && !rateLimited; i++) {
    await page.getByLabel('Name of a new key').fill(`burst ${i}`);
    const answered = page.waitForResponse((r) => r.url().endsWith('/api/service/keys') && r.request().method() === 'POST');
    await page.getByRole('button', { name: 'Create key' }).click();
    if ((await answered).status() === 201) await page.locator('#status').getByText(`Key “burst ${i}” created.`).waitFor();
    else await page.locator('#status').getByText('Wait').waitFor();
    rateLimited = (await statusText()).includes('Too many keys created in the last minute');
    if (!rateLimited) await page.getByRole('button', { name: 'Done' }).click();
  }
  assert.ok(rateLimited, 'the 10 creations a minute are refused in words');

  step('hostile question, option and model names, an upstream error body: text');
  await page.getByRole('tab', { name: 'Playground' }).click();
  const editor = page.getByLabel('Request (JSON)');
  const request = {
    model: IMG,
    state: { vendorModel: SVG + JS },
    questions: { [IMG]: { type: 'choice', criteria: { [SVG]: JS, [JS]: IMG } } },
  };
  await editor.fill(JSON.stringify(request));
  await page.getByRole('button', { name: 'Send decision' }).click();
  await page.locator('#status').getByText('Decision answered.').waitFor();
  assert.deepEqual(await page.locator('#pg-charts .bars .name').allTextContents(), [`${SVG} ✓`, JS]);
  assert.equal(await page.locator('#pg-charts article h5 span').first().textContent(), IMG);
  await noMarkup('playground answer');
  await fitsPhone('hostile answers');
  await editor.fill(JSON.stringify({ model: 'm'.repeat(128), state: 's', questions: { ['q'.repeat(128)]: { type: 'choice', criteria: { ['o'.repeat(128)]: 'x', b: 'y' } } } }));
  await page.getByRole('button', { name: 'Send decision' }).click();
  await page.locator('#pg-charts .bars').waitFor();
  assert.ok((await page.locator('#pg-sent').textContent()).startsWith(`{"model":"${'m'.repeat(128)}"`), 'the model typed into the JSON is the one sent');
  await fitsPhone('128-character question, option and model names');
  const upstreamBody = JSON.stringify({ error: { type: 'invalid_request_error', message: `${IMG} ${SVG} ${JS}` } });
  await editor.fill(JSON.stringify({ state: { vendorReply: { status: 400, body: upstreamBody } }, questions: { q: { type: 'noul' } } }));
  await page.getByRole('button', { name: 'Send decision' }).click();
  await page.locator('#pg-code').getByText('upstream_rejected_request (upstream)').waitFor();
  assert.ok((await page.locator('#pg-answers').textContent()).includes(IMG), 'the upstream body is shown as it came');
  await noMarkup('upstream error body');
  assert.match(await statusText(), /upstream_rejected_request/, 'the failure names its code');
  assert.match(await statusText(), /refused the request|Change the request/, 'and what to do');
  assert.equal(await page.locator('#pg-credits').textContent(), '0');

  step('an upstream 401 is a failed decision: the session stays');
  await editor.fill('{"state": "upstream-401", "questions": {"q": {"type": "noul"}}}');
  await page.getByRole('button', { name: 'Send decision' }).click();
  await page.locator('#pg-code').getByText('upstream_auth_failed (upstream)').waitFor();
  assert.ok(await page.locator('#console').isVisible(), 'still signed in');
  assert.match(await statusText(), /your session is fine/, 'the message does not blame the session');

  step('usage shows the model the upstream answered with, as text');
  await page.getByRole('tab', { name: 'Usage' }).click();
  const answered = page.locator('#requests-body tr').filter({ hasText: SVG + JS });
  await answered.waitFor();
  const modelCell = await answered.locator('td').nth(2).textContent();
  assert.ok(modelCell.includes(IMG) && modelCell.includes(SVG + JS), `the effective and the resolved model: ${modelCell}`);
  await noMarkup('usage rows');
  await page.getByRole('tab', { name: 'Playground' }).click();

  step('insufficient credits: the code and what to do');
  await editor.fill(JSON.stringify({ state: 's', questions: Object.fromEntries(['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((q) => [q, { type: 'noul' }])) }));
  await page.getByRole('button', { name: 'Send decision' }).click();
  await page.locator('#pg-code').getByText('insufficient_credits (platform)').waitFor();
  assert.match(await statusText(), /insufficient_credits/);
  assert.match(await statusText(), /not enough credits/i);

  step('the body limit: the code and what to do');
  await editor.fill(JSON.stringify({ state: 'x'.repeat(70_000), questions: { q: { type: 'noul' } } }));
  await page.getByRole('button', { name: 'Send decision' }).click();
  await page.locator('#pg-code').getByText('body_too_large (platform)').waitFor();
  assert.match(await statusText(), /body_too_large/);
  assert.match(await statusText(), /65,536 bytes/);

  step('the decision rate limit: the code and when to try again');
  let limited = false;
  for (let i = 0; i < 8 && !limited; i++) {
    await editor.fill('{"state": "s", "questions": {"q": {"type": "noul"}}}');
    await page.getByRole('button', { name: 'Send decision' }).click();
    await page.locator('#pg-status').waitFor();
    await page.waitForFunction(() => !document.getElementById('pg-send').disabled);
    limited = (await page.locator('#pg-code').textContent()).startsWith('rate_limit_exceeded');
  }
  assert.ok(limited, 'the seventh decision of a minute is refused');
  const status = await statusText();
  assert.match(status, /rate_limit_exceeded/);
  assert.match(status, /Try again in \d+ seconds?/, status);
  await fitsPhone('a refused decision');

  step('an Idempotency-Key the browser cannot send: nothing was sent, said so');
  await page.getByLabel('Idempotency-Key (optional)').fill('ключ');
  await page.getByRole('button', { name: 'Send decision' }).click();
  await page.locator('#pg-error').getByText('Idempotency-Key').waitFor();
  assert.doesNotMatch(await statusText(), /may still have run/, 'a request never sent cannot have run');
  assert.equal(await focused(), 'pg-idem', 'focus goes to the field to correct');
  await page.getByLabel('Idempotency-Key (optional)').fill('');

  step('an ended session leads to sign-in');
  await page.getByRole('tab', { name: 'API keys' }).click();
  await page.locator('#keys-body tr').first().waitFor();
  await context.clearCookies();
  await page.getByLabel('Name of a new key').fill('after the session');
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.locator('#status').getByText('Your session has ended. Sign in again.').waitFor();
  assert.ok(await page.getByRole('button', { name: 'Send sign-in link' }).isVisible(), 'the sign-in form is shown');
  assert.equal(await focused(), 'signin-email', 'focus goes to the address field');
  assert.equal(await page.locator('#console').isVisible(), false);

  step('revoking with an ended session leads to sign-in too');
  await signIn();
  await context.clearCookies();
  page.once('dialog', (d) => d.accept());
  await page.locator('#keys-body button').first().click();
  await page.locator('#status').getByText('Your session has ended. Sign in again.').waitFor();
  assert.ok(await page.getByRole('button', { name: 'Send sign-in link' }).isVisible(), 'the sign-in form is shown');

  step('a sign-out that fails says you are still signed in');
  await signIn();
  await page.route('**/api/service/auth/signout', (r) => r.abort('connectionreset'));
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.locator('#status').getByText('you are still signed in').waitFor();
  assert.ok(await page.locator('#console').isVisible(), 'the console stays');
  await page.unroute('**/api/service/auth/signout');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('button', { name: 'Send sign-in link' }).waitFor();

  step('a session ends on Usage and another account signs in in the same tab: nothing of the first shows');
  await signIn();
  await page.getByRole('tab', { name: 'Usage' }).click();
  await page.locator('#requests-body tr').first().waitFor();
  await page.getByRole('tab', { name: 'Playground' }).click();
  await editor.fill('{"state": "s", "questions": {"q": {"type": "noul"}}}');
  await page.getByRole('button', { name: 'Send decision' }).click();
  await page.locator('#pg-status').waitFor();
  await page.getByRole('tab', { name: 'Usage' }).click();
  await page.locator('#requests-body tr').first().waitFor();
  await context.clearCookies();
  await page.getByRole('tab', { name: 'Usage' }).click();
  await page.locator('#status').getByText('Your session has ended. Sign in again.').waitFor();
  const asked = await fetch(gw.origin + '/api/service/auth/signin', {
    method: 'POST', headers: { Origin: gw.origin, 'Content-Type': 'application/json' }, body: JSON.stringify({ email: 'second@example.com' }),
  });
  assert.equal(asked.status, 202);
  await page.goto(outboxLink(gw.outbox)); // only the fragment changes: no reload
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.locator('#who-email').getByText('second@example.com').waitFor();
  await page.getByText('No requests in the last 30 days.').waitFor();
  assert.equal(await page.locator('#requests-body tr').count(), 0, 'no request of the first account');
  assert.equal(await page.locator('#balance').textContent(), '6', "the second account's balance");
  assert.equal(await page.evaluate(() => document.getElementById('pg-result').hidden), true, "no playground result of the first account");

  assert.deepEqual(problems, [], 'no script errors or CSP violations');
}

await run(main, tmp, () => 'ok: console edge browser test');
