import { after, before } from 'node:test';
import { RedisCache } from '../../src/cache/redis/redis-cache.js';
import { runCacheSuite } from '../conformance/cache-suite.js';
import { LocalCacheServer } from './cache-servers.js';
import { runServerCacheCases } from './server-cache-cases.js';

let server: LocalCacheServer;
before(async () => {
  server = await LocalCacheServer.start('redis');
});
after(async () => {
  await server?.destroy();
});

runCacheSuite({ name: 'redis', factory: () => ({ open: () => new RedisCache({ url: server.address }) }), supports: { shared: true } });

runServerCacheCases({ kind: 'redis', client: (address) => new RedisCache({ url: address }), configCache: (address) => ({ kind: 'redis', url: address, ttlSeconds: 60, keyPrefix: 'open:' }), server: () => server });
