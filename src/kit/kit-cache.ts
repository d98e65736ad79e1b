import { randomBytes } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import { checkTtl, DEFAULT_CACHE_TTL_SECONDS, type Cache } from '../cache/cache.js';
import { FillGuard } from './fill-guard.js';
import type { CacheErrorEvent, CacheStats } from './types.js';

export interface KitCacheOptions {
  cache: Cache;
  /** How long an entry lives (default 300 s): the bound on staleness when an invalidation is lost. */
  ttlSeconds?: number;
  /** Put before every key, so several datasets can share one server. */
  keyPrefix?: string;
}

/** Readers of one Cache object share a guard, so two kits in one process see each other's writes. */
const guards = new WeakMap<Cache, FillGuard>();

/**
 * What objects and mappings need from a cache: keys, counted reads, guarded fills and
 * invalidations. A cache failure is never the caller's failure: reads become misses, fills are
 * dropped, and a lost invalidation leaves an entry for at most its TTL; each is announced as
 * 'cache-error' and counted.
 */
export class KitCache {
  readonly cache: Cache;
  readonly ttlSeconds: number;
  private readonly prefix: string;
  private readonly guard: FillGuard;
  private readonly pending = new Set<Promise<void>>();
  private readonly counters: CacheStats = { hits: 0, misses: 0, errors: 0, fills: 0, skippedFills: 0, invalidations: 0 };

  constructor(options: KitCacheOptions, private readonly events: EventEmitter) {
    this.cache = options.cache;
    this.ttlSeconds = checkTtl(options.ttlSeconds ?? DEFAULT_CACHE_TTL_SECONDS);
    this.prefix = options.keyPrefix ?? '';
    let guard = guards.get(this.cache);
    if (guard === undefined) guards.set(this.cache, (guard = new FillGuard()));
    this.guard = guard;
  }

  stats(): CacheStats {
    return { ...this.counters };
  }

  objectKey(id: bigint): string {
    return `${this.prefix}o:${id}`;
  }

  /** The key holding the current generation of one (mapping, from) list. */
  generationKey(mapping: string, from: bigint): string {
    return `${this.prefix}g:${mapping}:${from}`;
  }

  /** A key under a generation of one (mapping, from): `what` says which page, or `count`. */
  listKey(mapping: string, from: bigint, generation: string, what: string): string {
    return `${this.prefix}l:${mapping}:${from}:${generation}:${what}`;
  }

  newGeneration(): string {
    return randomBytes(8).toString('base64url');
  }

  /** Values in key order; every key reads as a miss when the cache fails. `count` = false reads without counting. */
  async read(keys: readonly string[], count = true): Promise<(string | undefined)[]> {
    if (keys.length === 0) return [];
    let values: (string | undefined)[];
    try {
      values = await this.cache.getMany(keys);
    } catch (error) {
      this.report('get', keys.length, error);
      if (count) this.counters.misses += keys.length;
      return new Array<string | undefined>(keys.length).fill(undefined);
    }
    if (count) {
      for (const v of values) {
        if (v === undefined) this.counters.misses++;
        else this.counters.hits++;
      }
    }
    return values;
  }

  /** Counts a lookup whose answer was decided elsewhere (a list read through its generation). */
  count(hit: boolean): void {
    if (hit) this.counters.hits++;
    else this.counters.misses++;
  }

  /** Call before reading the backend after a miss; pass the token to fill() or release(). */
  begin(): number {
    return this.guard.begin();
  }

  release(): void {
    this.guard.release();
  }

  /**
   * Stores what a reader read from the backend, except entries whose guard key (default: the
   * key) was invalidated since `token`. Not awaited by readers: the check and the send happen
   * now, in this turn of the event loop, which is what the ordering argument of FillGuard needs.
   */
  fill(token: number, entries: ReadonlyArray<readonly [key: string, value: string, guard?: string]>): void {
    const ok = this.guard.end(token, entries.map((e) => e[2] ?? e[0]));
    const keep = entries.filter((_, i) => ok[i]).map(([k, v]) => [k, v] as const);
    this.counters.skippedFills += entries.length - keep.length;
    if (keep.length === 0) return;
    this.counters.fills += keep.length;
    const p = this.cache.setMany(keep, this.ttlSeconds).catch((error: unknown) => this.report('fill', keep.length, error));
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  /** After a committed write: forgets `keys` (in this process at once, in the cache by the returned promise). Never rejects. */
  async invalidate(keys: readonly string[]): Promise<void> {
    this.guard.invalidate(keys);
    this.counters.invalidations += keys.length;
    try {
      await this.cache.deleteMany(keys);
    } catch (error) {
      this.report('invalidate', keys.length, error);
    }
  }

  /**
   * After a committed mapping write: moves (mapping, from) to a new generation, which orphans
   * every page and count cached under the old one. Never rejects.
   */
  async bumpGeneration(mapping: string, from: bigint): Promise<void> {
    const key = this.generationKey(mapping, from);
    this.guard.invalidate([key]);
    this.counters.invalidations++;
    try {
      await this.cache.setMany([[key, this.newGeneration()]], this.ttlSeconds);
    } catch (error) {
      this.report('invalidate', 1, error);
    }
  }

  private report(op: CacheErrorEvent['op'], keys: number, error: unknown): void {
    this.counters.errors++;
    const event: CacheErrorEvent = { op, keys, error };
    this.events.emit('cache-error', event);
  }

  /** Waits for fills in flight (so closing the cache next does not fail them). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }
}
