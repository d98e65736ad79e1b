import { after, before } from 'node:test';
import { MemcachedCache } from '../../src/cache/memcached/memcached-cache.js';
import { LocalCacheServer } from './cache-servers.js';
import { runKitCacheCases } from './kit-cache-cases.js';

let server: LocalCacheServer;
before(async () => {
  server = await LocalCacheServer.start('memcached');
});
after(async () => {
  await server?.destroy();
});

runKitCacheCases({
  name: 'memcached',
  open: () => new MemcachedCache({ servers: [server.address] }),
  breakCache: () => server.stop(),
  repairCache: () => server.restart(),
});
