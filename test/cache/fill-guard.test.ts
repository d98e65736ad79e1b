import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FillGuard } from '../../src/kit/fill-guard.js';

test('fill guard: only keys invalidated after a reader began are refused', () => {
  const g = new FillGuard();
  g.invalidate(['a']);
  const t1 = g.begin();
  const t2 = g.begin();
  g.invalidate(['b']);
  const t3 = g.begin();
  assert.deepEqual(g.end(t1, ['a', 'b', 'c']), [true, false, true]);
  assert.deepEqual(g.end(t3, ['a', 'b']), [true, true], 'began after the invalidation of b');
  g.invalidate(['c']);
  assert.deepEqual(g.end(t2, ['b', 'c']), [false, false]);
  // No reader in flight: nothing is remembered, later readers fill freely.
  const t4 = g.begin();
  assert.deepEqual(g.end(t4, ['a', 'b', 'c']), [true, true, true]);
});

test('fill guard: past its bound it forgets keys and refuses every fill of the readers in flight', () => {
  const g = new FillGuard(3);
  const old = g.begin();
  g.invalidate(['a', 'b']);
  g.invalidate(['c', 'd']);
  const later = g.begin();
  assert.deepEqual(g.end(old, ['x', 'y']), [false, false], 'began before the overflow');
  assert.deepEqual(g.end(later, ['a', 'x']), [true, true], 'began after it');
});

test('fill guard: release ends a read without filling', () => {
  const g = new FillGuard();
  const t = g.begin();
  g.invalidate(['a']);
  g.release();
  const t2 = g.begin();
  assert.deepEqual(g.end(t2, ['a']), [true]);
  assert.ok(t2 > t);
});
