import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Cache } from '../../src/cache/cache.js';
import { defaultConfig, type ConfigInput } from '../../src/config/config.js';
import { isShardKitError } from '../../src/errors.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { LocalCacheServer, type CacheServerKind } from './cache-servers.js';

/**
 * The cases every networked cache (Redis, memcached) runs beyond the conformance suite: a server
 * that goes away and comes back, and ShardKit.open building the cache from its config.
 */
export function runServerCacheCases(options: {
  kind: CacheServerKind;
  /** A client of the server at `address`. */
  client: (address: string) => Cache;
  /** The config's cache section for the server at `address`. */
  configCache: (address: string) => NonNullable<ConfigInput['cache']>;
  server: () => LocalCacheServer;
}): void {
  const { kind, client } = options;

  test(`${kind} cache: a stopped server fails calls (no hang), and the client recovers when it is back`, async () => {
    const own = await LocalCacheServer.start(kind);
    const cache = client(own.address);
    try {
      await cache.setMany([['k', 'v']], 60);
      await own.stop();
      for (const call of [() => cache.getMany(['k']), () => cache.setMany([['k', 'w']], 60), () => cache.deleteMany(['k'])]) {
        await assert.rejects(call(), (err) => err instanceof Error && !isShardKitError(err, 'CLOSED'));
      }
      await own.restart();
      // Reconnecting can take a retry interval: poll (bounded) for the first success.
      let got: (string | undefined)[] | undefined;
      for (let i = 0; i < 100 && got === undefined; i++) {
        got = await cache.getMany(['k']).catch(() => undefined);
        if (got === undefined) await new Promise((r) => setTimeout(r, 100));
      }
      assert.deepEqual(got, [undefined], `a restarted ${kind} (no persistence) is empty and reachable again`);
    } finally {
      await cache.close();
      await own.destroy();
    }
  });

  test(`ShardKit.open with a ${kind} cache in the config reads through it and closes it`, async () => {
    const address = options.server().address;
    const dataDir = mkdtempSync(join(tmpdir(), `shardkit-open-${kind}-`));
    const kit = await ShardKit.open({ config: { ...defaultConfig({ shards: 8, pairs: 1 }), cache: options.configCache(address) }, dataDir });
    try {
      const pin = await kit.objects.create('pin', { v: 1 });
      await kit.objects.get(pin.id);
      await kit.objects.get(pin.id);
      assert.deepEqual(kit.cacheStats(), { hits: 1, misses: 1, errors: 0, fills: 1, skippedFills: 0, invalidations: 0 });
      // The entry is in the server under the configured prefix, as <createdAt ms>\n<data>.
      const direct = client(address);
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
}
