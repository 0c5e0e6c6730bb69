// Unit tests of the playground's JSON text tools: run with `node --test`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compact, pretty, getString, setString, JSONTextError } from '../static/json.js';

const precise = '{\n  "state": {"p": 0.1000000000000000055511151231257827, "n": 12345678901234567890, "e": 1E-400},\n  "questions": {"q": {"type": "noul"}}\n}';

test('compact keeps every number and string exactly as typed', () => {
  assert.equal(compact(precise), '{"state":{"p":0.1000000000000000055511151231257827,"n":12345678901234567890,"e":1E-400},"questions":{"q":{"type":"noul"}}}');
  assert.equal(compact('[ "a \\u0041 \\"b\\" " , -0 , 1.50 ]'), '["a \\u0041 \\"b\\" ",-0,1.50]');
});

test('pretty indents without touching tokens', () => {
  assert.equal(pretty('{"a":[1.000,{}],"b":{}}'), '{\n  "a": [\n    1.000,\n    {}\n  ],\n  "b": {}\n}');
  assert.equal(compact(pretty(precise)), compact(precise));
});

test('malformed text is refused with an offset', () => {
  for (const bad of ['', '{', '{"a":}', '{"a":1,}', '[01]', '[1.]', '"\u0001"', '{"a" 1}', '1 2', 'nul', '[1e]', '"\\x"']) {
    assert.throws(() => compact(bad), JSONTextError, bad);
  }
});

test('setString edits only the root member', () => {
  assert.equal(setString('{"state": 1.10}', 'model', 'm-1'), '{"model": "m-1", "state": 1.10}');
  assert.equal(setString('{}', 'model', 'm'), '{"model": "m"}');
  assert.equal(setString('{\n  "state": 1\n}', 'model', 'm'), '{\n  "model": "m",\n  "state": 1\n}');
  assert.equal(setString('{"model": "a", "x": {"model": "inner"}}', 'model', 'b'), '{"model": "b", "x": {"model": "inner"}}');
  assert.equal(setString('{"model": "a", "x": 2}', 'model', ''), '{"x": 2}');
  assert.equal(setString('{"x": 2, "model": "a"}', 'model', ''), '{"x": 2}');
  assert.equal(getString('{"x": {"model": "no"}, "model": "yes"}', 'model'), 'yes');
  assert.equal(getString('{"model": 3}', 'model'), undefined);
  assert.throws(() => setString('[1]', 'model', 'm'), JSONTextError);
});
