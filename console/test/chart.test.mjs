// Unit tests of the usage chart's axis arithmetic: run with `node --test`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readable, ticks } from '../static/chart.js';

test('the value axis runs from zero to a round top at or above the highest day', () => {
  for (const [max, want] of [[0, [0, 1]], [1, [0, 1]], [3, [0, 1, 2, 3]], [9, [0, 5, 10]], [10, [0, 5, 10]],
    [11, [0, 5, 10, 15]], [100, [0, 50, 100]], [101, [0, 50, 100, 150]], [1234, [0, 500, 1000, 1500]]]) {
    assert.deepEqual(ticks(max), want, `max ${max}`);
  }
});

test('dates read as month and day, in UTC', () => {
  assert.equal(readable('2026-11-03'), 'Nov 3');
  assert.equal(readable('2026-01-31'), 'Jan 31');
});
