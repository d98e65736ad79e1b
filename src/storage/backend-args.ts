import { ShardKitError } from '../errors.js';
import { MAX_PAIRS_PER_CALL, type Fleet, type MappingScan, type ShardRef } from './shard-backend.js';

/**
 * Argument checks every backend makes before touching storage. IDs in mapping and lookup
 * columns are signed 64-bit on every engine we target (SQLite INTEGER, PostgreSQL bigint), so
 * the portable range is 0..2^63-1; Pinterest IDs (2 reserved high bits) always fit.
 */
export const MAX_STORED_ID = (1n << 63n) - 1n;
const HOST = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export function checkHost(host: unknown): string {
  if (typeof host !== 'string' || !HOST.test(host) || host.includes('..')) {
    throw new ShardKitError('INVALID_ARGUMENT', `invalid host name ${JSON.stringify(String(host).slice(0, 70))}`);
  }
  return host;
}

export function checkFleet(fleet: unknown): Fleet {
  if (fleet !== 'objects' && fleet !== 'lookups') throw new ShardKitError('INVALID_ARGUMENT', `fleet must be "objects" or "lookups"`);
  return fleet;
}

export function checkRef(ref: ShardRef, hostChecked = false): ShardRef {
  if (!hostChecked) checkHost(ref.host);
  checkFleet(ref.fleet);
  if (!Number.isInteger(ref.shard) || ref.shard < 0 || ref.shard > 0xffff) {
    throw new ShardKitError('INVALID_ARGUMENT', `shard must be an integer in 0..65535, got ${String(ref.shard)}`);
  }
  return ref;
}

export function checkStoredId(id: unknown, what: string): bigint {
  if (typeof id !== 'bigint' || id < 0n || id > MAX_STORED_ID) {
    throw new ShardKitError('INVALID_ID', `${what} must be a bigint in 0..2^63-1`);
  }
  return id;
}

export function checkLocalId(localId: unknown): number {
  if (typeof localId !== 'number' || !Number.isSafeInteger(localId) || localId < 0) {
    throw new ShardKitError('INVALID_ARGUMENT', 'local id must be a non-negative safe integer');
  }
  return localId;
}

export function checkSequence(sequence: unknown): number {
  if (typeof sequence !== 'number' || !Number.isSafeInteger(sequence)) {
    throw new ShardKitError('INVALID_ARGUMENT', 'sequence must be a safe integer');
  }
  return sequence;
}

export function checkLimit(limit: unknown): number {
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
    throw new ShardKitError('INVALID_ARGUMENT', 'limit must be a positive integer');
  }
  return limit;
}

/** Lookup keys are compared byte for byte; 1024 UTF-8 bytes fit a VARBINARY primary key on MySQL. */
export const MAX_LOOKUP_KEY_BYTES = 1024;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function checkLookupKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0) throw new ShardKitError('INVALID_ARGUMENT', 'lookup key must be a non-empty string');
  if (LONE_SURROGATE.test(key)) throw new ShardKitError('INVALID_ARGUMENT', 'lookup key is not well-formed Unicode (lone surrogate)');
  if (Buffer.byteLength(key, 'utf8') > MAX_LOOKUP_KEY_BYTES) {
    throw new ShardKitError('INVALID_ARGUMENT', `lookup key is longer than ${MAX_LOOKUP_KEY_BYTES} UTF-8 bytes`);
  }
  return key;
}

export function checkText(data: unknown): string {
  if (typeof data !== 'string') throw new ShardKitError('INVALID_ARGUMENT', 'object data must be JSON text');
  return data;
}

/** A whole-table scan page: a positive limit, and an optional (fromId, toId) to resume after. */
export function checkScan(page: unknown): MappingScan {
  const p = page as MappingScan | null;
  if (p === null || typeof p !== 'object') throw new ShardKitError('INVALID_ARGUMENT', 'a scan page must be an object');
  checkLimit(p.limit);
  if (p.after !== undefined) {
    checkStoredId(p.after.fromId, 'after.fromId');
    checkStoredId(p.after.toId, 'after.toId');
  }
  return p;
}

/** Pairs of getMappings: an array of at most MAX_PAIRS_PER_CALL valid (fromId, toId). */
export function checkPairs(pairs: unknown): ReadonlyArray<{ fromId: bigint; toId: bigint }> {
  if (!Array.isArray(pairs)) throw new ShardKitError('INVALID_ARGUMENT', 'pairs must be an array');
  if (pairs.length > MAX_PAIRS_PER_CALL) throw new ShardKitError('INVALID_ARGUMENT', `at most ${MAX_PAIRS_PER_CALL} pairs per call`);
  for (const p of pairs as Array<{ fromId: unknown; toId: unknown }>) {
    checkStoredId(p?.fromId, 'from id');
    checkStoredId(p?.toId, 'to id');
  }
  return pairs as Array<{ fromId: bigint; toId: bigint }>;
}
