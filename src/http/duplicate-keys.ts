import { ShardKitError } from '../errors.js';

/**
 * A member name twice in one object of a request body is refused (RFC 7493, I-JSON: names MUST
 * be unique). JSON.parse keeps the last one silently, and a proxy or a client library in front
 * of the service may keep the first: `{"data":{…},"data":{…}}` would be one write to them and
 * another to us. Names compare after unescaping (`"a"` and `"\u0061"` are the same name).
 */
export function checkDuplicateKeys(text: string): void {
  const key = duplicateKey(text);
  if (key !== undefined) {
    throw new ShardKitError('INVALID_JSON', `the body names ${JSON.stringify(key.length > 60 ? `${key.slice(0, 60)}…` : key)} twice in one object: send each member once`);
  }
}

/** The first name that appears twice in one object of valid JSON text, if any. */
export function duplicateKey(text: string): string | undefined {
  // One entry per open container: the names seen so far in an object, null in an array.
  const open: (Set<string> | null)[] = [];
  let expectName = false;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b) {
      open.push(new Set());
      expectName = true;
    } else if (c === 0x5b) {
      open.push(null);
      expectName = false;
    } else if (c === 0x7d || c === 0x5d) {
      open.pop();
      expectName = false;
    } else if (c === 0x2c) {
      expectName = open.length > 0 && open[open.length - 1] !== null;
    } else if (c === 0x22) {
      // The closing quote: the next one not escaped (an even run of backslashes before it).
      const start = i;
      let end = text.indexOf('"', start + 1);
      for (;;) {
        if (end < 0) return undefined; // not JSON text (the parser refused it before this runs)
        let back = end - 1;
        while (text.charCodeAt(back) === 0x5c) back--;
        if ((end - 1 - back) % 2 === 0) break;
        end = text.indexOf('"', end + 1);
      }
      i = end;
      if (expectName) {
        let escaped = false;
        for (let k = start + 1; k < end && !escaped; k++) escaped = text.charCodeAt(k) === 0x5c;
        const name = escaped ? (JSON.parse(text.slice(start, end + 1)) as string) : text.slice(start + 1, end);
        const names = open[open.length - 1]!;
        if (names.has(name)) return name;
        names.add(name);
        expectName = false;
      }
    }
  }
  return undefined;
}
