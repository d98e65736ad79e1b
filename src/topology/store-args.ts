import { ShardKitError } from '../errors.js';
import { ShardMap } from './shard-map.js';

/** Argument checks every topology store makes before touching its backing. */
export function checkExpectedVersion(expectedVersion: unknown): number {
  if (typeof expectedVersion !== 'number' || !Number.isSafeInteger(expectedVersion) || expectedVersion < 0) {
    throw new ShardKitError('INVALID_ARGUMENT', `expectedVersion must be a non-negative integer, got ${String(expectedVersion)}`);
  }
  return expectedVersion;
}

/** Accepts a ShardMap (or anything with its JSON form, e.g. one from another copy of the module). */
export function toShardMap(next: unknown): ShardMap {
  if (next instanceof ShardMap) return next;
  const json = next !== null && typeof next === 'object' && typeof (next as { toJSON?: unknown }).toJSON === 'function'
    ? (next as { toJSON(): unknown }).toJSON()
    : next;
  return ShardMap.fromJSON(json);
}

export function conflict(expected: number, actual: number): ShardKitError {
  return new ShardKitError(
    'VERSION_CONFLICT',
    `topology version conflict: expected version ${expected}, the store holds version ${actual}`,
    { details: { expectedVersion: expected, actualVersion: actual } },
  );
}

export function closedError(): ShardKitError {
  return new ShardKitError('CLOSED', 'the topology store is closed');
}
