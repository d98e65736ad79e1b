import { ShardKitError, isShardKitError } from '../../errors.js';
import { CLOCK_BACKWARDS_SQLSTATE, CLOCK_RANGE_SQLSTATE } from './instagram-next-id.js';
import { errorCodeOf, errorDetails, whereText, type ErrorContext } from '../sql/error-context.js';

/** Where an operation ran (storage/sql/error-context.ts). */
export type PostgresErrorContext = ErrorContext;

/** Node network errors: the server is down or cannot be reached at all. */
const UNREACHABLE_CODES = ['ECONNREFUSED', 'ECONNRESET', 'ENOENT', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'EAI_AGAIN', 'ENOTFOUND'];

/**
 * Our names for the driver's uncoded errors (pg reports these by message only; the host pool
 * gives them a code, see codeDriverError), plus our own pool conditions.
 */
export const PG_CONNECTION_LOST = 'PG_CONNECTION_LOST'; // "Connection terminated unexpectedly", not queryable
export const PG_CONNECT_TIMEOUT = 'PG_CONNECT_TIMEOUT'; // connectionTimeoutMillis while opening
export const PG_QUERY_TIMEOUT = 'PG_QUERY_TIMEOUT'; // our client-side read timeout (server frozen)
export const PG_ACQUIRE_TIMEOUT = 'PG_ACQUIRE_TIMEOUT'; // no pooled connection within the connect timeout
export const PG_HOST_DOWN = 'PG_HOST_DOWN'; // the host failed moments ago; not retried yet

/** Network-level failures: the connection's state is unknown and it must not be reused. */
const CONNECTION_CODES = new Set([...UNREACHABLE_CODES, PG_CONNECTION_LOST, PG_CONNECT_TIMEOUT, PG_QUERY_TIMEOUT, PG_ACQUIRE_TIMEOUT, PG_HOST_DOWN]);

/**
 * SQLSTATEs that mean "this shard cannot serve right now": shutdown (57P01 admin, 57P02 crash,
 * 57P03 starting up), 57014 statement_timeout (query_canceled), too many connections, lock and
 * serialization failures, a read-only (standby) server, and connection exceptions (class 08).
 */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '57014', '53300', '53400', '55P03', '40P01', '40001', '25006', '08000', '08001', '08003', '08004', '08006', '08P01']);

/** The server cannot be reached at all: worth failing fast for a moment instead of retrying each call. */
const HOST_DOWN_CODES = new Set([...UNREACHABLE_CODES, PG_CONNECTION_LOST, PG_CONNECT_TIMEOUT, '57P01', '57P02', '57P03', '53300']);

const codeOf = errorCodeOf;

/** Errors after which a connection's state is unknown (destroy it, never reuse it). */
export function isConnectionError(err: unknown): boolean {
  const code = codeOf(err);
  return code !== undefined && (CONNECTION_CODES.has(code) || HOST_DOWN_CODES.has(code) || code.startsWith('08'));
}

/** The server is down or unreachable; a slow statement or a busy pool does not count. */
export function isHostDownError(err: unknown): boolean {
  const code = codeOf(err);
  return code !== undefined && HOST_DOWN_CODES.has(code);
}

/**
 * pg reports its own client-side failures as plain Errors told apart by message only; this gives
 * them the codes above so the rest of the backend never matches on text.
 */
export function codeDriverError(err: unknown): unknown {
  if (!(err instanceof Error) || codeOf(err) !== undefined) return err;
  const m = err.message;
  let code: string | undefined;
  if (/timeout expired|connection timeout/i.test(m)) code = PG_CONNECT_TIMEOUT;
  else if (/Query read timeout/i.test(m)) code = PG_QUERY_TIMEOUT;
  else if (/timeout exceeded when trying to connect/i.test(m)) code = PG_ACQUIRE_TIMEOUT;
  else if (/Connection terminated|not queryable|Client was closed|connection.*ended/i.test(m)) code = PG_CONNECTION_LOST;
  if (code !== undefined) (err as Error & { code: string }).code = code;
  return err;
}

const where = whereText;

/** The one place where pg / server errors become ShardKitErrors with stable codes. */
export function mapPostgresError(err: unknown, ctx: PostgresErrorContext): ShardKitError {
  if (isShardKitError(err)) return err;
  codeDriverError(err);
  const e = (err ?? {}) as { code?: string; message?: string };
  const code = typeof e.code === 'string' ? e.code : '';
  const reason = `${code ? `${code}: ` : ''}${(e.message ?? String(err)).split('\n')[0]}`;
  const details = errorDetails(ctx, code);
  if (CONNECTION_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08')) {
    // 25006: a read-only server or transaction refused the statement before doing anything: the
    // fence of a planned failover (pg-read-only-fence.ts) or a standby, told to the kit as MySQL's
    // read_only is (storage/fence-error.ts), so a write to a range under failover is held.
    return new ShardKitError('SHARD_UNAVAILABLE', `${where(ctx)} is unavailable: ${reason}`, { cause: err, details: code === '25006' ? { ...details, readOnly: true } : details });
  }
  switch (code) {
    case '3F000': // invalid_schema_name
    case '42P01': // undefined_table (a missing schema usually shows up here: tables are schema-qualified)
    case '42883': // undefined_function: a shard created before next_id() existed
      // Also what a shard move's fence looks like (schema renamed away): missingTable tells
      // ShardKit to re-read the map before reporting it (docs/moves.md).
      return new ShardKitError('SHARD_UNAVAILABLE', `${where(ctx)} is missing a table: run \`shardkit init\` (or \`shardkit schema apply\` after a schema change): ${reason}`, { cause: err, details: { ...details, ...(code !== '42883' ? { missingTable: true } : {}) } });
    case '3D000': // invalid_catalog_name: the configured database itself
      return new ShardKitError('SHARD_UNAVAILABLE', `${where(ctx)}: the database does not exist: create it (createdb), then run \`shardkit init\`: ${reason}`, { cause: err, details });
    case CLOCK_BACKWARDS_SQLSTATE:
      return new ShardKitError('CLOCK_MOVED_BACKWARDS', `${where(ctx)}: ${e.message ?? reason}`, { cause: err, details });
    case CLOCK_RANGE_SQLSTATE:
      return new ShardKitError('INVALID_ARGUMENT', `${where(ctx)}: ${e.message ?? reason}`, { cause: err, details });
    case '23505':
      return new ShardKitError('ALREADY_EXISTS', `${where(ctx)}: ${reason}`, { cause: err, details });
    case '54000': // program_limit_exceeded (row or index entry too large)
    case '22001':
      return new ShardKitError('PAYLOAD_TOO_LARGE', `${where(ctx)}: value too large: ${reason}`, { cause: err, details });
    case '22021': // character_not_in_repertoire: a raw NUL in TEXT
    case '22P05':
      return new ShardKitError('INVALID_ARGUMENT', `${where(ctx)}: text the server cannot store (PostgreSQL text holds no NUL character): ${reason}`, { cause: err, details });
    case '28P01':
    case '28000':
    case '42501':
      return new ShardKitError('SHARD_UNAVAILABLE', `${where(ctx)} refused our credentials: ${reason}`, { cause: err, details });
    default:
      return new ShardKitError('INTERNAL', `${where(ctx)}: ${reason}`, { cause: err, details });
  }
}
