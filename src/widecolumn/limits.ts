import { ShardKitError } from '../errors.js';

/** Size limits; every refusal names the limit so a client knows what to change. */
export interface WideColumnLimits {
  maxRowKeyBytes: number;
  maxColumnBytes: number;
  maxValueBytes: number;
  /** Items in one Put Row, and columns named in one Get/Delete Row. */
  maxItemsPerRow: number;
  /** Rows in one batch call. */
  maxBatchRows: number;
  /** Keys + values of one write (a Put Row or a whole batch put). */
  maxBatchBytes: number;
  /** How far in the future an explicit timestamp may be, in ms. */
  maxFutureSkewMs: number;
}

export const DEFAULT_LIMITS: WideColumnLimits = {
  maxRowKeyBytes: 4096,
  maxColumnBytes: 1024,
  maxValueBytes: 1024 * 1024,
  maxItemsPerRow: 10_000,
  maxBatchRows: 1000,
  maxBatchBytes: 16 * 1024 * 1024,
  maxFutureSkewMs: 60_000,
};

/** A lone UTF-16 surrogate would be encoded as U+FFFD and collide with a real U+FFFD. */
const LONE_SURROGATE = /\p{Cs}/u;

export function checkName(what: 'row key' | 'column name', value: unknown, maxBytes: number): Buffer {
  if (typeof value !== 'string') throw new ShardKitError('INVALID_ARGUMENT', `${what} must be a string`);
  if (value.length === 0) throw new ShardKitError('INVALID_ARGUMENT', `${what} must not be empty`);
  if (value.length > maxBytes) throw tooLarge(what, Buffer.byteLength(value, 'utf8'), maxBytes);
  if (LONE_SURROGATE.test(value)) throw new ShardKitError('INVALID_ARGUMENT', `${what} is not well-formed unicode (lone surrogate)`);
  const raw = Buffer.from(value, 'utf8');
  if (raw.length > maxBytes) throw tooLarge(what, raw.length, maxBytes);
  return raw;
}

export function checkTimestamp(what: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new ShardKitError('INVALID_ARGUMENT', `${what} must be an integer number of milliseconds >= 0, got ${JSON.stringify(value)}`);
  }
  return value;
}

export function tooLarge(what: string, bytes: number, limit: number): ShardKitError {
  return new ShardKitError('PAYLOAD_TOO_LARGE', `${what} is ${bytes} bytes; the limit is ${limit} bytes`, { details: { bytes, limit } });
}

export function checkCount(what: string, n: number, max: number): void {
  if (n > max) throw new ShardKitError('PAYLOAD_TOO_LARGE', `${what}: ${n}; the limit is ${max}`, { details: { count: n, limit: max } });
}
