import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../src/config/config.js';
import { isShardKitError } from '../../src/errors.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap } from '../../src/topology/shard-map.js';
import { makeKit, testConfig } from './kit-fixture.js';

test('ShardKit seeds an empty topology store, then follows its updates', async () => {
  const topology = new MemoryTopologyStore();
  const f = makeKit({ topology });
  try {
    await f.kit.ready();
    const stored = await topology.read();
    assert.equal(stored?.version, 1);
    const board = await f.kit.objects.create('board', { v: 1 }, { shard: 3 });
    assert.ok(existsSync(join(f.root, 'MySQL001A', 'db00003.sqlite')));
    // Move shards 0..3 to a new host (the files would be copied first; here the shard is new).
    const json = testConfig.shardMap;
    const moved = ShardMap.fromJSON({
      ...json,
      ranges: [{ range: [0, 3], master: 'MySQL009A', open: true }, { ...json.ranges[0]!, range: [4, 7] }, json.ranges[1]!],
    });
    const seen = new Promise((resolve) => f.kit.events.once('topology', resolve));
    await topology.write(moved, 1);
    await seen;
    assert.equal((await f.kit.shardMap()).version, 2);
    // The old file is not on the new host: the board is not found there, new writes go there.
    await assert.rejects(f.kit.objects.get(board.id), (e) => isShardKitError(e, 'NOT_FOUND'));
    await f.kit.objects.create('pin', {}, { near: board.id });
    assert.ok(existsSync(join(f.root, 'MySQL009A', 'db00003.sqlite')));
  } finally {
    await f.cleanup();
  }
});

test('ShardKit.open builds everything from a config file and a data dir', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-open-'));
  try {
    const configPath = join(dir, 'shardkit.json');
    writeFileSync(configPath, JSON.stringify(defaultConfig({ shards: 16, pairs: 2 })));
    const kit = await ShardKit.open({ configPath, dataDir: dir });
    const pin = await kit.objects.create('pin', { a: 1 }, { shard: 9 });
    await kit.close();
    assert.ok(existsSync(join(dir, 'hosts', 'MySQL002A', 'db00009.sqlite')));
    assert.ok(existsSync(join(dir, 'topology.json')));
    const again = await ShardKit.open({ configPath });
    assert.deepEqual((await again.objects.get(pin.id)).data, { a: 1 });
    await again.close();
    await assert.rejects(again.objects.get(pin.id), (e) => isShardKitError(e, 'CLOSED'));
    await assert.rejects(ShardKit.open({ config: { nonsense: true } as never, dataDir: dir }), (e) => isShardKitError(e, 'INVALID_CONFIG'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
