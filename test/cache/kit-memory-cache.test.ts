import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryCache } from '../../src/cache/index.js';
import { makeKit } from '../kit/kit-fixture.js';
import { runKitCacheCases } from './kit-cache-cases.js';

runKitCacheCases({
  name: 'memory',
  open: () => new MemoryCache(),
  // A closed cache fails every call (CLOSED), like a server that went away.
  breakCache: (cache) => cache.close(),
});

test('without a cache, get is the plain prototype method and cacheStats() is undefined', async () => {
  const f = makeKit();
  try {
    assert.equal(Object.hasOwn(f.kit.objects, 'get'), false);
    assert.equal(f.kit.cacheStats(), undefined);
  } finally {
    await f.cleanup();
  }
});
