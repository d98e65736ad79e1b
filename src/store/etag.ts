import { createHash } from 'node:crypto';

/**
 * The version of an object is a digest of its stored JSON: the tables keep no version column
 * (the seed's layout), and equal content under one ID is the same representation anyway.
 */
export function etagOf(text: string): string {
  return createHash('sha1').update(text).digest('base64url');
}
