import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryTopologyBacking, MemoryTopologyStore, ShardMap, defaultShardMapJson } from '../../src/index.js';
import { runTopologySuite } from '../conformance/topology-suite.js';

runTopologySuite({
  name: 'memory',
  factory: () => {
    const backing = new MemoryTopologyBacking();
    return { open: () => new MemoryTopologyStore({ backing }) };
  },
});

test('memory store: separate backings are isolated', async () => {
  const a = new MemoryTopologyStore();
  const b = new MemoryTopologyStore();
  await a.write(ShardMap.fromJSON(defaultShardMapJson()), 0);
  assert.equal(await b.read(), undefined);
});

test('memory store: a backing can start from an initial map (version at least 1)', async () => {
  const backing = new MemoryTopologyBacking(ShardMap.fromJSON({ ...defaultShardMapJson(), version: 0 }));
  const store = new MemoryTopologyStore({ backing });
  const map = await store.read();
  assert.equal(map?.version, 1);
  assert.equal(map?.shardCount, 4096);
  assert.equal((await store.write(map!, 1)).version, 2);
});
