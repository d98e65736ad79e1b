/**
 * The map edits of `failover --emergency` (promoteSlave, through casPromote on MariaDB) and of
 * `pair rebuild-slave` (setSlave), on MariaDB and PostgreSQL alike, change one pair's ranges and
 * must carry everything else in the map as it was: a recorded move of another pair, running or
 * switched and waiting for `shards drop-moved`, a freeze it holds, the read-only mark. A lost
 * record strands its mover (UNKNOWN_MOVE) and its copy, and a lost switched record leaves the
 * old copy that `drop-moved` can no longer find.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ShardKitConfig } from '../../src/config/config.js';
import { casPromote } from '../../src/ops/failover/emergency-failover.js';
import type { FleetContext } from '../../src/ops/failover/failover-context.js';
import { freezeForFailover } from '../../src/ops/failover/failover-freeze.js';
import { setSlave } from '../../src/ops/failover/set-slave.js';
import { MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { promoteSlave } from '../../src/topology/map-edits.js';
import { ShardMap, type MoveRecord, type ShardMapJson } from '../../src/topology/shard-map.js';

const HOSTS = ['a1', 'a2', 'a3', 'b1', 'b2', 'c1', 'c2', 'd1', 'd2'];

/**
 * Pair a (a1/a2) is the one failed over or rebuilt. Pair b moves 8..11 to pair c (frozen, mid
 * cutover; or still copying when `frozen` is false) and 12..13 to pair d (started, copying);
 * 16..23 switched from b to c earlier and its copy on b is not dropped yet.
 */
function fleetJson(frozen = true): ShardMapJson {
  const freeze = { id: 'move-8-11-cut', source: { master: 'b1', slave: 'b2' }, target: { master: 'c1', slave: 'c2' }, frozenAt: 5_000, holdMs: 400 };
  const moves: MoveRecord[] = [
    { id: 'move-8-11-cut', kind: 'move', range: [8, 11], source: { master: 'b1', slave: 'b2' }, target: { master: 'c1', slave: 'c2' }, phase: frozen ? 'frozen' : 'copied', holdMs: 400, startedAt: 1_000, updatedAt: 5_000, detail: { binlogPos: '2-2-17' } },
    { id: 'move-12-13-copy', kind: 'move', range: [12, 13], source: { master: 'b1', slave: 'b2' }, target: { master: 'd1', slave: 'd2' }, phase: 'started', holdMs: 400, startedAt: 2_000, updatedAt: 2_000 },
    { id: 'move-16-23-old', kind: 'move', range: [16, 23], source: { master: 'b1', slave: 'b2' }, target: { master: 'c1', slave: 'c2' }, phase: 'switched', holdMs: 400, startedAt: 100, updatedAt: 900, detail: { tables: 3 } },
  ];
  return {
    version: 9,
    ranges: [
      { range: [0, 7], master: 'a1', slave: 'a2', open: true },
      ...(frozen
        ? [{ range: [8, 11] as [number, number], master: 'b1', slave: 'b2', open: true, frozen: freeze }, { range: [12, 15] as [number, number], master: 'b1', slave: 'b2', open: true }]
        : [{ range: [8, 15] as [number, number], master: 'b1', slave: 'b2', open: true }]),
      { range: [16, 23], master: 'c1', slave: 'c2', open: false },
    ],
    modShards: { count: 4, ranges: [{ range: [0, 1], master: 'a1', slave: 'a2' }, { range: [2, 3], master: 'b1', slave: 'b2' }] },
    moves,
    readOnly: { reason: 'migrated to the etcd store', since: 7_000 },
  };
}

/** What an edit of pair a must leave as it was: everything but the ranges of a. */
function otherPairs(json: ShardMapJson): unknown {
  return {
    moves: json.moves,
    readOnly: json.readOnly,
    ranges: json.ranges.filter((r) => !r.master.startsWith('a')),
    modShards: json.modShards.ranges.filter((r) => !r.master.startsWith('a')),
  };
}

test('failover --emergency edit (promoteSlave): every recorded move of another pair, started, frozen or switched, its freeze and the read-only mark stay as they were', () => {
  for (const frozen of [false, true]) {
    const before = fleetJson(frozen);
    for (const dropOldMaster of [false, true]) {
      const after = ShardMap.fromJSON(promoteSlave(ShardMap.fromJSON(before), 'a1', { dropOldMaster })).toJSON();
      assert.deepEqual(otherPairs(after), otherPairs(before), `frozen ${frozen}, dropOldMaster ${dropOldMaster}`);
      assert.deepEqual(after.ranges[0], { range: [0, 7], master: 'a2', ...(dropOldMaster ? {} : { slave: 'a1' }), open: true });
      assert.equal(after.modShards.ranges[0]!.master, 'a2');
    }
  }
});

test('pair rebuild-slave edit (setSlave): every recorded move of another pair, its freeze and the read-only mark stay as they were', () => {
  for (const frozen of [false, true]) {
    const before = fleetJson(frozen);
    const after = ShardMap.fromJSON(setSlave(ShardMap.fromJSON(before), 'a1', 'a3')).toJSON();
    assert.deepEqual(otherPairs(after), otherPairs(before), `frozen ${frozen}`);
    assert.deepEqual(after.ranges[0], { range: [0, 7], master: 'a1', slave: 'a3', open: true });
    assert.deepEqual(after.modShards.ranges[0], { range: [0, 1], master: 'a1', slave: 'a3' });
  }
});

test('a failover or rebuild of a move\'s own target pair leaves its record as recorded (as a planned failover does); a failover of its source is refused', () => {
  const before = ShardMap.fromJSON(fleetJson());
  // c1 masters 16..23 and is the target of the frozen move: its record keeps naming c1/c2,
  // whose freeze and switch then refuse (test/moves/move-state.test.ts).
  assert.deepEqual(ShardMap.fromJSON(promoteSlave(before, 'c1')).toJSON().moves, fleetJson().moves);
  assert.deepEqual(ShardMap.fromJSON(setSlave(before, 'c1', 'a3')).toJSON().moves, fleetJson().moves);
  assert.throws(() => promoteSlave(before, 'b1'), { code: 'SHARD_FROZEN' });
});

test('the emergency failover\'s compare-and-set (casPromote) keeps the other moves, also when it lifts the freeze a crashed planned failover of the same master left', async () => {
  const seeded = ShardMap.fromJSON(fleetJson());
  // A planned failover of a1 that crashed after its freeze: the emergency failover lifts it in its own edit.
  const crashed = ShardMap.fromJSON(freezeForFailover(seeded, 'a1', 'a2', { holdMs: 2000, now: 8_000 }));
  assert.equal(crashed.moves().length, 4);
  for (const start of [seeded, crashed]) {
    const store = new MemoryTopologyStore();
    await store.write(start, 0);
    const fleet = { config: { shardMap: fleetJson(), hosts: Object.fromEntries(HOSTS.map((h, i) => [h, { host: '127.0.0.1', port: 3306 + i }])) } as unknown as ShardKitConfig, store } as FleetContext;
    await casPromote(fleet, 'a1');
    const after = (await store.read())!.toJSON();
    assert.deepEqual(otherPairs(after), otherPairs(fleetJson()));
    assert.equal(after.ranges[0]!.master, 'a2');
  }
});
