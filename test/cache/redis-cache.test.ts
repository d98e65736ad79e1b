import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { RedisCache } from '../../src/cache/redis/redis-cache.js';
import { isShardKitError } from '../../src/errors.js';
import { runCacheSuite } from '../conformance/cache-suite.js';
import { LocalCacheServer } from './cache-servers.js';

let server: LocalCacheServer;
before(async () => {
  server = await LocalCacheServer.start('redis');
});
after(async () => {
  await server?.destroy();
});

runCacheSuite({ name: 'redis', factory: () => ({ open: () => new RedisCache({ url: server.address }) }), supports: { shared: true } });

test('redis cache: a stopped server fails calls (no hang), and the client recovers when it is back', async () => {
  const own = await LocalCacheServer.start('redis');
  const cache = new RedisCache({ url: own.address });
  try {
    await cache.setMany([['k', 'v']], 60);
    await own.stop();
    for (const call of [() => cache.getMany(['k']), () => cache.setMany([['k', 'w']], 60), () => cache.deleteMany(['k'])]) {
      await assert.rejects(call(), (err) => err instanceof Error && !isShardKitError(err, 'CLOSED'));
    }
    await own.restart();
    // Reconnecting takes a retry interval: poll (bounded) for the first success.
    let got: (string | undefined)[] | undefined;
    for (let i = 0; i < 100 && got === undefined; i++) {
      got = await cache.getMany(['k']).catch(() => undefined);
      if (got === undefined) await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(got, [undefined], 'a restarted redis (no persistence) is empty and reachable again');
  } finally {
    await cache.close();
    await own.destroy();
  }
});
