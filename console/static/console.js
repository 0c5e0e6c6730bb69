// The Decision Gateway console: sign-in, API keys, usage and the
// playground, on the /api/service endpoints of the same origin. Plain
// DOM code: every server value is written with textContent, never as HTML.
import { compact, pretty, getString, setString, JSONTextError } from './json.js';
import { render } from './answers.js';
import { drawChart, readable } from './chart.js';
import { snippet } from './snippets.js';

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

// HUMAN words the errors a person can meet in the console; the API's own
// messages are written for programs (`send {"email": <address>} …`).
const HUMAN = {
  invalid_email: 'That does not look like an e-mail address. Check it and try again, for example name@example.com.',
  signin_rate_limited: 'Too many sign-in links were asked for. Wait a few minutes, then try again.',
  mail_failed: 'The sign-in mail could not be sent. Try again in a minute.',
  mail_not_configured: 'This server sends no mail, so it cannot sign you in by e-mail. Ask its operator for access.',
  invalid_key_name: 'A key name is 1 to 64 characters.',
  key_limit_reached: 'You have the most active keys allowed. Revoke one you no longer use, then create the new one.',
  key_creation_rate_limited: 'Too many keys created in the last minute. Wait a minute, then try again.',
  key_not_found: 'That key no longer exists; the list is refreshed.',
  ledger_unavailable: 'The server cannot reach its ledger just now. Try again in a moment.',
  origin_not_allowed: 'The server refused a request from this address. Open the console at its configured address.',
  signin_link_invalid: 'That sign-in link is invalid, already used or expired. Ask for a new one.',
};

// DECISION says what to do after a failed playground decision, by its
// X-Service-Error-Code (schema/errors.md); codes not here (the request's
// own validation errors) are explained by the server's message, which
// names the JSON path.
const UPSTREAM_FAILED = 'The model provider could not answer usefully; nothing was charged. Try again later.';
const DECISION = {
  insufficient_credits: 'Your balance has not enough credits for this request: each question costs a credit per started 4,096 bytes of the request. See Usage for the balance; nothing was charged.',
  rate_limit_exceeded: 'Your account sent more decisions this minute than it may (the API and the playground count together); nothing was charged.',
  body_too_large: 'The request is larger than 65,536 bytes. Make the state or the questions smaller; nothing was sent on.',
  invalid_idempotency_key: 'An Idempotency-Key is 1 to 255 visible ASCII characters, without spaces.',
  request_in_progress: 'The request with this Idempotency-Key is still running. Send it again in a moment for its answer.',
  idempotency_conflict: 'This Idempotency-Key was used before with a different request. Use a new key, or send exactly that request.',
  idempotency_failed: 'The request first sent with this Idempotency-Key failed and was refunded. Use a new key to try again.',
  request_reconciliation_pending: 'An earlier request of your account had to be settled first; this one was not run. Check Usage, then send it again.',
  provider_busy: 'The model provider is busy; nothing was charged.',
  upstream_rejected_request: 'The model provider refused the request; its answer is below. Change the request and send it again; nothing was charged.',
  upstream_auth_failed: 'The model provider refused this server\'s own credential (your session is fine): the operator must fix it. Nothing was charged.',
  upstream_not_found: 'The model provider does not know this model: check its name. Nothing was charged.',
  upstream_timeout: 'The model provider did not answer in time; nothing was charged. Try again.',
  upstream_unavailable: UPSTREAM_FAILED,
  upstream_invalid_response: UPSTREAM_FAILED,
  upstream_response_too_large: UPSTREAM_FAILED,
  upstream_response_unsafe: UPSTREAM_FAILED,
  upstream_error: UPSTREAM_FAILED,
  invalid_upstream_answer: UPSTREAM_FAILED,
  upstream_not_configured: 'This server has no model provider configured: ask its operator.',
  ledger_unavailable: HUMAN.ledger_unavailable,
  overloaded: 'The server is busy just now; nothing was charged.',
  function_timeout: 'The server did not finish in time; the decision may have run. Check Usage before sending it again.',
  internal_error: 'The server failed; the decision may have run. Check Usage before sending it again.',
};

// decisionFailed is the status line of a failed decision: its code, what
// to do, and when to try again if the server said (Retry-After).
function decisionFailed(r) {
  const code = r.resp.headers.get('X-Service-Error-Code');
  if (!code) return 'The decision failed; see the result below.';
  const message = r.data && r.data.error && typeof r.data.error.message === 'string' ? r.data.error.message : '';
  let help = DECISION[code] || (message ? `The server said: ${message}.` : 'See the result below.');
  const wait = Number(r.resp.headers.get('Retry-After'));
  if (r.resp.headers.has('Retry-After') && Number.isInteger(wait) && wait >= 0) help += ` Try again in ${wait} ${wait === 1 ? 'second' : 'seconds'}.`;
  return `The decision failed (${code}). ${help}`;
}

function errorText(r) {
  const e = r.data && r.data.error;
  if (e && HUMAN[e.code]) return HUMAN[e.code];
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

// A sign-in mail links to /#signin=<token>&n=<nonce>. Opening it spends
// nothing (a mail scanner that fetches or renders the link cannot use it
// up); this page spends it with POST /auth/verify under its own Origin. At
// once when the link carries the nonce this browser sent when it asked, in
// the link's lifetime (ASKED, set below), else only after the person
// confirms: a page elsewhere that sends a browser to someone else's link
// cannot sign it in unnoticed, even while a request of its own is fresh.
const ASKED = 'dg-signin-asked';
const LINK_LIFE_MS = 15 * 60 * 1000;

function askedHere(nonce) {
  try {
    const asked = JSON.parse(localStorage.getItem(ASKED) || '{}');
    return !!nonce && asked.nonce === nonce && Date.now() - asked.at < LINK_LIFE_MS;
  } catch { return false; } // storage refused: ask instead
}

// newNonce is 128 random bits in hex, what the console sends with a
// request for a link and finds again in the link.
function newNonce() {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}

async function boot() {
  const signin = new URLSearchParams(location.search).get('signin');
  if (signin) history.replaceState(null, '', location.pathname);
  if (signin) status(HUMAN.signin_link_invalid, true);
  const [cfg, sess] = await Promise.all([call('GET', '/config'), call('GET', '/auth/session')]);
  config = cfg.data || {};
  if (takeLink()) return;
  if (sess.data && sess.data.signedIn) {
    showConsole(sess.data.account);
  } else {
    showSignIn();
  }
}

// takeLink acts on a sign-in link in the address (/#signin=<token>), on
// load or when the link is opened in this tab later (only the fragment
// changes, so the page is not loaded again). The token leaves the address
// bar and the history at once.
function takeLink() {
  const [, token, nonce] = /^#signin=([a-z0-9_]{1,200})(?:&n=([a-z0-9]{16,64}))?$/.exec(location.hash) || [];
  if (location.hash) history.replaceState(null, '', location.pathname);
  if (!token) return false;
  if (askedHere(nonce)) {
    spendLink(token);
    return true;
  }
  $('signin').hidden = true;
  $('console').hidden = true;
  $('who').hidden = true;
  $('signin-confirm').hidden = false;
  $('signin-confirm-go').onclick = () => { $('signin-confirm').hidden = true; spendLink(token); };
  $('signin-confirm-go').focus();
  return true;
}

window.addEventListener('hashchange', takeLink);

function showSignIn() {
  $('signin-confirm').hidden = true;
  $('signin').hidden = false;
  $('signin-email').focus();
}

// Cancel starts the page over: signed in or not, as before the link.
$('signin-confirm-cancel').addEventListener('click', () => location.assign('/'));

async function spendLink(token) {
  status('Signing in…');
  const r = await call('POST', '/auth/verify', JSON.stringify({ token }));
  if (!r.resp.ok) {
    status(errorText(r), true);
    showSignIn();
    return;
  }
  try { localStorage.removeItem(ASKED); } catch { /* nothing kept */ }
  status('');
  // welcome: this was the account's first sign-in, which granted that many
  // credits (functions/auth).
  if (r.data.welcome > 0) {
    $('welcome-credits').textContent = String(r.data.welcome);
    $('welcome').hidden = false;
  }
  showConsole(r.data.account);
}

// signinError shows why the address was refused beside its field.
function signinError(message) {
  $('signin-error').textContent = message;
  $('signin-email').setAttribute('aria-invalid', String(!!message));
  if (message) $('signin-email').focus();
}

$('signin-email').addEventListener('input', () => signinError(''));

$('signin-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const email = $('signin-email').value.trim();
  status('');
  if (!email) { signinError('Enter your e-mail address.'); return; }
  const button = ev.submitter || $('signin-form').querySelector('button');
  button.disabled = true;
  try {
    const nonce = newNonce();
    const r = await call('POST', '/auth/signin', JSON.stringify({ email, nonce }));
    if (r.resp.status === 202) {
      try { localStorage.setItem(ASKED, JSON.stringify({ nonce, at: Date.now() })); } catch { /* the link will ask to confirm */ }
      signinError('');
      $('signin-sent').hidden = false;
      $('signin-dev').hidden = !(r.data && r.data.devOutbox);
      $('signin-sent').focus();
    } else if (r.data && r.data.error && r.data.error.code === 'invalid_email') {
      signinError(errorText(r));
    } else {
      status(errorText(r), true);
    }
  } finally {
    button.disabled = false;
  }
});

// Sign out leaves the console only once the server ended the session: on
// a shared computer, a sign-out that failed unnoticed lets the next person
// in.
$('signout').addEventListener('click', async () => {
  let r;
  try {
    r = await call('POST', '/auth/signout', '{}');
  } catch (e) {
    status(`Signing out failed (${e.message}): you are still signed in. Try again.`, true);
    return;
  }
  if (!r.resp.ok && !sessionEnded(r)) {
    status(`Signing out failed: ${errorText(r)} You are still signed in.`, true);
    return;
  }
  location.assign('/');
});

function showConsole(account) {
  $('signin').hidden = true;
  $('console').hidden = false;
  $('who').hidden = false;
  $('who-email').textContent = account.email;
  $('pg-default-model').textContent = config.defaultModel || 'model-latest';
  if (!$('pg-body').value) $('pg-body').value = EXAMPLE;
  // The section on screen is loaded for this account (after a session
  // ended, another may begin in this tab without a reload).
  loaders[$('main-tabs').querySelector('[aria-selected=true]').id]();
}

$('welcome-done').addEventListener('click', () => {
  $('welcome').hidden = true;
  $('tab-keys').focus();
});

// ---- tabs (WAI-ARIA tabs pattern: arrow keys move between tabs) --------

// tablist wires the tabs of list: a click or an arrow key selects a tab
// and calls onSelect with it.
function tablist(list, onSelect) {
  const tabs = [...list.querySelectorAll('[role=tab]')];
  const select = (tab) => {
    for (const t of tabs) {
      t.setAttribute('aria-selected', String(t === tab));
      t.tabIndex = t === tab ? 0 : -1;
    }
    onSelect(tab);
  };
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
  return select;
}

const loaders = { 'tab-keys': () => loadKeys(), 'tab-usage': () => loadUsage(), 'tab-playground': () => {} };

tablist($('main-tabs'), (tab) => {
  for (const t of $('main-tabs').querySelectorAll('[role=tab]')) $(t.getAttribute('aria-controls')).hidden = t !== tab;
  // A message belongs to the section it came from: it does not follow.
  status('');
  loaders[tab.id]();
});

// ---- keys -------------------------------------------------------------

// newest(name) numbers a load; stale(name, n) is true once a later load
// of the same list has started, so a slow earlier answer cannot overwrite
// a newer one (a quick Usage, Playground, Usage).
const loads = {};
const newest = (name) => (loads[name] = (loads[name] || 0) + 1);
const stale = (name, n) => loads[name] !== n;

async function loadKeys() {
  const n = newest('keys');
  const r = await call('GET', '/keys');
  if (stale('keys', n)) return;
  if (sessionEnded(r)) return signedOut();
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
  // One creation at a time: a second click would make a second key whose
  // secret replaces the first one's before anyone could copy it.
  const button = ev.submitter || $('key-form').querySelector('button');
  if (button.disabled) return;
  button.disabled = true;
  let r;
  try {
    r = await call('POST', '/keys', JSON.stringify({ name }));
  } finally {
    button.disabled = false;
  }
  if (sessionEnded(r)) return signedOut();
  if (r.resp.status !== 201) { status(errorText(r), true); return; }
  status(`Key “${r.data.name}” created.`);
  $('key-name').value = '';
  $('key-secret-name').textContent = r.data.name;
  $('key-secret-value').value = r.data.secret;
  selectSnippet($('snippet-curl'));
  $('key-secret').hidden = false;
  $('key-secret-value').focus();
  $('key-secret-value').select();
  loadKeys();
});

// showSnippet writes the code of the selected language with the new key
// in it (only ever into this page: see snippets.js).
function showSnippet(tab) {
  const lang = tab.id.replace('snippet-', '');
  const s = snippet(lang, location.origin + '/v1', $('key-secret-value').value);
  $('snippet-panel').setAttribute('aria-labelledby', tab.id);
  $('snippet-panel').dataset.lang = lang;
  $('snippet-note').textContent = s.note;
  $('snippet-code').textContent = s.code;
}
const selectSnippet = tablist($('snippet-tabs'), showSnippet);

async function copy(text, what, select) {
  try {
    await navigator.clipboard.writeText(text);
    status(`${what} copied to the clipboard.`);
  } catch {
    select();
    status(`Copying was refused by the browser; the ${what.toLowerCase()} is selected, press Ctrl+C.`, true);
  }
}

$('key-copy').addEventListener('click', () => copy($('key-secret-value').value, 'Secret', () => $('key-secret-value').select()));
$('snippet-copy').addEventListener('click', () => copy($('snippet-code').textContent, 'Snippet',
  () => getSelection().selectAllChildren($('snippet-code'))));

// Done forgets the secret: the console cannot show it again.
$('key-done').addEventListener('click', () => {
  $('key-secret-value').value = '';
  $('snippet-code').textContent = '';
  $('key-secret').hidden = true;
  $('key-name').focus();
});

async function revokeKey(k) {
  if (!confirm(`Revoke key “${k.name}”? Requests using it will fail at once.`)) return;
  const r = await call('DELETE', '/keys/' + encodeURIComponent(k.id));
  if (sessionEnded(r)) return signedOut();
  // The row and its button go with the new list: focus stays with the
  // list rather than fall back to the top of the page.
  $('keys-wrap').focus();
  if (!r.resp.ok) {
    status(errorText(r), true);
    // Revoked elsewhere (another tab, an operator): the list is stale.
    if (r.data && r.data.error && r.data.error.code === 'key_not_found') loadKeys();
    return;
  }
  status(`Key “${k.name}” revoked.`);
  loadKeys();
}

// ---- usage ------------------------------------------------------------

async function loadUsage() {
  const n = newest('usage');
  const r = await call('GET', '/usage');
  if (stale('usage', n)) return;
  if (sessionEnded(r)) return signedOut();
  if (!r.resp.ok) { status(errorText(r), true); return; }
  const u = r.data;
  $('balance').textContent = String(u.balance);
  $('usage-window').textContent = `${readable(u.window.from)} to ${readable(u.window.to)}`;
  lastDays = u.days;
  drawChart($('chart'), u.days);
  const body = $('requests-body');
  body.replaceChildren();
  for (const q of u.requests) {
    const row = document.createElement('tr');
    cell(row, when(q.createdAt));
    cell(row, q.source === 'api' ? `API (${q.keyName || q.keyPrefix || 'key'})` : 'Playground');
    // The model asked for and, when the answer named another (an alias
    // resolved, spec §9.5), the one that answered.
    cell(row, q.resolvedModel && q.resolvedModel !== q.model ? `${q.model} → ${q.resolvedModel}` : q.model, 'mono');
    cell(row, String(q.questions), 'num');
    const outcome = q.state + (q.status ? ` · ${q.status}` : '') + (q.errorCode ? ` · ${q.errorCode}` : '');
    cell(row, outcome, 'state-' + q.state);
    cell(row, String(q.charged), 'num');
    cell(row, q.id, 'mono');
    body.append(row);
  }
  $('requests-empty').hidden = u.requests.length > 0;
}

let lastDays = null;

// The chart is drawn at its pixel width: draw again when that changes.
new ResizeObserver(() => { if (lastDays && !$('panel-usage').hidden) drawChart($('chart'), lastDays); }).observe($('chart'));

// ---- playground -------------------------------------------------------

function bodyText() {
  const text = $('pg-body').value;
  const model = $('pg-model').value.trim();
  return model ? setString(text, 'model', model) : text;
}

// pgError shows a problem with the typed request. What was on screen
// before (a result, "Decision answered.") belongs to an earlier request
// and goes, so nothing suggests this text was sent or answered.
function pgError(message) {
  $('pg-error').textContent = message;
  if (!message) return;
  status('');
  $('pg-result').hidden = true;
}

$('pg-model').addEventListener('change', () => {
  try {
    $('pg-body').value = setString($('pg-body').value, 'model', $('pg-model').value.trim());
    pgError('');
  } catch (e) {
    pgError(`Not valid JSON: ${e.message}`);
  }
});

// The Model field shows the body's model: a model typed into the JSON is
// the one sent, not an earlier value of the field.
$('pg-body').addEventListener('input', () => {
  try {
    $('pg-model').value = getString($('pg-body').value, 'model') ?? '';
  } catch { /* not JSON (yet): the field keeps its value until it is */ }
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
    pgError('');
  } catch (e) {
    pgError(`Not valid JSON: ${e.message}`);
  }
});

$('pg-reset').addEventListener('click', () => {
  $('pg-body').value = EXAMPLE;
  $('pg-model').value = '';
  pgError('');
});

$('pg-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  let sent;
  try {
    sent = compact(bodyText());
    const m = getString(sent, 'model');
    if (m !== undefined) $('pg-model').value = m;
  } catch (e) {
    pgError(e instanceof JSONTextError ? `Not valid JSON: ${e.message}` : String(e));
    $('pg-body').focus();
    return;
  }
  pgError('');
  $('pg-result').hidden = true;
  const headers = {};
  const idem = $('pg-idem').value.trim();
  // A value the browser cannot send as a header would fail before any
  // request (not "no answer", which may mean the decision ran).
  if (idem && !/^[\x21-\x7e]{1,255}$/.test(idem)) {
    pgError(`Not sent: ${DECISION.invalid_idempotency_key}`);
    $('pg-idem').focus();
    return;
  }
  if (idem) headers['Idempotency-Key'] = idem;
  $('pg-send').disabled = true;
  status('Sending the decision…');
  try {
    const r = await call('POST', '/playground', sent, headers);
    if (sessionEnded(r)) return signedOut();
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
    // A replay is the retained answer of an earlier request under the same
    // Idempotency-Key: say so, or it reads as a fresh, free inference.
    const replay = h('X-Idempotency-Replayed') === 'true';
    $('pg-replay').hidden = !replay;
    $('pg-replay-rid').textContent = h('X-Request-Id') || '';
    let questions = {};
    try { questions = JSON.parse(sent).questions || {}; } catch { /* drawn without the declared order */ }
    $('pg-visual').hidden = !(r.resp.ok && render($('pg-charts'), r.data, questions));
    $('pg-result').hidden = false;
    status(!r.resp.ok ? decisionFailed(r) :
      replay ? 'Replayed: the retained answer of an earlier request, no credits charged.' : 'Decision answered.', !r.resp.ok);
  } catch (e) {
    // No answer proves nothing about the outcome (spec §7 rule 3).
    status(`No answer came (${e.message}). The decision may still have run: check Usage, or resend with the same Idempotency-Key.`, true);
  } finally {
    $('pg-send').disabled = false;
  }
});

// sessionEnded: a 401 of the console's own. A playground decision's 401
// from the upstream (the vendor refusing the operator's key) is a failed
// decision and says nothing about the session (spec §5 rule 5).
function sessionEnded(r) {
  return r.resp.status === 401 && r.resp.headers.get('X-Service-Error-Source') !== 'upstream';
}

// signedOut shows the sign-in form, focused, once a session route said
// the session is gone. A new key's secret still on screen goes too (as
// with Done): the page is no longer anyone's.
function signedOut() {
  status('Your session has ended. Sign in again.', true);
  $('key-secret-value').value = '';
  $('snippet-code').textContent = '';
  $('key-secret').hidden = true;
  // Nor does the account's data, for whoever signs in next in this tab.
  $('keys-body').replaceChildren();
  $('requests-body').replaceChildren();
  $('balance').textContent = '–';
  $('pg-result').hidden = true;
  $('console').hidden = true;
  $('who').hidden = true;
  showSignIn();
}

boot().catch((e) => status(`The console could not start: ${e.message}`, true));
