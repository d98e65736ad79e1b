/** ETag of an object: its etag token quoted (a strong validator). */
export function formatEtag(etag: string): string {
  return `"${etag}"`;
}

/**
 * The entity tags of an If-Match / If-None-Match header, unquoted: `*` stays `*`; weak tags keep
 * their `W/` prefix so they never equal a strong etag (If-Match uses the strong comparison).
 */
export function parseEntityTags(header: string | string[] | undefined): string[] | undefined {
  if (header === undefined) return undefined;
  const text = Array.isArray(header) ? header.join(',') : header;
  const out: string[] = [];
  for (const raw of text.split(',')) {
    const tag = raw.trim();
    if (tag === '') continue;
    if (tag === '*') out.push('*');
    else if (tag.startsWith('"') && tag.endsWith('"') && tag.length >= 2) out.push(tag.slice(1, -1));
    else out.push(tag.startsWith('W/') ? tag : `W/${tag}`);
  }
  return out;
}
