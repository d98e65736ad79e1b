import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, parseConfig } from '../../src/config/config.js';
import { isShardKitError } from '../../src/errors.js';
import { ShardKit } from '../../src/kit/shard-kit.js';

const withCache = (cache: unknown) => ({ ...defaultConfig(), cache });

test('cache config: no section means no cache; the three kinds parse', () => {
  assert.equal(parseConfig(defaultConfig()).cache, undefined);
  assert.deepEqual(parseConfig(withCache({ kind: 'memory' })).cache, { kind: 'memory' });
  assert.deepEqual(parseConfig(withCache({ kind: 'memory', maxEntries: 5, ttlSeconds: 30, keyPrefix: 'app1:' })).cache, { kind: 'memory', maxEntries: 5, ttlSeconds: 30, keyPrefix: 'app1:' });
  assert.deepEqual(parseConfig(withCache({ kind: 'redis', url: 'redis://127.0.0.1:6379/2' })).cache, { kind: 'redis', url: 'redis://127.0.0.1:6379/2' });
  assert.deepEqual(parseConfig(withCache({ kind: 'memcached', servers: ['127.0.0.1:11211', 'cache-2:11211'], ttlSeconds: 2592000 })).cache,
    { kind: 'memcached', servers: ['127.0.0.1:11211', 'cache-2:11211'], ttlSeconds: 2592000 });
});

test('cache config: unknown kinds and bad values are INVALID_CONFIG naming the field', () => {
  const cases: Array<[unknown, RegExp]> = [
    [{ kind: 'etcd' }, /cache\.kind: .*'memory' \| 'redis' \| 'memcached'/],
    [{}, /cache\.kind/],
    ['memory', /at cache: .*expected object/],
    [{ kind: 'memory', maxEntries: 0 }, /cache\.maxEntries/],
    [{ kind: 'memory', ttlSeconds: 0 }, /cache\.ttlSeconds/],
    [{ kind: 'memory', ttlSeconds: 1.5 }, /cache\.ttlSeconds/],
    [{ kind: 'memory', ttlSeconds: 2592001 }, /cache\.ttlSeconds/],
    [{ kind: 'memory', url: 'redis://x' }, /at cache: Unrecognized key: "url"/],
    [{ kind: 'memory', keyPrefix: 'has space' }, /cache\.keyPrefix: must be at most 64/],
    [{ kind: 'memory', keyPrefix: 'x'.repeat(65) }, /cache\.keyPrefix/],
    [{ kind: 'redis' }, /cache\.url/],
    [{ kind: 'redis', url: 'http://127.0.0.1:6379' }, /cache\.url: must be a redis:\/\/ or rediss:\/\/ URL/],
    [{ kind: 'redis', url: 'not a url' }, /cache\.url/],
    [{ kind: 'memcached' }, /cache\.servers/],
    [{ kind: 'memcached', servers: [] }, /cache\.servers/],
    [{ kind: 'memcached', servers: ['127.0.0.1'] }, /cache\.servers\.0: must be host:port/],
    [{ kind: 'memcached', servers: ['a b:1'] }, /cache\.servers\.0/],
  ];
  for (const [cache, message] of cases) {
    assert.throws(() => parseConfig(withCache(cache)), (err) => {
      assert.ok(isShardKitError(err, 'INVALID_CONFIG'), `${JSON.stringify(cache)}: ${String(err)}`);
      assert.match(err.message, message, JSON.stringify(cache));
      return true;
    });
  }
});

test('ShardKit.open: a memory cache from the config is used; without one there is none', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'shardkit-cache-config-'));
  try {
    const kit = await ShardKit.open({ config: { ...defaultConfig(), cache: { kind: 'memory', maxEntries: 100, ttlSeconds: 60 } }, dataDir });
    try {
      const pin = await kit.objects.create('pin', { a: 1 });
      await kit.objects.get(pin.id);
      await kit.objects.get(pin.id);
      assert.equal(kit.cacheStats()?.hits, 1);
    } finally {
      await kit.close();
    }
    const plain = await ShardKit.open({ config: defaultConfig(), dataDir });
    try {
      assert.equal(plain.cacheStats(), undefined);
    } finally {
      await plain.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
