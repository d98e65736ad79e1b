import { ShardKitError } from '../../errors.js';

/** memcached's limit on a key, in bytes. */
export const MAX_MEMCACHED_KEY_BYTES = 250;

// Control characters, space and other whitespace would break memcached's text protocol (and
// are refused by servers that enforce it even on the binary one).
const FORBIDDEN = /[\s\x00-\x1f\x7f]/u;

/**
 * Our keys are built only from validated IDs and config names, so a bad key is a bug: it is
 * refused loudly rather than hashed or truncated (which could alias two keys).
 */
export function checkMemcachedKey(key: string): string {
  if (typeof key !== 'string' || key.length === 0) throw new ShardKitError('INVALID_ARGUMENT', 'memcached keys must be non-empty strings');
  const bytes = Buffer.byteLength(key, 'utf8');
  if (bytes > MAX_MEMCACHED_KEY_BYTES) {
    throw new ShardKitError('INVALID_ARGUMENT', `memcached key ${JSON.stringify(key.slice(0, 40))}... is ${bytes} bytes; the limit is ${MAX_MEMCACHED_KEY_BYTES}`);
  }
  if (FORBIDDEN.test(key)) throw new ShardKitError('INVALID_ARGUMENT', `memcached key ${JSON.stringify(key)} contains whitespace or a control character`);
  return key;
}
