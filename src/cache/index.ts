import type { Cache } from './cache.js';
import { MemoryCache } from './memory/memory-cache.js';
import { importOptional } from '../util/optional-dependency.js';

export { type Cache, MAX_TTL_SECONDS, DEFAULT_CACHE_TTL_SECONDS } from './cache.js';
export { MemoryCache, type MemoryCacheOptions } from './memory/memory-cache.js';
export type { RedisCacheOptions } from './redis/redis-cache.js';
export type { MemcachedCacheOptions } from './memcached/memcached-cache.js';
export { checkMemcachedKey, MAX_MEMCACHED_KEY_BYTES } from './memcached/memcached-keys.js';

/** The config file's `cache` section (validated in src/config/config.ts). */
export type CacheSpec =
  | { kind: 'memory'; maxEntries?: number; ttlSeconds?: number; keyPrefix?: string }
  | { kind: 'redis'; url: string; ttlSeconds?: number; keyPrefix?: string }
  | { kind: 'memcached'; servers: readonly string[]; ttlSeconds?: number; keyPrefix?: string };

/**
 * Opens the cache a config names. The Redis and memcached clients are imported only here, so a
 * kit without them never loads ioredis or memjs. Never fails on a down server: the clients
 * connect in the background and report failures per call.
 */
export async function createCache(spec: CacheSpec): Promise<Cache> {
  switch (spec.kind) {
    case 'memory':
      return new MemoryCache(spec.maxEntries === undefined ? {} : { maxEntries: spec.maxEntries });
    case 'redis': {
      const { RedisCache } = await importOptional('ioredis', 'the redis cache', () => import('./redis/redis-cache.js'));
      return new RedisCache({ url: spec.url });
    }
    case 'memcached': {
      const { MemcachedCache } = await importOptional('memjs', 'the memcached cache', () => import('./memcached/memcached-cache.js'));
      return new MemcachedCache({ servers: spec.servers });
    }
  }
}
