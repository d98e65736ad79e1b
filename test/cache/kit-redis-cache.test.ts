import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisCache } from '../../src/cache/redis/redis-cache.js';
import { defaultConfig } from '../../src/config/config.js';
import { ShardKit } from '../../src/store/shard-kit.js';
import { LocalCacheServer } from './cache-servers.js';
import { runKitCacheCases } from './kit-cache-cases.js';

let server: LocalCacheServer;
before(async () => {
  server = await LocalCacheServer.start('redis');
});
after(async () => {
  await server?.destroy();
});

runKitCacheCases({
  name: 'redis',
  open: () => new RedisCache({ url: server.address }),
  breakCache: () => server.stop(),
  repairCache: () => server.restart(),
});

test('ShardKit.open with a redis cache in the config reads through it and closes it', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'shardkit-open-redis-'));
  const cache = { kind: 'redis' as const, url: server.address, ttlSeconds: 60, keyPrefix: 'open:' };
  const kit = await ShardKit.open({ config: { ...defaultConfig({ shards: 8, pairs: 1 }), cache }, dataDir });
  try {
    const pin = await kit.objects.create('pin', { v: 1 });
    await kit.objects.get(pin.id);
    await kit.objects.get(pin.id);
    assert.deepEqual(kit.cacheStats(), { hits: 1, misses: 1, errors: 0, fills: 1, skippedFills: 0, invalidations: 0 });
    // The entry is in the server under the configured prefix, as <createdAt ms>\n<data>.
    const direct = new RedisCache({ url: server.address });
    try {
      assert.deepEqual(await direct.getMany([`open:o:${pin.id}`]), [`${pin.createdAt.getTime()}\n{"v":1}`]);
    } finally {
      await direct.close();
    }
  } finally {
    await kit.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
