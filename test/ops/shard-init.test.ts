import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, parseConfig, resolveSchema } from '../../src/config/config.js';
import { initShards, type ShardInitProgress } from '../../src/ops/shard-init.js';
import { SqliteBackend } from '../../src/storage/sqlite/index.js';
import { ShardMap } from '../../src/topology/shard-map.js';

// initShards is backend-agnostic; the embedded engine makes its bookkeeping quick to check.
test('initShards creates every object and mod shard on its master, then a second run creates nothing', async () => {
  const root = mkdtempSync(join(tmpdir(), 'shardkit-init-'));
  const config = parseConfig(defaultConfig({ shards: 16, pairs: 2 }));
  const schema = resolveSchema(config);
  const map = ShardMap.fromJSON({ ...config.shardMap, modShards: { count: 8, ranges: [{ range: [0, 3], master: 'MySQL001A', slave: 'MySQL001B' }, { range: [4, 7], master: 'MySQL002A', slave: 'MySQL002B' }] } });
  const backend = new SqliteBackend({ root, schema });
  try {
    const seen: ShardInitProgress[] = [];
    const first = await initShards(backend, map, { concurrencyPerHost: 3, onProgress: (p) => seen.push(p) });
    assert.equal(first.total, 24);
    assert.equal(first.created, 24);
    assert.deepEqual(first.hosts, { MySQL001A: { objects: 8, lookups: 4 }, MySQL002A: { objects: 8, lookups: 4 } });
    assert.deepEqual(await backend.listShards('MySQL001A', 'objects'), [0, 1, 2, 3, 4, 5, 6, 7]);
    assert.deepEqual(await backend.listShards('MySQL002A', 'lookups'), [4, 5, 6, 7]);
    assert.deepEqual(await backend.listShards('MySQL001B', 'objects'), [], 'slaves are not written to');
    assert.deepEqual(seen.at(-1), { done: 24, total: 24, created: 24 });
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]!.done >= seen[i - 1]!.done, 'progress never goes back');

    const second = await initShards(backend, map);
    assert.equal(second.created, 0);
    assert.equal(second.total, 24);
  } finally {
    await backend.close();
    rmSync(root, { recursive: true, force: true });
  }
});
