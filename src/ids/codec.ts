import { ShardKitError } from '../errors.js';

/** The one place where IDs cross between bigint and their decimal string form. */
export type IdInput = bigint | string;

export const U64_MAX = (1n << 64n) - 1n;
const DECIMAL = /^(0|[1-9][0-9]{0,19})$/;

/** Parses a u64 ID given as bigint or canonical decimal string; anything else is INVALID_ID. */
export function parseId(input: unknown, what = 'id'): bigint {
  let value: bigint;
  if (typeof input === 'bigint') {
    value = input;
  } else if (typeof input === 'string') {
    if (!DECIMAL.test(input)) {
      throw new ShardKitError('INVALID_ID', `${what} must be an unsigned decimal integer, got ${describe(input)}`);
    }
    value = BigInt(input);
  } else {
    throw new ShardKitError('INVALID_ID', `${what} must be a decimal string or bigint, got ${typeof input}`);
  }
  if (value < 0n) throw new ShardKitError('INVALID_ID', `${what} must not be negative`);
  if (value > U64_MAX) throw new ShardKitError('INVALID_ID', `${what} does not fit in 64 bits`);
  return value;
}

export function formatId(id: bigint): string {
  return id.toString(10);
}

/**
 * A JSON.stringify replacer that writes every bigint as its decimal string, as the HTTP API
 * does: `JSON.stringify(await kit.mappings.list(...), idReplacer)`. Without one, JSON.stringify
 * throws on a bigint (kit objects carry their own toJSON; list pages and lookups are plain data).
 */
export function idReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString(10) : value;
}

/** A short, log-safe rendering of hostile input for error messages. */
export function describe(input: string): string {
  const s = input.length > 40 ? `${input.slice(0, 40)}…` : input;
  return JSON.stringify(s);
}

/** Validates a small non-negative integer field (shard, type, ...) given as number, bigint or string. */
export function parseField(input: unknown, name: string, max: number, code: 'INVALID_ID' | 'INVALID_ARGUMENT' = 'INVALID_ARGUMENT'): number {
  let n: number;
  if (typeof input === 'number') n = input;
  else if (typeof input === 'bigint') n = input <= BigInt(Number.MAX_SAFE_INTEGER) && input >= 0n ? Number(input) : -1;
  else if (typeof input === 'string' && /^(0|[1-9][0-9]{0,15})$/.test(input)) n = Number(input);
  else throw new ShardKitError(code, `${name} must be an integer in 0..${max}`);
  if (!Number.isSafeInteger(n) || n < 0 || n > max) {
    throw new ShardKitError(code, `${name} must be an integer in 0..${max}, got ${String(input)}`);
  }
  return n;
}
