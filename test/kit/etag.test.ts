import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { etagOf } from '../../src/kit/etag.js';

/** The etag as first written (Number#toString(36)): stored etags held by clients must not change. */
function reference(text: string): string {
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

test('etagOf is the 14-character base-36 hash it always was', () => {
  for (const text of ['', '{}', '{"a":1}', '{"title":"héllo ✓"}', 'x'.repeat(10_000)]) {
    assert.equal(etagOf(text), reference(text), text.slice(0, 20));
    assert.match(etagOf(text), /^[0-9a-z]{14}$/);
  }
  fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => etagOf(text) === reference(text)), { numRuns: 20000 });
});
