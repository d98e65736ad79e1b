import { LRUCache } from 'lru-cache';
import { checkTtl, closedError, type Cache } from '../cache.js';

export interface MemoryCacheOptions {
  /** Entries kept before the least recently used is dropped (default 10000). */
  maxEntries?: number;
}

/**
 * A per-process cache. Only correct when this process is the only writer of the data it caches
 * (other processes' writes cannot invalidate it): see docs/caching.md.
 */
export class MemoryCache implements Cache {
  private readonly lru: LRUCache<string, string>;
  private closed = false;

  constructor(options: MemoryCacheOptions = {}) {
    this.lru = new LRUCache<string, string>({ max: options.maxEntries ?? 10000, ttlAutopurge: false });
  }

  async getMany(keys: readonly string[]): Promise<(string | undefined)[]> {
    if (this.closed) throw closedError('memory');
    return keys.map((k) => this.lru.get(k));
  }

  async setMany(entries: ReadonlyArray<readonly [string, string]>, ttlSeconds: number): Promise<void> {
    if (this.closed) throw closedError('memory');
    const ttl = checkTtl(ttlSeconds) * 1000;
    for (const [k, v] of entries) this.lru.set(k, v, { ttl });
  }

  async deleteMany(keys: readonly string[]): Promise<void> {
    if (this.closed) throw closedError('memory');
    for (const k of keys) this.lru.delete(k);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.lru.clear();
  }
}
