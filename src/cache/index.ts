import type { Cache } from './cache.js';
import { MemoryCache } from './memory/memory-cache.js';
import { RedisCache } from './redis/redis-cache.js';
import { MemcachedCache } from './memcached/memcached-cache.js';

export { type Cache, MAX_TTL_SECONDS } from './cache.js';
export { MemoryCache, type MemoryCacheOptions } from './memory/memory-cache.js';
export { RedisCache, type RedisCacheOptions } from './redis/redis-cache.js';
export { MemcachedCache, type MemcachedCacheOptions } from './memcached/memcached-cache.js';
export { checkMemcachedKey, MAX_MEMCACHED_KEY_BYTES } from './memcached/memcached-keys.js';

/** The config file's `cache` section (validated in src/config/config.ts). */
export type CacheSpec =
  | { kind: 'memory'; maxEntries?: number; ttlSeconds?: number; keyPrefix?: string }
  | { kind: 'redis'; url: string; ttlSeconds?: number; keyPrefix?: string }
  | { kind: 'memcached'; servers: readonly string[]; ttlSeconds?: number; keyPrefix?: string };

/** TTL used when a spec gives none. */
export const DEFAULT_CACHE_TTL_SECONDS = 300;

/** Opens the cache a config names; never fails on a down server (clients connect in the background). */
export function createCache(spec: CacheSpec): Cache {
  switch (spec.kind) {
    case 'memory':
      return new MemoryCache(spec.maxEntries === undefined ? {} : { maxEntries: spec.maxEntries });
    case 'redis':
      return new RedisCache({ url: spec.url });
    case 'memcached':
      return new MemcachedCache({ servers: spec.servers });
  }
}
