import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryCache } from '../../src/cache/index.js';
import { runCacheSuite } from '../conformance/cache-suite.js';

runCacheSuite({ name: 'memory', factory: () => ({ open: () => new MemoryCache() }) });

test('memory cache: bounded by maxEntries, least recently used dropped first', async () => {
  const cache = new MemoryCache({ maxEntries: 3 });
  await cache.setMany([['a', '1'], ['b', '2'], ['c', '3']], 60);
  await cache.getMany(['a']);
  await cache.setMany([['d', '4']], 60);
  assert.deepEqual(await cache.getMany(['a', 'b', 'c', 'd']), ['1', undefined, '3', '4']);
  await cache.close();
});
