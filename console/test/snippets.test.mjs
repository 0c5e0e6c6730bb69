// The console's key snippets (static/snippets.js), run as a reader would
// against a fake gateway: each sends one Idempotency-Key and resends it
// with the same body after an answer that says wait, reads credits and
// request id from the headers, and stops at once, naming the code, on an
// error the caller must fix (spec §4.1 rule 1, §7, §9.6). Run with
// `node --test`; the Go snippet is the client package, run by the browser
// test and by client/'s own tests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { snippet } from '../static/snippets.js';

const KEY = 'dgk_aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
const tmp = mkdtempSync(path.join(os.tmpdir(), 'dg-snippets-'));
const runs = {
  curl: (file) => ['bash', [file], 'decide.sh'],
  python: (file) => ['python3', [file], 'decide.py'],
  javascript: (file) => [process.execPath, [file], 'decide.mjs'],
};

// gateway serves the answers in order (the last one repeats) and records
// what each request sent.
async function gateway(answers) {
  const seen = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      const [status, headers, text] = answers[Math.min(seen.length, answers.length) - 1];
      res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
      res.end(text);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${server.address().port}/v1`, seen, close: () => server.close() };
}

async function run(lang, base) {
  const [cmd, args, name] = runs[lang](path.join(tmp, `${lang}-${Math.random().toString(36).slice(2)}`));
  writeFileSync(args[0], snippet(lang, base, KEY).code);
  try {
    const { stdout, stderr } = await promisify(execFile)(cmd, args, { encoding: 'utf8', timeout: 60_000 });
    return { ok: true, out: stdout + stderr };
  } catch (e) {
    return { ok: false, out: `${e.stdout}${e.stderr}` };
  }
}

const error = (status, code, extra = {}) =>
  [status, { 'X-Service-Error-Source': 'platform', 'X-Service-Error-Code': code, 'X-Service-Credits': '0', ...extra },
    JSON.stringify({ error: { code, message: 'the words may change' } })];
const success = [200, { 'X-Service-Credits': '1', 'X-Request-Id': 'req-0042' },
  JSON.stringify({ model: 'm', answers: { refund: { type: 'noul', noul: 0.75 } } })];

for (const lang of Object.keys(runs)) {
  test(`${lang}: a busy gateway is asked again with the same key and body; credits and request id from the headers`, async () => {
    const gw = await gateway([error(503, 'overloaded', { 'Retry-After': '1' }), success]);
    try {
      const r = await run(lang, gw.base);
      assert.ok(r.ok, r.out);
      assert.equal(gw.seen.length, 2, `requests sent:\n${r.out}`);
      const [first, second] = gw.seen;
      for (const s of gw.seen) {
        assert.equal(s.method, 'POST');
        assert.equal(s.url, '/v1/service');
        assert.equal(s.headers.authorization, `Bearer ${KEY}`);
        assert.match(s.headers['content-type'], /^application\/json/);
      }
      assert.ok(first.headers['idempotency-key'], 'an Idempotency-Key is sent');
      assert.equal(second.headers['idempotency-key'], first.headers['idempotency-key'], 'the retry resends the key');
      assert.equal(second.body, first.body, 'the retry resends the same body');
      assert.deepEqual(JSON.parse(first.body).questions.refund.type, 'noul');
      assert.match(r.out, /0\.75/);
      assert.match(r.out, /req-0042/, 'the request id is shown');
      assert.match(r.out, /[Cc]redits:? 1\b/, 'the credits charged are shown');
    } finally {
      gw.close();
    }
  });

  test(`${lang}: an error to fix is not retried, and its code is shown`, async () => {
    const gw = await gateway([error(401, 'invalid_api_key')]);
    try {
      const r = await run(lang, gw.base);
      assert.equal(gw.seen.length, 1, `requests sent:\n${r.out}`);
      assert.match(r.out, /invalid_api_key/);
      if (lang !== 'curl') assert.equal(r.ok, false, `a failed call exits non-zero:\n${r.out}`);
    } finally {
      gw.close();
    }
  });
}
