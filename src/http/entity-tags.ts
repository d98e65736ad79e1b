import { ShardKitError } from '../errors.js';

/** ETag of an object: its etag token quoted (a strong validator). */
export function formatEtag(etag: string): string {
  return `"${etag}"`;
}

/** One entity tag of a header: `*`, `"opaque"` or `W/"opaque"` (RFC 9110 §8.8.3), then a comma or the end. */
const TAG = /\s*(?:(\*)|(W\/)?"([\x21\x23-\x7e\x80-\xff]*)")\s*(?:,|$)/y;

export interface EntityTag {
  /** The opaque part without quotes (empty for the wildcard). */
  opaque: string;
  weak: boolean;
  /** The header's `*`: any current representation. */
  any: boolean;
}

/**
 * The entity tags of an If-Match / If-None-Match header. A header that is not a list of
 * well-formed tags is INVALID_ARGUMENT (400): an unquoted tag must not read as "has changed".
 * `*` is the whole field or nothing (RFC 9110: `"*" / #entity-tag`): in `"zz", *` it made the
 * condition hold whatever the other tags said, and a lost update went through.
 */
export function parseEntityTags(header: string | string[] | undefined, name: string): EntityTag[] | undefined {
  if (header === undefined) return undefined;
  const text = Array.isArray(header) ? header.join(',') : header;
  const out: EntityTag[] = [];
  TAG.lastIndex = 0;
  while (TAG.lastIndex < text.length) {
    const at = TAG.lastIndex;
    const m = TAG.exec(text);
    if (m === null || TAG.lastIndex === at) {
      // Empty list elements (", ,") are allowed by the list syntax; anything else is malformed.
      const rest = text.slice(at);
      if (/^[\s,]*$/.test(rest)) break;
      throw new ShardKitError('INVALID_ARGUMENT', `${name} must be * or a list of quoted entity tags ("..." or W/"..."), got ${JSON.stringify(text.slice(0, 80))}`);
    }
    out.push(m[1] !== undefined ? { opaque: '', weak: false, any: true } : { opaque: m[3]!, weak: m[2] !== undefined, any: false });
  }
  if (out.length === 0) throw new ShardKitError('INVALID_ARGUMENT', `${name} must be * or a list of quoted entity tags`);
  // Two header lines (`"zz"` and `*`) arrive joined into one list, and are refused the same way.
  if (out.length > 1 && out.some((t) => t.any)) throw new ShardKitError('INVALID_ARGUMENT', `${name} must be * alone or a list of quoted entity tags, not both`);
  return out;
}

/** If-Match uses the strong comparison (RFC 9110 §13.1.1): weak tags never match. Strings for the kit. */
export function ifMatchTags(header: string | string[] | undefined): string[] | undefined {
  const tags = parseEntityTags(header, 'If-Match');
  // A weak tag can never match strongly, nor can a quoted "*" mean any: both become a value no
  // etag equals (etags are base-36 text, without '/').
  return tags?.map((t) => (t.any ? '*' : t.weak || t.opaque === '*' ? `W/${t.opaque}` : t.opaque));
}

/** If-None-Match uses the weak comparison (RFC 9110 §13.1.2): W/"x" matches the etag "x". Strings for the kit. */
export function ifNoneMatchTags(header: string | string[] | undefined): string[] | undefined {
  const tags = parseEntityTags(header, 'If-None-Match');
  // A quoted "*" is a tag, not the wildcard: its quoted form is a value no etag equals.
  return tags?.map((t) => (t.any ? '*' : t.opaque === '*' ? '"*"' : t.opaque));
}

/** Whether If-None-Match names `etag` (or is `*`): a GET answers 304, a write 412. */
export function ifNoneMatchHits(header: string | string[] | undefined, etag: string): boolean {
  const tags = ifNoneMatchTags(header);
  return tags !== undefined && (tags.includes('*') || tags.includes(etag));
}
