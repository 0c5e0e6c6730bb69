// The Decision Gateway console: sign-in, API keys, usage and the
// playground, on the /api/service endpoints of the same origin. Plain
// DOM code: every server value is written with textContent, never as HTML.
import { compact, pretty, getString, setString, JSONTextError } from './json.js';

const $ = (id) => document.getElementById(id);
const API = '/api/service';

const EXAMPLE = `{
  "state": {
    "ticket": "Order 1042 arrived broken; I want my money back.",
    "amount": 0.1000000000000000055511151231257827,
    "order": 12345678901234567890
  },
  "questions": {
    "route": {"type": "choice", "criteria": {"refunds": "Refunds and returns", "shipping": "Delivery problems", "other": "Anything else"}},
    "urgency": {"type": "score", "criteria": ["Not urgent", "This week", "Today", "Now"]},
    "upset": {"type": "noul", "instructions": "Is the customer upset?"}
  }
}`;

let config = {};

// status shows a message in the live region (read out by screen readers).
function status(message, bad = false) {
  const el = $('status');
  el.textContent = message;
  el.classList.toggle('bad', bad);
}

// call makes a same-origin request. The browser adds the session cookie
// and, for POST and DELETE, the Origin header the server requires.
async function call(method, path, body, headers = {}) {
  const init = { method, headers: { ...headers }, credentials: 'same-origin', cache: 'no-store' };
  if (body !== undefined) {
    init.body = body;
    init.headers['Content-Type'] = 'application/json';
  }
  const resp = await fetch(API + path, init);
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { /* not JSON: keep the text */ }
  return { resp, text, data };
}

function errorText(r) {
  const e = r.data && r.data.error;
  return e ? `${e.message} (${e.code})` : `The server answered ${r.resp.status}.`;
}

function when(seconds) {
  if (!seconds) return 'never';
  return new Date(seconds * 1000).toISOString().slice(0, 16).replace('T', ' ');
}

function cell(row, text, cls) {
  const td = document.createElement('td');
  td.textContent = text;
  if (cls) td.className = cls;
  row.append(td);
  return td;
}

// ---- sign-in ----------------------------------------------------------

async function boot() {
  const params = new URLSearchParams(location.search);
  const signin = params.get('signin');
  if (signin) {
    history.replaceState(null, '', location.pathname);
    status(signin === 'invalid' ? 'That sign-in link is invalid, already used or expired. Ask for a new one.' :
      'Sign-in failed because the server could not reach its ledger. Try again.', true);
  }
  const [cfg, sess] = await Promise.all([call('GET', '/config'), call('GET', '/auth/session')]);
  config = cfg.data || {};
  if (sess.data && sess.data.signedIn) {
    showConsole(sess.data.account);
  } else {
    $('signin').hidden = false;
    $('signin-email').focus();
  }
}

$('signin-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const email = $('signin-email').value.trim();
  if (!email) { status('Enter your e-mail address.', true); return; }
  const button = ev.submitter || $('signin-form').querySelector('button');
  button.disabled = true;
  try {
    const r = await call('POST', '/auth/signin', JSON.stringify({ email }));
    if (r.resp.status === 202) {
      status('');
      $('signin-sent').hidden = false;
      $('signin-dev').hidden = !(r.data && r.data.devOutbox);
      $('signin-sent').focus();
    } else {
      status(errorText(r), true);
    }
  } finally {
    button.disabled = false;
  }
});

$('signout').addEventListener('click', async () => {
  await call('POST', '/auth/signout', '{}');
  location.assign('/');
});

function showConsole(account) {
  $('signin').hidden = true;
  $('console').hidden = false;
  $('who').hidden = false;
  $('who-email').textContent = account.email;
  $('pg-default-model').textContent = config.defaultModel || 'model-latest';
  if (!$('pg-body').value) $('pg-body').value = EXAMPLE;
  loadKeys();
}

// ---- tabs (WAI-ARIA tabs pattern: arrow keys move between tabs) --------

const tabs = [...document.querySelectorAll('[role=tab]')];
const loaders = { 'tab-keys': () => loadKeys(), 'tab-usage': () => loadUsage(), 'tab-playground': () => {} };

function select(tab) {
  for (const t of tabs) {
    const on = t === tab;
    t.setAttribute('aria-selected', String(on));
    t.tabIndex = on ? 0 : -1;
    $(t.getAttribute('aria-controls')).hidden = !on;
  }
  loaders[tab.id]();
}

tabs.forEach((t, i) => {
  t.addEventListener('click', () => select(t));
  t.addEventListener('keydown', (ev) => {
    const moves = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 };
    if (!(ev.key in moves)) return;
    ev.preventDefault();
    const next = tabs[(moves[ev.key] + tabs.length) % tabs.length];
    next.focus();
    select(next);
  });
});

// ---- keys -------------------------------------------------------------

async function loadKeys() {
  const r = await call('GET', '/keys');
  if (r.resp.status === 401) return signedOut();
  if (!r.resp.ok) { status(errorText(r), true); return; }
  $('keys-max').textContent = r.data.maxActive;
  const body = $('keys-body');
  body.replaceChildren();
  for (const k of r.data.keys) {
    const row = document.createElement('tr');
    cell(row, k.name);
    cell(row, k.prefix + '…', 'mono');
    cell(row, when(k.createdAt));
    cell(row, when(k.lastUsedAt));
    const revoke = document.createElement('button');
    revoke.type = 'button';
    revoke.className = 'danger';
    revoke.textContent = 'Revoke';
    revoke.setAttribute('aria-label', `Revoke key ${k.name} (${k.prefix})`);
    revoke.addEventListener('click', () => revokeKey(k));
    cell(row, '').append(revoke);
    body.append(row);
  }
  $('keys-empty').hidden = r.data.keys.length > 0;
}

$('key-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const name = $('key-name').value.trim();
  if (!name) { status('Give the key a name.', true); $('key-name').focus(); return; }
  const r = await call('POST', '/keys', JSON.stringify({ name }));
  if (r.resp.status !== 201) { status(errorText(r), true); return; }
  status(`Key “${r.data.name}” created.`);
  $('key-name').value = '';
  $('key-secret-name').textContent = r.data.name;
  $('key-secret-value').value = r.data.secret;
  $('key-secret').hidden = false;
  $('key-secret-value').focus();
  $('key-secret-value').select();
  loadKeys();
});

$('key-copy').addEventListener('click', async () => {
  const value = $('key-secret-value').value;
  try {
    await navigator.clipboard.writeText(value);
    status('Secret copied to the clipboard.');
  } catch {
    $('key-secret-value').select();
    status('Copying was refused by the browser; the secret is selected, press Ctrl+C.', true);
  }
});

// Done forgets the secret: the console cannot show it again.
$('key-done').addEventListener('click', () => {
  $('key-secret-value').value = '';
  $('key-secret').hidden = true;
  $('key-name').focus();
});

async function revokeKey(k) {
  if (!confirm(`Revoke key “${k.name}”? Requests using it will fail at once.`)) return;
  const r = await call('DELETE', '/keys/' + encodeURIComponent(k.id));
  if (!r.resp.ok) { status(errorText(r), true); return; }
  status(`Key “${k.name}” revoked.`);
  loadKeys();
}

// ---- usage ------------------------------------------------------------

async function loadUsage() {
  const r = await call('GET', '/usage');
  if (r.resp.status === 401) return signedOut();
  if (!r.resp.ok) { status(errorText(r), true); return; }
  const u = r.data;
  $('balance').textContent = String(u.balance);
  $('usage-window').textContent = `${u.window.from} to ${u.window.to}`;
  drawChart(u.days);
  const body = $('requests-body');
  body.replaceChildren();
  for (const q of u.requests) {
    const row = document.createElement('tr');
    cell(row, when(q.createdAt));
    cell(row, q.source === 'api' ? `API (${q.keyName || q.keyPrefix || 'key'})` : 'Playground');
    cell(row, q.model, 'mono');
    cell(row, String(q.questions), 'num');
    const outcome = q.state + (q.status ? ` · ${q.status}` : '') + (q.errorCode ? ` · ${q.errorCode}` : '');
    cell(row, outcome, 'state-' + q.state);
    cell(row, String(q.charged), 'num');
    cell(row, q.id, 'mono');
    body.append(row);
  }
  $('requests-empty').hidden = u.requests.length > 0;
}

const SVG = 'http://www.w3.org/2000/svg';

function svg(name, attrs) {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

// drawChart draws one bar per day (credits charged) with the day's figures
// as the bar's title; the chart's label summarises it for screen readers.
function drawChart(days) {
  const chart = $('chart');
  chart.replaceChildren();
  const W = 620, H = 170, top = 10, bottom = 24, left = 10;
  const max = Math.max(1, ...days.map((d) => d.credits));
  const slot = (W - left * 2) / days.length;
  chart.append(svg('line', { x1: left, x2: W - left, y1: H - bottom, y2: H - bottom, class: 'axis' }));
  days.forEach((d, i) => {
    const h = ((H - top - bottom) * d.credits) / max;
    const bar = svg('rect', { x: left + i * slot + 2, y: H - bottom - h, width: Math.max(1, slot - 4), height: h, class: 'bar' });
    const title = svg('title', {});
    title.textContent = `${d.date}: ${d.credits} credits, ${d.requests} requests (${d.succeeded} succeeded, ${d.failed} failed)`;
    bar.append(title);
    chart.append(bar);
  });
  for (const i of [0, days.length - 1]) {
    const label = svg('text', { x: left + i * slot + (i ? slot : 0), y: H - 6, 'text-anchor': i ? 'end' : 'start' });
    label.textContent = days[i].date;
    chart.append(label);
  }
  const total = days.reduce((s, d) => s + d.credits, 0);
  const requests = days.reduce((s, d) => s + d.requests, 0);
  chart.setAttribute('aria-label', `${total} credits charged over ${requests} requests in the last ${days.length} days; highest day ${max} credits.`);
}

// ---- playground -------------------------------------------------------

function bodyText() {
  const text = $('pg-body').value;
  const model = $('pg-model').value.trim();
  return model ? setString(text, 'model', model) : text;
}

$('pg-model').addEventListener('change', () => {
  try {
    $('pg-body').value = setString($('pg-body').value, 'model', $('pg-model').value.trim());
    $('pg-error').textContent = '';
  } catch (e) {
    $('pg-error').textContent = e.message;
  }
});

$('pg-body').addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
    ev.preventDefault();
    $('pg-form').requestSubmit();
  }
});

$('pg-format').addEventListener('click', () => {
  try {
    $('pg-body').value = pretty($('pg-body').value);
    $('pg-error').textContent = '';
  } catch (e) {
    $('pg-error').textContent = e.message;
  }
});

$('pg-reset').addEventListener('click', () => {
  $('pg-body').value = EXAMPLE;
  $('pg-model').value = '';
  $('pg-error').textContent = '';
});

$('pg-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  let sent;
  try {
    sent = compact(bodyText());
    const m = getString(sent, 'model');
    if (m !== undefined) $('pg-model').value = m;
  } catch (e) {
    $('pg-error').textContent = e instanceof JSONTextError ? `Not valid JSON: ${e.message}` : String(e);
    $('pg-body').focus();
    return;
  }
  $('pg-error').textContent = '';
  const headers = {};
  const idem = $('pg-idem').value.trim();
  if (idem) headers['Idempotency-Key'] = idem;
  $('pg-send').disabled = true;
  status('Sending the decision…');
  try {
    const r = await call('POST', '/playground', sent, headers);
    if (r.resp.status === 401) return signedOut();
    const h = (name) => r.resp.headers.get(name);
    $('pg-status').textContent = `${r.resp.status} ${r.resp.statusText}`.trim();
    $('pg-rid').textContent = h('X-Request-Id') || '—';
    $('pg-credits').textContent = h('X-Service-Credits') ?? 'not reported (the charge is not settled yet)';
    $('pg-mode').textContent = h('X-Service-Response-Mode') || '—';
    $('pg-code').textContent = h('X-Service-Error-Code') ? `${h('X-Service-Error-Code')} (${h('X-Service-Error-Source')})` : '—';
    $('pg-sent').textContent = sent;
    let shown = r.text;
    try { shown = pretty(r.text); } catch { /* show the text as it came */ }
    $('pg-answers').textContent = shown;
    $('pg-result').hidden = false;
    status(r.resp.ok ? 'Decision answered.' : 'The decision failed; see the result below.', !r.resp.ok);
  } finally {
    $('pg-send').disabled = false;
  }
});

function signedOut() {
  status('Your session has ended. Sign in again.', true);
  $('console').hidden = true;
  $('who').hidden = true;
  $('signin').hidden = false;
}

boot().catch((e) => status(`The console could not start: ${e.message}`, true));
