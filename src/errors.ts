/**
 * One error class with a stable `code`; the HTTP status of every code is listed once here
 * (the Fastify `lib/errors.js` pattern) and documented in docs/errors.md.
 */
export const ERROR_CODES = {
  INVALID_ID: 400,
  INVALID_ARGUMENT: 400,
  INVALID_JSON: 400,
  INVALID_CONFIG: 400,
  MALFORMED_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  UNKNOWN_TYPE: 404,
  UNKNOWN_MAPPING: 404,
  UNKNOWN_KEYSPACE: 404,
  UNKNOWN_SHARD: 404,
  UNKNOWN_DATASET: 404,
  UNKNOWN_SEQUENCE: 404,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  SHARD_CLOSED: 409,
  SHARD_FROZEN: 409,
  UNKNOWN_MOVE: 404,
  VERSION_CONFLICT: 409,
  ALREADY_EXISTS: 409,
  REQUEST_TIMEOUT: 408,
  HOST_NOT_ALLOWED: 421,
  PRECONDITION_FAILED: 412,
  EXPECTATION_FAILED: 417,
  PAYLOAD_TOO_LARGE: 413,
  RESPONSE_TOO_LARGE: 400,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  HEADERS_TOO_LARGE: 431,
  CLOCK_MOVED_BACKWARDS: 503,
  SHARD_UNAVAILABLE: 503,
  SHARD_MOVING: 503,
  SHARD_MOVED: 503,
  SHARD_FENCED: 503,
  TICKET_SERVERS_UNAVAILABLE: 503,
  TOPOLOGY_UNAVAILABLE: 503,
  LOCK_TIMEOUT: 503,
  HOST_UNKNOWN: 503,
  TICKETS_NOT_CONFIGURED: 501,
  WIDECOLUMN_DISABLED: 501,
  STORE_LOCKED: 409,
  MOVE_TABLE_CLASH: 409,
  MOVE_FENCE_MISMATCH: 409,
  MOVE_STATE_LOST: 409,
  MOVE_NOTHING_TO_MOVE: 409,
  MOVE_VERIFY_MISMATCH: 500,
  MOVE_ABORT_FAILED: 503,
  CLOSED: 503,
  OVERLOADED: 503,
  MISSING_DEPENDENCY: 500,
  INTERNAL: 500,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_CODES;

export class ShardKitError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; details?: Record<string, unknown> } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ShardKitError';
    this.code = code;
    this.status = ERROR_CODES[code];
    if (options.details) this.details = options.details;
  }

  toJSON(): { code: ErrorCode; message: string } {
    return { code: this.code, message: this.message };
  }
}

export function isShardKitError(err: unknown, code?: ErrorCode): err is ShardKitError {
  return err instanceof ShardKitError && (code === undefined || err.code === code);
}
