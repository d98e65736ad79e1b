import memjs from 'memjs';
import { ShardKitError } from '../../errors.js';
import { checkTtl, closedError, type Cache } from '../cache.js';
import { checkMemcachedKey } from './memcached-keys.js';

export interface MemcachedCacheOptions {
  /** `host:port` of each server; keys are spread over them by memjs's hash. */
  servers: readonly string[];
  /** Bound on one request round trip, and on connecting (default 1000 ms). */
  timeoutMs?: number;
}

/**
 * memcached through memjs (binary protocol). memjs has no multi-get: the gets of one call are
 * sent together and share each server's connection, so they still cost one round trip.
 */
export class MemcachedCache implements Cache {
  private readonly client: memjs.Client<string, Buffer | null>;
  private closed = false;

  constructor(options: MemcachedCacheOptions) {
    if (!Array.isArray(options.servers) || options.servers.length === 0) {
      throw new ShardKitError('INVALID_ARGUMENT', 'a memcached cache needs at least one server');
    }
    const seconds = (options.timeoutMs ?? 1000) / 1000;
    this.client = memjs.Client.create(options.servers.join(','), {
      // One try: a cache miss is cheaper than a read held up by retries.
      retries: 1,
      timeout: seconds,
      conntimeout: seconds,
      // memjs logs every failure to the console by default; failures reach callers as rejections.
      logger: { log: () => {} },
    });
  }

  async getMany(keys: readonly string[]): Promise<(string | undefined)[]> {
    if (this.closed) throw closedError('memcached');
    keys.forEach(checkMemcachedKey);
    return Promise.all(keys.map(async (k) => {
      const { value } = await this.client.get(k);
      return value === null ? undefined : value.toString('utf8');
    }));
  }

  async setMany(entries: ReadonlyArray<readonly [string, string]>, ttlSeconds: number): Promise<void> {
    if (this.closed) throw closedError('memcached');
    const expires = checkTtl(ttlSeconds);
    for (const [k] of entries) checkMemcachedKey(k);
    await Promise.all(entries.map(async ([k, v]) => {
      const stored = await this.client.set(k, v, { expires });
      if (!stored) throw new ShardKitError('SHARD_UNAVAILABLE', `memcached did not store key ${k}`);
    }));
  }

  async deleteMany(keys: readonly string[]): Promise<void> {
    if (this.closed) throw closedError('memcached');
    keys.forEach(checkMemcachedKey);
    // delete resolves false for an absent key: not an error here.
    await Promise.all(keys.map((k) => this.client.delete(k)));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.client.close();
  }
}
