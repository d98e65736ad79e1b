import * as crypto from 'node:crypto';

/** One-shot crypto.hash (Node >= 20.12) is twice as fast as createHash for short texts. */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'base64url') => string }).hash;

/**
 * The version of an object is a digest of its stored JSON: the tables keep no version column
 * (the seed's layout), and equal content under one ID is the same representation anyway.
 */
export function etagOf(text: string): string {
  return oneShot !== undefined ? oneShot('sha1', text, 'base64url') : crypto.createHash('sha1').update(text).digest('base64url');
}
