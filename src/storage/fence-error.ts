import { isShardKitError, type ShardKitError } from '../errors.js';

/**
 * The fence of a shard move, as the storage layer reports it: SHARD_MOVED (SQLite's fenced
 * file), SHARD_FENCED (a server backend's missing table where the fence set the shard aside:
 * sql-backend.ts asks the dialect's fencedAside), or a table missing on a server backend (MariaDB ER_NO_SUCH_TABLE, PostgreSQL
 * 42P01/3F000: the tables were renamed away; mysql-errors.ts and postgres-errors.ts set
 * details.missingTable). A read-only MariaDB master (details.readOnly) is the fence of a planned
 * failover. The caller tells a fence from a shard never initialised (or a misconfigured host)
 * by looking at the map: the kit's afterFence, the MyRocks engine's retry.
 */
export function isFenceError(err: unknown): err is ShardKitError {
  if (!isShardKitError(err)) return false;
  return err.code === 'SHARD_MOVED' || err.code === 'SHARD_FENCED' || (err.code === 'SHARD_UNAVAILABLE' && (err.details?.missingTable === true || err.details?.readOnly === true));
}
