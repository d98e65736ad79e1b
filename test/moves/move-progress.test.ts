/**
 * A move's progress beside the map (#30, src/moves/move-progress.ts): one record per move that
 * services do not watch, the writer is throttled, and a real SQLite move makes a watching
 * service adopt its phase steps only, never a map version for progress.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { SqliteBackend } from '../../src/storage/sqlite/sqlite-backend.js';
import { MemoryTopologyBacking, MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap, type MoveProgress, type ShardMapJson } from '../../src/topology/shard-map.js';
import { FileTopologyStore } from '../../src/topology/file/file-topology-store.js';
import { withMoveProgress } from '../../src/topology/move-progress-records.js';
import type { ShardKitError } from '../../src/errors.js';
import type { TopologyStore } from '../../src/topology/topology-store.js';
import { addMove, advanceMove, freezeMove } from '../../src/moves/move-state.js';
import { MoveProgressWriter } from '../../src/moves/move-progress.js';
import { runMove } from '../../src/moves/move-runner.js';
import { createSqliteMoveEngine } from '../../src/moves/sqlite/index.js';
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

test('progress records: one per move beside the map, merged into the readers\' view, a bad record is INVALID_CONFIG naming it', async () => {
  const root = mkdtempSync(join(tmpdir(), 'shardkit-progress-records-'));
  const file = new FileTopologyStore({ path: join(root, 'topology.json') });
  try {
    const map = fencedMap();
    await file.write(map, 0);
    await file.progress.put('move-p', { phase: 'fenced', shardsDone: 2, shardsTotal: 4, at: 5000 });
    // The map's file is untouched by a progress write: same version, no progress inside.
    const stored = (await file.read())!;
    assert.equal(stored.version, 1);
    assert.equal(stored.move('move-p')!.progress, undefined);
    const records = await file.progress.readAll();
    assert.deepEqual([...records], [['move-p', { phase: 'fenced', shardsDone: 2, shardsTotal: 4, at: 5000 }]]);
    // Readers merge records into moves that exist; a record of a move that is gone is left out.
    await file.progress.put('move-gone', { phase: 'started', at: 1 });
    const view = withMoveProgress(stored.toJSON(), await file.progress.readAll());
    assert.deepEqual(view.moves!.map((m) => [m.id, m.progress?.shardsDone]), [['move-p', 2]]);
    assert.deepEqual(withoutProgress(view), withoutProgress(stored.toJSON()));
    // A record that does not parse: a clear error naming the record, and it is left as it is.
    writeFileSync(join(root, 'topology.json.progress', 'move-bad.json'), '{"phase":"fenced","shardsDone":-1,"at":1}');
    await assert.rejects(file.progress.readAll(), (err: ShardKitError) => err.code === 'INVALID_CONFIG' && /move-bad\.json/.test(err.message) && /shardsDone/.test(err.message));
    assert.equal(readFileSync(join(root, 'topology.json.progress', 'move-bad.json'), 'utf8'), '{"phase":"fenced","shardsDone":-1,"at":1}');
    // Nonsense is refused on the way in too, and nothing is written.
    await assert.rejects(file.progress.put('move-p', { phase: 'fenced', lag: -1, at: 1 }), /INVALID_CONFIG|lag/);
    await assert.rejects(file.progress.put('../escape', { phase: 'fenced', at: 1 }), (err: ShardKitError) => err.code === 'INVALID_ARGUMENT');
    await file.progress.remove('move-bad');
    await file.progress.remove('move-never');
    assert.equal((await file.progress.readAll()).get('move-p')!.shardsDone, 2);
  } finally {
    await file.close();
    rmSync(root, { recursive: true, force: true });
  }
});

/** A store that keeps every map and every progress record written to it. */
function recording(inner: MemoryTopologyStore): TopologyStore & { writes: ShardMapJson[]; puts: Array<[string, MoveProgress]> } {
  const writes: ShardMapJson[] = [];
  const puts: Array<[string, MoveProgress]> = [];
  return {
    writes,
    puts,
    read: () => inner.read(),
    write: async (next, expected) => {
      const out = await inner.write(next, expected);
      writes.push(out.toJSON());
      return out;
    },
    watch: (l) => inner.watch(l),
    close: () => inner.close(),
    progress: {
      readAll: () => inner.progress.readAll(),
      put: async (id, p) => {
        puts.push([id, { ...p }]);
        await inner.progress.put(id, p);
      },
      remove: (id) => inner.progress.remove(id),
    },
  };
}

test('the writer writes at once, then holds later numbers for the throttle; close drops them', async () => {
  const backing = new MemoryTopologyBacking(fencedMap());
  const store = recording(new MemoryTopologyStore({ backing }));
  const writer = new MoveProgressWriter(store, 3_600_000);
  writer.track('move-p', 'fenced');
  for (let i = 1; i <= 50; i++) writer.note({ shardsDone: i, shardsTotal: 50 });
  await writer.close();
  assert.equal(store.puts.length, 1, 'one write within the throttle interval');
  assert.deepEqual(store.puts.map(([id, p]) => [id, { ...p, at: 0 }]), [['move-p', { phase: 'fenced', shardsDone: 1, shardsTotal: 50, at: 0 }]]);
  assert.equal(store.writes.length, 0, 'progress never writes the map');
  // The move is still fenced: its record stays for the people watching.
  assert.equal((await store.progress!.readAll()).get('move-p')!.shardsDone, 1);
  await store.close();
});

test('a running SQLite move records progress beside the map: a watching service sees only its phase steps, no map version for progress', async () => {
  const root = mkdtempSync(join(tmpdir(), 'shardkit-move-progress-'));
  const backing = new MemoryTopologyBacking(ShardMap.fromJSON(testConfig.shardMap));
  const backend = new SqliteBackend({ root, schema: testSchema, maxOpenShards: 16 });
  const kit = new ShardKit({ backend, schema: testSchema, topology: new MemoryTopologyStore({ backing }) });
  const store = recording(new MemoryTopologyStore({ backing }));
  // A service's view: every map version its store delivers (the memory store delivers each one).
  const service = new MemoryTopologyStore({ backing });
  const seen: ShardMap[] = [];
  service.watch((m) => seen.push(m));
  try {
    await kit.ready();
    for (let s = 0; s <= 5; s++) await kit.objects.create('pin', { s }, { shard: s });
    const engine = createSqliteMoveEngine({ shardPath: (host, shard) => backend.shardPath({ host, shard, fleet: 'objects' }) });
    const result = await runMove({ store, engine, start: { span: { first: 0, last: 5 }, target: TARGET, id: 'move-sq' } });
    assert.equal(result.outcome, 'switched');
    // The service adopted exactly the runner's phase steps (add, copy, freeze, fence, switch): 0 others.
    assert.deepEqual(seen.map((m) => m.move('move-sq')?.phase), ['started', 'copied', 'frozen', 'fenced', 'switched']);
    assert.ok(seen.every((m) => m.move('move-sq')?.progress === undefined), 'no map version carries progress');
    // Progress was written (to the records), for the phases that report it.
    assert.ok(store.puts.some(([id, p]) => id === 'move-sq' && p.phase === 'fenced' && p.shardsTotal === 6 && (p.shardsDone ?? 0) >= 1), JSON.stringify(store.puts));
    // The move ended: its progress record is gone with it.
    assert.equal((await store.progress!.readAll()).has('move-sq'), false);
    const map = await kit.shardMap();
    assert.equal(map.locate(0).master, TARGET.master);
  } finally {
    await service.close();
    await kit.close();
    await backend.close();
    await store.close();
    rmSync(root, { recursive: true, force: true });
  }
});
