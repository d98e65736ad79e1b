/**
 * A move's progress in its record (src/moves/move-progress.ts): the transition touches nothing
 * but `progress` and only in the phase it is about, the writer is throttled, and a real SQLite
 * move writes progress without any progress write changing what the cutover checks.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { SqliteBackend } from '../../src/storage/sqlite/sqlite-backend.js';
import { MemoryTopologyBacking, MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap, type ShardMapJson } from '../../src/topology/shard-map.js';
import type { TopologyStore } from '../../src/topology/topology-store.js';
import { addMove, advanceMove, casMoveState, freezeMove, switchMove } from '../../src/moves/move-state.js';
import { MoveProgressWriter, recordProgress } from '../../src/moves/move-progress.js';
import { runMove } from '../../src/moves/move-runner.js';
import { SqliteMoveEngine } from '../../src/moves/sqlite/sqlite-move-engine.js';
import { testConfig, testSchema } from '../kit/kit-fixture.js';

const TARGET = { master: 'MySQL002A', slave: 'MySQL002B' };

function withoutProgress(json: ShardMapJson): ShardMapJson {
  return { ...json, version: 0, ...(json.moves ? { moves: json.moves.map(({ progress: _p, ...m }) => m) } : {}) };
}

function fencedMap(): ShardMap {
  let map = ShardMap.fromJSON(testConfig.shardMap);
  const step = (json: ShardMapJson) => (map = ShardMap.fromJSON({ ...json, version: map.version + 1 }));
  step(addMove(map, { id: 'move-p', span: { first: 0, last: 3 }, target: TARGET, now: 1000 }));
  step(advanceMove(map, 'move-p', ['started'], 'copied', undefined, 1001));
  step(freezeMove(map, 'move-p', 1002));
  step(advanceMove(map, 'move-p', ['frozen'], 'fenced', undefined, 1003));
  return map;
}

test('recordProgress sets progress only in its phase and changes nothing the cutover checks', () => {
  const map = fencedMap();
  const json = recordProgress(map, 'move-p', 'fenced', { shardsDone: 2, shardsTotal: 4, lag: 0 }, 5000);
  const after = ShardMap.fromJSON(json);
  assert.deepEqual(after.move('move-p')!.progress, { phase: 'fenced', shardsDone: 2, shardsTotal: 4, lag: 0, at: 5000 });
  // Everything else is as it was: ranges, the freeze, the phase, updatedAt.
  assert.deepEqual(withoutProgress(after.toJSON()), withoutProgress(map.toJSON()));
  // The cutover gives the same map with or without the progress write (apart from progress).
  assert.deepEqual(withoutProgress(switchMove(after, 'move-p', 9)), withoutProgress(switchMove(map, 'move-p', 9)));
  // A later update of the same phase merges; another phase's numbers start afresh.
  const merged = ShardMap.fromJSON(recordProgress(after, 'move-p', 'fenced', { shardsDone: 3 }, 6000)).move('move-p')!.progress;
  assert.deepEqual(merged, { phase: 'fenced', shardsDone: 3, shardsTotal: 4, lag: 0, at: 6000 });
  // A move that is in another phase (or gone) is left exactly as it is: no write at all.
  assert.deepEqual(recordProgress(map, 'move-p', 'copied', { shardsDone: 1 }), map.toJSON());
  assert.deepEqual(recordProgress(map, 'move-other', 'fenced', { shardsDone: 1 }), map.toJSON());
  // And the map schema refuses nonsense progress.
  const bad = map.toJSON();
  bad.moves![0] = { ...bad.moves![0]!, progress: { phase: 'fenced', shardsDone: -1, at: 1 } };
  assert.throws(() => ShardMap.fromJSON(bad), /invalid shard map/);
});

/** A store that keeps every map written to it. */
function recording(inner: TopologyStore): TopologyStore & { writes: ShardMapJson[] } {
  const writes: ShardMapJson[] = [];
  return {
    writes,
    read: () => inner.read(),
    write: async (next, expected) => {
      const out = await inner.write(next, expected);
      writes.push(out.toJSON());
      return out;
    },
    watch: (l) => inner.watch(l),
    close: () => inner.close(),
  };
}

test('the writer writes at once, then holds later numbers for the throttle; close drops them', async () => {
  const backing = new MemoryTopologyBacking(fencedMap());
  const store = recording(new MemoryTopologyStore({ backing }));
  const writer = new MoveProgressWriter(store, undefined, 3_600_000);
  writer.track('move-p', 'fenced');
  for (let i = 1; i <= 50; i++) writer.note({ shardsDone: i, shardsTotal: 50 });
  await writer.close();
  assert.equal(store.writes.length, 1, 'one write within the throttle interval');
  assert.deepEqual(store.writes[0]!.moves![0]!.progress && { ...store.writes[0]!.moves![0]!.progress, at: 0 }, { phase: 'fenced', shardsDone: 1, shardsTotal: 50, at: 0 });
  await store.close();
});

test('a SQLite move records progress in the map, and every write is either a phase step or a progress-only write', async () => {
  const root = mkdtempSync(join(tmpdir(), 'shardkit-move-progress-'));
  const backing = new MemoryTopologyBacking(ShardMap.fromJSON(testConfig.shardMap));
  const backend = new SqliteBackend({ root, schema: testSchema, maxOpenShards: 16 });
  const kit = new ShardKit({ backend, schema: testSchema, topology: new MemoryTopologyStore({ backing }) });
  const store = recording(new MemoryTopologyStore({ backing }));
  try {
    await kit.ready();
    for (let s = 0; s <= 5; s++) await kit.objects.create('pin', { s }, { shard: s });
    const engine = new SqliteMoveEngine({ shardPath: (host, shard) => backend.shardPath({ host, shard, fleet: 'objects' }) });
    const result = await runMove({ store, engine, start: { span: { first: 0, last: 5 }, target: TARGET, id: 'move-sq' } });
    assert.equal(result.outcome, 'switched');
    const progress = store.writes.map((w) => w.moves?.find((m) => m.id === 'move-sq')?.progress).filter((p) => p !== undefined);
    assert.ok(progress.some((p) => p.phase === 'fenced' && p.shardsTotal === 6 && (p.shardsDone ?? 0) >= 1), JSON.stringify(progress));
    // Each write after the first changed either the phase/ranges (the runner's steps) or only progress.
    for (let i = 1; i < store.writes.length; i++) {
      const before = store.writes[i - 1]!;
      const after = store.writes[i]!;
      const phaseBefore = before.moves?.find((m) => m.id === 'move-sq')?.phase;
      const phaseAfter = after.moves?.find((m) => m.id === 'move-sq')?.phase;
      if (phaseBefore === phaseAfter) assert.deepEqual(withoutProgress(after), withoutProgress(before), `write ${i} in phase ${phaseAfter} changed more than progress`);
    }
    // The kit serves the moved shards from the target.
    const map = await kit.shardMap();
    assert.equal(map.locate(0).master, TARGET.master);
  } finally {
    await kit.close();
    await backend.close();
    await store.close();
    rmSync(root, { recursive: true, force: true });
  }
});
