import { Redis } from 'ioredis';
import { ShardKitError } from '../../errors.js';
import { checkTtl, closedError, type Cache } from '../cache.js';

export interface RedisCacheOptions {
  /** `redis://[user:password@]host[:port][/db]` (or rediss:// for TLS). */
  url: string;
  /** Bound on one command round trip, and on connecting (default 1000 ms). */
  timeoutMs?: number;
}

/**
 * Redis through ioredis: MGET, one pipeline of SET EX, DEL. A cache must fail fast rather than
 * hold a read up: once the connection is lost, calls are refused at once until it is back
 * (ioredis would otherwise queue them while it reconnects), and every command has a timeout.
 */
export class RedisCache implements Cache {
  private readonly client: Redis;
  /** True from a lost (or never made) connection until ioredis reports 'ready' again. */
  private down = false;
  private lastError: unknown;
  private closed = false;

  constructor(options: RedisCacheOptions) {
    const timeout = options.timeoutMs ?? 1000;
    this.client = new Redis(options.url, {
      connectTimeout: timeout,
      commandTimeout: timeout,
      // Queued commands are failed on the first failed reconnect instead of being retried.
      maxRetriesPerRequest: 0,
      retryStrategy: (times) => Math.min(times * 100, 2000),
      // The first commands may wait for the first connection; `down` refuses them after a loss.
      enableOfflineQueue: true,
    });
    this.client.on('ready', () => {
      this.down = false;
    });
    this.client.on('close', () => {
      this.down = true;
    });
    // Errors surface through the rejected commands; without a listener ioredis prints them.
    this.client.on('error', (err: unknown) => {
      this.lastError = err;
    });
  }

  private check(): void {
    if (this.closed) throw closedError('redis');
    if (this.down) {
      const why = this.lastError instanceof Error ? `: ${this.lastError.message}` : '';
      throw new ShardKitError('SHARD_UNAVAILABLE', `redis cache is unreachable (reconnecting)${why}`, { cause: this.lastError });
    }
  }

  async getMany(keys: readonly string[]): Promise<(string | undefined)[]> {
    this.check();
    if (keys.length === 0) return [];
    const values = await this.client.mget(...keys);
    return values.map((v) => v ?? undefined);
  }

  async setMany(entries: ReadonlyArray<readonly [string, string]>, ttlSeconds: number): Promise<void> {
    this.check();
    const ttl = checkTtl(ttlSeconds);
    if (entries.length === 0) return;
    const pipeline = this.client.pipeline();
    for (const [k, v] of entries) pipeline.set(k, v, 'EX', ttl);
    const results = (await pipeline.exec()) ?? [];
    const failed = results.find(([err]) => err !== null);
    if (failed) throw failed[0];
  }

  async deleteMany(keys: readonly string[]): Promise<void> {
    this.check();
    if (keys.length === 0) return;
    await this.client.del(...keys);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.client.status === 'ready') {
      try {
        await this.client.quit();
        return;
      } catch {
        // fall through to a hard disconnect
      }
    }
    this.client.disconnect();
  }
}
