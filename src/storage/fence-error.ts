import { isShardKitError, ShardKitError } from '../errors.js';

/**
 * The fence of a shard move, as the storage layer reports it, checked here once for the kit
 * (kit-context.ts afterFence) and the MyRocks engine (myrocks-routing.ts): SHARD_MOVED (SQLite's
 * fenced file), SHARD_FENCED (a server engine's missing table where the fence set the shard
 * aside: fencedError below), or a missing table with nothing set aside (details.missingTable:
 * MariaDB ER_NO_SUCH_TABLE, PostgreSQL 42P01/3F000), which is still a move's for a service whose
 * map is older than a drop-moved. A read-only MariaDB master (details.readOnly) is the fence of a
 * planned failover. The caller tells a fence from a shard never initialised (or a misconfigured
 * host) by looking at the map.
 */
export function isFenceError(err: unknown): err is ShardKitError {
  if (!isShardKitError(err)) return false;
  return err.code === 'SHARD_MOVED' || err.code === 'SHARD_FENCED' || (err.code === 'SHARD_UNAVAILABLE' && (err.details?.missingTable === true || err.details?.readOnly === true));
}

/**
 * The one mapping of the missing-table fence to its stable code, for every server engine (the
 * SQL backends' object shards, MyRocks' wide-column shards): a missing table (details.missingTable)
 * on a host where a move's fence set the shard's tables aside (`aside` finds the moved database
 * or schema, `movedTo`) is SHARD_FENCED, its details kept. Elsewhere the error stays what the
 * dialect made of it (SHARD_UNAVAILABLE: run init). Asked only on that error, never on the way of
 * a call; a probe that fails leaves the error as it was.
 */
export async function fencedError(mapped: Error, where: string, movedTo: string, aside: () => Promise<boolean>): Promise<Error> {
  if (!isShardKitError(mapped) || mapped.details?.missingTable !== true) return mapped;
  try {
    if (!(await aside())) return mapped;
  } catch {
    return mapped;
  }
  return new ShardKitError('SHARD_FENCED', `${where} was fenced by a shard move (its tables are in ${movedTo}): the shard lives on another host now`, { cause: mapped, details: { ...mapped.details } });
}
