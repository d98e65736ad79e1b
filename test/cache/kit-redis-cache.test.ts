import { after, before } from 'node:test';
import { RedisCache } from '../../src/cache/redis/redis-cache.js';
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
