/**
 * The version of an object is a 64-bit hash of its stored JSON: the tables keep no version
 * column (the seed's layout), and equal content under one ID is the same representation anyway.
 * Not cryptographic on purpose: If-Match guards a client against its own lost updates, and a
 * client that wants to overwrite can simply omit it; an accidental collision is ~2^-64. It is
 * computed on every GET, where sha1 cost several times more.
 */
export function etagOf(text: string): string {
  let h1 = 0xdeadbeef ^ text.length;
  let h2 = 0x41c6ce57 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return base36(h2 >>> 0) + base36(h1 >>> 0);
}

const DIGITS = '0123456789abcdefghijklmnopqrstuvwxyz';

/**
 * `n.toString(36).padStart(7, '0')` for a uint32 (36^7 > 2^32), the etag's historical form.
 * Number#toString(36) goes through V8's generic double-to-radix conversion (fmod per digit):
 * it cost more than hashing the text.
 */
function base36(n: number): string {
  let s = '';
  for (let i = 0; i < 7; i++) {
    const q = Math.floor(n / 36);
    s = DIGITS[n - q * 36]! + s;
    n = q;
  }
  return s;
}
