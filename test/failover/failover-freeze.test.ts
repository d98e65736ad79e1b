import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardKitError } from '../../src/errors.js';
import { addMove } from '../../src/moves/move-state.js';
import { activeFreeze } from '../../src/topology/range-freeze.js';
import { ShardMap, type ShardMapJson } from '../../src/topology/shard-map.js';
import { failoverIds, freezeForFailover, releaseFailover, staleFailoverIds, switchFailover } from '../../src/ops/failover/failover-freeze.js';

/** Host A masters two object ranges (split by an earlier move) and the mod shards; B is its slave. */
function mapJson(): ShardMapJson {
  return {
    version: 7,
    ranges: [
      { range: [0, 3], master: 'A', slave: 'B', open: true },
      { range: [4, 7], master: 'C', slave: 'D', open: true },
      { range: [8, 11], master: 'A', slave: 'B', open: false },
    ],
    modShards: { count: 4, ranges: [{ range: [0, 1], master: 'A', slave: 'B' }, { range: [2, 3], master: 'C', slave: 'D' }] },
  };
}

const code = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    return (err as ShardKitError).code;
  }
  return 'none';
};

test('freeze: one failover record per object range of the master, each frozen with the budget; services hold writes to them only', () => {
  const now = 1_000_000;
  const frozen = ShardMap.fromJSON(freezeForFailover(ShardMap.fromJSON(mapJson()), 'A', 'B', { holdMs: 1500, now }));
  const ids = failoverIds(frozen, 'A');
  assert.equal(ids.length, 2);
  for (const m of frozen.moves()) {
    assert.deepEqual([m.kind, m.phase, m.source, m.target, m.holdMs], ['failover', 'frozen', { master: 'A', slave: 'B' }, { master: 'B', slave: 'A' }, 1500]);
  }
  assert.ok(activeFreeze(frozen, 0, now + 10) !== undefined);
  assert.ok(activeFreeze(frozen, 9, now + 10) !== undefined);
  assert.equal(activeFreeze(frozen, 5, now + 10), undefined);
  // Past the budget a crashed failover's freeze holds nothing.
  assert.equal(activeFreeze(frozen, 0, now + 1500), undefined);
  // Another map edit cannot touch the held ranges meanwhile.
  assert.equal(code(() => addMove(frozen, { span: { first: 0, last: 1 }, target: { master: 'C', slave: 'D' } })), 'SHARD_FROZEN');
});

test('switch: one map version names B master and A slave of every range A mastered, object and mod, freezes and records gone', () => {
  const frozen = ShardMap.fromJSON(freezeForFailover(ShardMap.fromJSON(mapJson()), 'A', 'B', { holdMs: 1500 }));
  const json = switchFailover(frozen, 'A', failoverIds(frozen, 'A'));
  const after = ShardMap.fromJSON(json);
  assert.equal(after.moves().length, 0);
  assert.deepEqual(after.objectRanges().map((r) => [r.range, r.master, r.slave, r.open, r.frozen]), [
    [[0, 3], 'B', 'A', true, undefined], [[4, 7], 'C', 'D', true, undefined], [[8, 11], 'B', 'A', false, undefined],
  ]);
  assert.deepEqual(after.modShardRanges().map((r) => [r.master, r.slave]), [['B', 'A'], ['C', 'D']]);
});

test('switch refuses a map where the freeze was lifted (VERSION_CONFLICT), unless asked to promote unfrozen ranges (read_only alone)', () => {
  const frozen = ShardMap.fromJSON(freezeForFailover(ShardMap.fromJSON(mapJson()), 'A', 'B', { holdMs: 1500 }));
  const ids = failoverIds(frozen, 'A');
  const released = ShardMap.fromJSON(releaseFailover(frozen, ids));
  assert.equal(code(() => switchFailover(released, 'A', ids)), 'UNKNOWN_MOVE');
  assert.equal(code(() => switchFailover(released, 'A', [])), 'VERSION_CONFLICT');
  const plain = ShardMap.fromJSON(switchFailover(ShardMap.fromJSON(mapJson()), 'A', [], { promoteUnfrozen: true }));
  assert.deepEqual(plain.objectRanges().map((r) => r.master), ['B', 'C', 'B']);
});

test('release: the freeze is lifted and the records forgotten, the map as before; releasing again changes nothing', () => {
  const before = ShardMap.fromJSON(mapJson());
  const frozen = ShardMap.fromJSON(freezeForFailover(before, 'A', 'B', { holdMs: 1500 }));
  const released = releaseFailover(frozen, failoverIds(frozen, 'A'));
  assert.deepEqual({ ...released, version: 7 }, before.toJSON());
  assert.deepEqual(releaseFailover(ShardMap.fromJSON(released), failoverIds(frozen, 'A')), released);
});

test('a failover record must target the source pair turned round', () => {
  const map = ShardMap.fromJSON(mapJson());
  assert.equal(code(() => addMove(map, { span: { first: 0, last: 3 }, target: { master: 'C', slave: 'D' }, kind: 'failover' })), 'INVALID_ARGUMENT');
  assert.equal(code(() => addMove(map, { span: { first: 0, last: 3 }, target: { master: 'B', slave: 'A' }, kind: 'failover' })), 'none');
  // A move to the pair's own slave is still refused.
  assert.equal(code(() => addMove(map, { span: { first: 0, last: 3 }, target: { master: 'B', slave: 'A' } })), 'INVALID_ARGUMENT');
});

test('an earlier failover record is lifted only once its budget ran out; within it the new failover is refused (SHARD_FROZEN)', () => {
  const now = 5_000_000;
  const frozen = ShardMap.fromJSON(freezeForFailover(ShardMap.fromJSON(mapJson()), 'A', 'B', { holdMs: 2000, now }));
  assert.equal(code(() => staleFailoverIds(frozen, 'A', now + 1999)), 'SHARD_FROZEN');
  assert.deepEqual(staleFailoverIds(frozen, 'A', now + 2000).sort(), failoverIds(frozen, 'A').sort());
  assert.deepEqual(staleFailoverIds(frozen, 'C', now), []);
});

test('MariaDB: a planned failover of a pair a move copies to is refused in its freeze; a move to a pair failing over is refused in its start; a switched move or a stale failover does not count', () => {
  const now = 1_000_000;
  const moving = ShardMap.fromJSON(addMove(ShardMap.fromJSON(mapJson()), { span: { first: 4, last: 5 }, target: { master: 'A', slave: 'B' }, id: 'm1', now }));
  assert.equal(code(() => freezeForFailover(moving, 'A', 'B', { holdMs: 1500, now, refuseMoveTargets: true })), 'VERSION_CONFLICT');
  assert.equal(code(() => freezeForFailover(moving, 'B', 'A', { holdMs: 1500, now, refuseMoveTargets: true })), 'VERSION_CONFLICT', 'the target named as slave too');
  assert.equal(code(() => freezeForFailover(moving, 'A', 'B', { holdMs: 1500, now })), 'none', 'PostgreSQL: its move aborts instead');
  const switched = ShardMap.fromJSON({ ...moving.toJSON(), moves: moving.toJSON().moves!.map((m) => ({ ...m, phase: 'switched' as const })) });
  assert.equal(code(() => freezeForFailover(switched, 'A', 'B', { holdMs: 1500, now, refuseMoveTargets: true })), 'none');
  const failing = ShardMap.fromJSON(freezeForFailover(ShardMap.fromJSON(mapJson()), 'A', 'B', { holdMs: 1500, now }));
  assert.equal(code(() => addMove(failing, { span: { first: 4, last: 5 }, target: { master: 'A', slave: 'B' }, now: now + 10 })), 'VERSION_CONFLICT');
  assert.equal(code(() => addMove(failing, { span: { first: 4, last: 5 }, target: { master: 'B', slave: 'A' }, now: now + 10 })), 'VERSION_CONFLICT');
  assert.equal(code(() => addMove(failing, { span: { first: 4, last: 5 }, target: { master: 'A', slave: 'B' }, now: now + 1500 + 120_001 })), 'none', 'a crashed failover\'s record stops counting');
});
