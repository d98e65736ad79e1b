import { ShardKitError } from '../errors.js';

/**
 * A look-aside cache (SPEC §3: memcached for objects, Redis for mapping lists). Deliberately
 * small: string keys and values, batch calls only (one round trip per request, not per key),
 * no compare-and-set. Everything about what is cached and when it is invalidated lives above
 * it, in src/kit/store-cache.ts, so every implementation stays a thin adapter.
 */
export interface Cache {
  /** The values in `keys` order; undefined for a key that is absent or expired. */
  getMany(keys: readonly string[]): Promise<(string | undefined)[]>;
  /** Stores every entry for `ttlSeconds` (a positive integer). */
  setMany(entries: ReadonlyArray<readonly [key: string, value: string]>, ttlSeconds: number): Promise<void>;
  /** Removes the keys; absent keys are not an error. */
  deleteMany(keys: readonly string[]): Promise<void>;
  /** Releases connections; further calls fail with CLOSED. */
  close(): Promise<void>;
}

/** TTL used when a config or ShardKit option gives none. */
export const DEFAULT_CACHE_TTL_SECONDS = 300;

/** Longest TTL: memcached reads a larger expiry as an absolute unix time. */
export const MAX_TTL_SECONDS = 30 * 24 * 3600;

export function checkTtl(ttlSeconds: unknown): number {
  if (typeof ttlSeconds !== 'number' || !Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_TTL_SECONDS) {
    throw new ShardKitError('INVALID_ARGUMENT', `cache ttlSeconds must be an integer in 1..${MAX_TTL_SECONDS}, got ${String(ttlSeconds)}`);
  }
  return ttlSeconds;
}

export function closedError(kind: string): ShardKitError {
  return new ShardKitError('CLOSED', `this ${kind} cache is closed`);
}
