import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { checkMemcachedKey } from '../../src/cache/index.js';
import { MemcachedCache } from '../../src/cache/memcached/memcached-cache.js';
import { isShardKitError } from '../../src/errors.js';
import { runCacheSuite } from '../conformance/cache-suite.js';
import { LocalCacheServer } from './cache-servers.js';
import { runServerCacheCases } from './server-cache-cases.js';

let server: LocalCacheServer;
before(async () => {
  server = await LocalCacheServer.start('memcached');
});
after(async () => {
  await server?.destroy();
});

runCacheSuite({ name: 'memcached', factory: () => ({ open: () => new MemcachedCache({ servers: [server.address] }) }), supports: { shared: true } });

test('memcached keys: over 250 bytes, whitespace or control characters are INVALID_ARGUMENT with a clear message', async () => {
  assert.equal(checkMemcachedKey('o:' + '1'.repeat(248)), 'o:' + '1'.repeat(248));
  const cache = new MemcachedCache({ servers: [server.address] });
  try {
    const cases: Array<[string, RegExp]> = [
      ['o:' + '1'.repeat(249), /251 bytes; the limit is 250/],
      ['é'.repeat(126), /252 bytes/],
      ['a b', /whitespace or a control character/],
      ['a\nb', /whitespace or a control character/],
      ['a\u0001b', /whitespace or a control character/],
      ['', /non-empty/],
    ];
    for (const [key, message] of cases) {
      for (const call of [() => cache.getMany([key]), () => cache.setMany([[key, 'v']], 60), () => cache.deleteMany([key])]) {
        await assert.rejects(call(), (err) => isShardKitError(err, 'INVALID_ARGUMENT') && message.test(err.message));
      }
    }
  } finally {
    await cache.close();
  }
});

runServerCacheCases({ kind: 'memcached', client: (address) => new MemcachedCache({ servers: [address] }), configCache: (address) => ({ kind: 'memcached', servers: [address], ttlSeconds: 60, keyPrefix: 'open:' }), server: () => server });
