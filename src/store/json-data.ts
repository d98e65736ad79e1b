import { ShardKitError } from '../errors.js';
import type { JsonObject } from './types.js';

export function isPlainObject(value: unknown): value is JsonObject {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * How deep object data may nest: MySQL's limit for its JSON type, so data written here stays
 * portable between the backends; and the merge patch (recursive) can never exhaust the stack.
 */
export const MAX_DATA_DEPTH = 100;

/**
 * Refuses values JSON would silently change: numbers that are not finite (`1e400` parses to
 * Infinity, which JSON.stringify writes as null), and nesting deeper than MAX_DATA_DEPTH.
 * Iterative, so no input can overflow the stack while it is checked.
 */
export function checkJsonValue(value: unknown, what: string): void {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new ShardKitError('INVALID_ARGUMENT', `${what} holds a number JSON cannot represent (${v})`);
    } else if (v !== null && typeof v === 'object') {
      if (depth > MAX_DATA_DEPTH) throw new ShardKitError('INVALID_ARGUMENT', `${what} nests deeper than ${MAX_DATA_DEPTH} levels`);
      for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
    }
  }
}

/** Serializes object data; it must be a JSON object, and `active: false` is reserved for deletes. */
export function encodeData(data: unknown, what = 'data'): string {
  if (!isPlainObject(data)) throw new ShardKitError('INVALID_ARGUMENT', `${what} must be a JSON object`);
  checkJsonValue(data, what);
  if (Object.hasOwn(data, 'active') && data.active !== true) {
    throw new ShardKitError('INVALID_ARGUMENT', `${what}.active is reserved: objects are deactivated by delete`);
  }
  let text: string | undefined;
  try {
    text = JSON.stringify(data);
  } catch (err) {
    throw new ShardKitError('INVALID_ARGUMENT', `${what} is not serializable as JSON: ${(err as Error).message}`);
  }
  return text!;
}

/** Parses stored text; a soft-deleted object (`"active": false`) reads as absent. */
export function decodeActive(text: string): JsonObject | undefined {
  const data = JSON.parse(text) as JsonObject;
  return data.active === false ? undefined : data;
}

/**
 * Whether stored text is a live object, parsing only when it mentions "active" (any member
 * named active, at any depth, contains that quoted word; most objects never do).
 */
export function liveData(text: string): { live: boolean; data: JsonObject | undefined } {
  if (!text.includes('"active"')) return { live: true, data: undefined };
  const data = decodeActive(text);
  return { live: data !== undefined, data };
}
