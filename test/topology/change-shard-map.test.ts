import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardMap, ShardKitError, MemoryTopologyStore, defaultShardMapJson, type TopologyStore } from '../../src/index.js';
import { changeShardMap } from '../../src/topology/change-shard-map.js';
import { moveShards, promoteSlave, setOpen } from '../../src/topology/map-edits.js';

const seed = ShardMap.fromJSON(defaultShardMapJson({ shards: 16, pairs: 2, modShards: 8, modPairs: 2 }));
const hosts = [...seed.hostNames(), 'MySQL009A', 'MySQL009B'];

/**
 * A store whose version moves under the caller: the first `races` reads are followed, before
 * the caller can write, by another operator closing shard 15.
 */
class RacingStore implements TopologyStore {
  rivalWrites = 0;
  constructor(readonly inner: MemoryTopologyStore, private races: number) {}
  async read(): Promise<ShardMap | undefined> {
    const map = await this.inner.read();
    if (map !== undefined && this.races > 0) {
      this.races--;
      this.rivalWrites++;
      await this.inner.write(ShardMap.fromJSON(setOpen(map, { first: 15 - this.rivalWrites, last: 15 }, false)), map.version);
    }
    return map;
  }
  write(next: ShardMap, expectedVersion: number): Promise<ShardMap> {
    return this.inner.write(next, expectedVersion);
  }
  watch(listener: (map: ShardMap) => void): () => void {
    return this.inner.watch(listener);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

async function seeded(): Promise<MemoryTopologyStore> {
  const store = new MemoryTopologyStore();
  await store.write(seed, 0);
  return store;
}

test('changeShardMap writes the next map with compare-and-set and reports the changes', async () => {
  const store = await seeded();
  const result = await changeShardMap(store, (m) => promoteSlave(m, 'MySQL001A'), { hosts });
  assert.equal(result.written, true);
  assert.equal(result.attempts, 1);
  assert.equal(result.before.version, 1);
  assert.equal(result.after.version, 2);
  assert.deepEqual(result.changes.map((c) => [c.fleet, c.range]), [['objects', [0, 7]]]);
  assert.equal((await store.read())!.locate(0).master, 'MySQL001B');
});

test('changeShardMap on VERSION_CONFLICT re-reads and redoes the change on the other writer\'s map', async () => {
  const store = new RacingStore(await seeded(), 2);
  const result = await changeShardMap(store, (m) => moveShards(m, { first: 4, last: 7 }, { master: 'MySQL009A', slave: 'MySQL009B' }), { hosts });
  assert.equal(result.attempts, 3);
  assert.equal(store.rivalWrites, 2);
  assert.equal(result.after.version, 4);
  const live = (await store.inner.read())!;
  assert.equal(live.version, 4);
  // Both changes survive: ours, and the rival's closing of shards 13..15.
  assert.equal(live.locate(5).master, 'MySQL009A');
  assert.equal(live.locate(3).master, 'MySQL001A');
  assert.equal(live.locate(13).open, false);
  assert.equal(live.locate(12).open, true);
});

test('changeShardMap gives up with VERSION_CONFLICT after the bounded attempts; its change is not written', async () => {
  const store = new RacingStore(await seeded(), 10);
  await assert.rejects(
    changeShardMap(store, (m) => promoteSlave(m, 'MySQL002A'), { attempts: 3 }),
    (err: unknown) => err instanceof ShardKitError && err.code === 'VERSION_CONFLICT' && /gave up after 3 attempts/.test(err.message),
  );
  assert.equal((await store.inner.read())!.locate(8).master, 'MySQL002A');
});

test('changeShardMap: dry run and no-op write nothing; an invalid result or an undeclared host is INVALID_CONFIG', async () => {
  const store = await seeded();
  const dry = await changeShardMap(store, (m) => promoteSlave(m, 'MySQL001A'), { dryRun: true });
  assert.equal(dry.written, false);
  assert.equal(dry.after.locate(0).master, 'MySQL001B');
  const same = await changeShardMap(store, (m) => setOpen(m, { first: 0, last: 3 }, true));
  assert.equal(same.written, false);
  assert.deepEqual(same.changes, []);
  await assert.rejects(
    changeShardMap(store, (m) => moveShards(m, { first: 0, last: 0 }, { master: 'stranger' }), { hosts }),
    (err: unknown) => err instanceof ShardKitError && err.code === 'INVALID_CONFIG' && /stranger .*not declared/.test(err.message),
  );
  await assert.rejects(
    changeShardMap(store, (m) => ({ ...m.toJSON(), ranges: [{ range: [1, 15], master: 'x' }] })),
    (err: unknown) => err instanceof ShardKitError && err.code === 'INVALID_CONFIG' && /0\.\.0 are not covered/.test(err.message),
  );
  assert.equal((await store.read())!.version, 1);
});

test('changeShardMap on an empty store starts from the seed and writes version 1', async () => {
  const store = new MemoryTopologyStore();
  const result = await changeShardMap(store, (m) => setOpen(m, { first: 0, last: 7 }, false), { seed });
  assert.equal(result.fromSeed, true);
  assert.equal(result.after.version, 1);
  assert.equal((await store.read())!.locate(0).open, false);
  await assert.rejects(changeShardMap(new MemoryTopologyStore(), (m) => m.toJSON()), /holds no shard map/);
});
