import { ShardKitError } from '../errors.js';
import type { JsonObject } from './types.js';

export function isPlainObject(value: unknown): value is JsonObject {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * How deep new object data and merge patches may nest. The merge patch recurses along the
 * patch's own objects, so bounding patches bounds it; 100 levels is also where many JSON parsers
 * of the clients that read the data stop (and MySQL's limit for its JSON type, for data that
 * moves there).
 */
export const MAX_DATA_DEPTH = 100;

/**
 * Refuses values JSON would silently change: numbers that are not finite (`1e400` parses to
 * Infinity, which JSON.stringify writes as null), and nesting deeper than `maxDepth`. Iterative,
 * so no input can overflow the stack while it is checked; run it on acyclic values only (after
 * JSON.stringify succeeded, or on parsed JSON).
 */
export function checkJsonValue(value: unknown, what: string, maxDepth = MAX_DATA_DEPTH): void {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new ShardKitError('INVALID_ARGUMENT', `${what} holds a number JSON cannot represent (${v})`);
    } else if (v !== null && typeof v === 'object') {
      if (depth > maxDepth) throw new ShardKitError('INVALID_ARGUMENT', `${what} nests deeper than ${maxDepth} levels`);
      for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
    }
  }
}

/**
 * Serializes object data; it must be a JSON object, and `active: false` is reserved for deletes.
 * `maxDepth`: MAX_DATA_DEPTH for new data; an update's result passes Infinity, so objects stored
 * deeper before the limit existed can still be updated (their patches stay bounded).
 */
export function encodeData(data: unknown, what = 'data', maxDepth = MAX_DATA_DEPTH): string {
  if (!isPlainObject(data)) throw new ShardKitError('INVALID_ARGUMENT', `${what} must be a JSON object`);
  if (Object.hasOwn(data, 'active') && data.active !== true) {
    throw new ShardKitError('INVALID_ARGUMENT', `${what}.active is reserved: objects are deactivated by delete`);
  }
  let text: string | undefined;
  try {
    // First: it refuses cycles (which the walk below would never finish) and BigInt.
    text = JSON.stringify(data);
  } catch (err) {
    // Nesting deep enough to overflow JSON.stringify's stack (about 4,500 arrays in a request's
    // JSON) is what the depth limit refuses; V8's "Maximum call stack size exceeded" says neither.
    if (err instanceof RangeError) throw new ShardKitError('INVALID_ARGUMENT', `${what} nests deeper than ${Number.isFinite(maxDepth) ? maxDepth : 'JSON can be written'} levels`);
    throw new ShardKitError('INVALID_ARGUMENT', `${what} is not serializable as JSON: ${(err as Error).message}`);
  }
  checkJsonValue(data, what, maxDepth);
  // Text of up to a third of the limit in UTF-16 units cannot be over it in UTF-8 bytes.
  if (text!.length > MAX_DATA_BYTES / 3) {
    const bytes = Buffer.byteLength(text!);
    if (bytes > MAX_DATA_BYTES) throw new ShardKitError('PAYLOAD_TOO_LARGE', `${what} is ${bytes} bytes as JSON, more than the ${MAX_DATA_BYTES} (8 MiB) an object may hold`, { details: { bytes, limit: MAX_DATA_BYTES } });
  }
  return text!;
}

/**
 * The most an object's JSON may take, whatever the backend: MariaDB's column is a MEDIUMTEXT
 * (16 MiB) and its default max_allowed_packet 16 MiB. A statement past the packet size is not
 * refused by the server: it drops the connection, which read as the host being down (every shard
 * of the host answered SHARD_UNAVAILABLE for a while), and a merge patch can grow an object past
 * it 1 MiB at a time. Half the column leaves room for the statement around the value.
 */
export const MAX_DATA_BYTES = 8 * 1024 * 1024;

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
