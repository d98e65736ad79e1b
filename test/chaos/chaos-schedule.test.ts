/** The chaos schedule is a function of its seed: a failing run is replayed exactly. Server-free. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ALL_FAULTS, faultKinds, schedule } from './chaos-schedule.js';

test('same seed, same faults; CI kinds each once; durations in their ranges', () => {
  const a = schedule(42, { kinds: ALL_FAULTS, pairs: 2, services: 2 });
  assert.deepEqual(schedule(42, { kinds: ALL_FAULTS, pairs: 2, services: 2 }), a);
  assert.notDeepEqual(schedule(43, { kinds: ALL_FAULTS, pairs: 2, services: 2 }), a);
  assert.deepEqual(a.map((f) => f.kind).sort(), [...ALL_FAULTS].sort());
  const long = schedule(7, { count: 200, pairs: 2, services: 2 });
  assert.equal(long.length, 200);
  for (const f of long) {
    assert.ok(f.pair === 1 || f.pair === 2);
    assert.ok(f.service === 0 || f.service === 1);
    if (f.kind === 'stop-master') assert.ok(f.ms >= 2000 && f.ms < 20_000);
    else assert.ok(f.ms >= 2000 && f.ms < 8000);
  }
  assert.equal(new Set(long.map((f) => f.kind)).size, ALL_FAULTS.length, 'a long schedule draws every kind');
});

test('both engines draw every kind, the supervisor-only partition included (their supervisors reach servers by unix socket)', () => {
  assert.deepEqual(faultKinds('mariadb'), [...ALL_FAULTS]);
  assert.deepEqual(faultKinds('postgres'), [...ALL_FAULTS]);
  const long = schedule(7, { count: 200, from: faultKinds('postgres'), pairs: 2, services: 2 });
  assert.equal(new Set(long.map((f) => f.kind)).size, ALL_FAULTS.length);
});
