import { ShardKitError, isShardKitError } from '../../errors.js';
import { errorCodeOf, errorDetails, whereText, type ErrorContext } from '../sql/error-context.js';

/** Where an operation ran (storage/sql/error-context.ts). */
export type MysqlErrorContext = ErrorContext;

/** The server is down or cannot be reached at all (the network-level part of both sets below). */
const UNREACHABLE_CODES = [
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOENT', // unix socket missing: server not running
  'ETIMEDOUT', // connectTimeout
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'PROTOCOL_CONNECTION_LOST',
];

/** Network-level failures: the server is down, unreachable or went away mid-query. */
const CONNECTION_CODES = new Set([
  ...UNREACHABLE_CODES,
  'PROTOCOL_SEQUENCE_TIMEOUT', // our per-query timeout
  'ACQUIRE_TIMEOUT', // no pooled connection within the connect timeout
  'HOST_DOWN', // the host failed moments ago; not retried yet
]);

/** Server-side conditions that also mean "this shard cannot serve right now". */
const UNAVAILABLE_SERVER_CODES = new Set([
  'ER_SERVER_SHUTDOWN',
  'ER_CON_COUNT_ERROR',
  'ER_TOO_MANY_USER_CONNECTIONS',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_LOCK_DEADLOCK',
  'ER_QUERY_INTERRUPTED',
  'ER_STATEMENT_TIMEOUT',
  'ER_QUERY_TIMEOUT', // MySQL's max_execution_time
  'ER_OPTION_PREVENTS_STATEMENT', // read_only: a slave, or a master being failed over
  'ER_CONNECTION_KILLED',
  'ER_CLIENT_INTERACTION_TIMEOUT',
  'ER_HOST_IS_BLOCKED',
]);

/**
 * MariaDB error numbers mysql2 has no name for (its table is MySQL's): 1969 is MariaDB's
 * ER_STATEMENT_TIMEOUT, what max_statement_time raises when the server stops a statement before
 * our client-side timer fires.
 */
const MARIADB_UNAVAILABLE_ERRNOS = new Set([1969]);

/** The server cannot be reached at all: worth failing fast for a moment instead of retrying each call. */
const HOST_DOWN_CODES = new Set([...UNREACHABLE_CODES, 'ER_SERVER_SHUTDOWN', 'ER_CON_COUNT_ERROR']);

const codeOf = errorCodeOf;

/** Errors after which a connection's state is unknown (it must be destroyed, not reused). */
export function isConnectionError(err: unknown): boolean {
  const code = codeOf(err);
  return code !== undefined && (CONNECTION_CODES.has(code) || HOST_DOWN_CODES.has(code));
}

/**
 * Errors that say the server is down or unreachable. A slow query (our query timeout) or a busy
 * pool does not count: one slow statement must not fail every other call to the host.
 */
export function isHostDownError(err: unknown): boolean {
  const code = codeOf(err);
  return code !== undefined && HOST_DOWN_CODES.has(code);
}

const where = whereText;

/** The one place where mysql2 / server errors become ShardKitErrors with stable codes. */
export function mapMysqlError(err: unknown, ctx: MysqlErrorContext): ShardKitError {
  if (isShardKitError(err)) return err;
  const e = (err ?? {}) as { code?: string; errno?: number; sqlMessage?: string; message?: string };
  const code = typeof e.code === 'string' ? e.code : '';
  const reason = `${code ? `${code}: ` : ''}${(e.sqlMessage ?? e.message ?? String(err)).split('\n')[0]}`;
  const details = errorDetails(ctx, code);
  if (CONNECTION_CODES.has(code) || UNAVAILABLE_SERVER_CODES.has(code) || (code === '' && typeof e.errno === 'number' && MARIADB_UNAVAILABLE_ERRNOS.has(e.errno))) {
    // readOnly: a planned failover's fence (docs/failover.md). ShardKit re-reads the map and, when
    // the shard's range is frozen or switched, holds the write and sends it to the new master.
    return new ShardKitError('SHARD_UNAVAILABLE', `${where(ctx)} is unavailable: ${reason}`, { cause: err, details: code === 'ER_OPTION_PREVENTS_STATEMENT' ? { ...details, readOnly: true } : details });
  }
  switch (code) {
    case 'ER_BAD_DB_ERROR':
      return new ShardKitError('SHARD_UNAVAILABLE', `${where(ctx)} does not exist: run \`shardkit init\``, { cause: err, details });
    case 'ER_NO_SUCH_TABLE':
      // Tables are named with their database, so a missing database shows up here too. It is
      // also what a shard move's fence looks like (tables renamed away): missingTable tells
      // ShardKit to re-read the map before reporting it (docs/moves.md).
      return new ShardKitError('SHARD_UNAVAILABLE', `${where(ctx)} is missing a table: run \`shardkit init\` (or \`shardkit schema apply\` after a schema change): ${reason}`, { cause: err, details: { ...details, missingTable: true } });
    case 'ER_DUP_ENTRY':
      return new ShardKitError('ALREADY_EXISTS', `${where(ctx)}: ${reason}`, { cause: err, details });
    case 'ER_DATA_TOO_LONG':
    case 'ER_NET_PACKET_TOO_LARGE':
    case 'ER_TOO_LONG_KEY':
      return new ShardKitError('PAYLOAD_TOO_LARGE', `${where(ctx)}: value too large: ${reason}`, { cause: err, details });
    case 'ER_ACCESS_DENIED_ERROR':
    case 'ER_DBACCESS_DENIED_ERROR':
    case 'ER_TABLEACCESS_DENIED_ERROR':
      return new ShardKitError('SHARD_UNAVAILABLE', `${where(ctx)} refused our credentials: ${reason}`, { cause: err, details });
    default:
      return new ShardKitError('INTERNAL', `${where(ctx)}: ${reason}`, { cause: err, details });
  }
}
