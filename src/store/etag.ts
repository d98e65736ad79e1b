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
  return (h2 >>> 0).toString(36).padStart(7, '0') + (h1 >>> 0).toString(36).padStart(7, '0');
}
