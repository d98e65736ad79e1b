import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CELL_TAG, cellKey, escapeComponent, parseCellKey, readInvertedTimestamp, rowPrefix, unescapeComponent, writeInvertedTimestamp } from '../../src/widecolumn/key-codec.js';

const bytes = fc.uint8Array({ minLength: 0, maxLength: 12 }).map((a) => Buffer.from(a));
// Biased towards the bytes the escaping is about.
const tricky = fc.array(fc.constantFrom(0x00, 0x01, 0x02, 0xfe, 0xff, 0x61), { maxLength: 8 }).map((a) => Buffer.from(a));
const component = fc.oneof(bytes, tricky);
const ts = fc.oneof(fc.integer({ min: 0, max: 2 ** 40 }), fc.constantFrom(0, 1, 2 ** 32 - 1, 2 ** 32, Number.MAX_SAFE_INTEGER));

function key(row: Buffer, col: Buffer, t: number): Buffer {
  return cellKey(rowPrefix(CELL_TAG, 7, 3, escapeComponent(row)), escapeComponent(col), t);
}

test('escaping round-trips any bytes and the terminator ends the component', () => {
  fc.assert(fc.property(component, component, (a, b) => {
    const both = Buffer.concat([escapeComponent(a), escapeComponent(b)]);
    const first = unescapeComponent(both, 0);
    assert.deepEqual(first.raw, a);
    assert.deepEqual(unescapeComponent(both, first.next).raw, b);
  }), { numRuns: 2000 });
});

test('bytewise key order = row order, then column order, then newest timestamp first', () => {
  fc.assert(fc.property(component, component, ts, component, component, ts, (r1, c1, t1, r2, c2, t2) => {
    const expected = Buffer.compare(r1, r2) || Buffer.compare(c1, c2) || Math.sign(t2 - t1);
    assert.equal(Math.sign(Buffer.compare(key(r1, c1, t1), key(r2, c2, t2))), expected);
  }), { numRuns: 5000 });
});

test('distinct (row, column, timestamp) never give the same key, and keys parse back', () => {
  fc.assert(fc.property(component, component, ts, component, component, ts, (r1, c1, t1, r2, c2, t2) => {
    const same = r1.equals(r2) && c1.equals(c2) && t1 === t2;
    assert.equal(key(r1, c1, t1).equals(key(r2, c2, t2)), same);
    const p = parseCellKey(key(r1, c1, t1));
    assert.equal(p.shard, 7);
    assert.equal(p.datasetId, 3);
    assert.equal(p.ts, t1);
    assert.deepEqual(unescapeComponent(p.rowEsc, 0).raw, r1);
    assert.deepEqual(unescapeComponent(p.colEsc, 0).raw, c1);
  }), { numRuns: 3000 });
});

test('a row\'s keys never fall inside another row\'s prefix range (no prefix collisions)', () => {
  fc.assert(fc.property(component, component, component, ts, (r1, r2, c, t) => {
    fc.pre(!r1.equals(r2));
    const p1 = rowPrefix(CELL_TAG, 7, 3, escapeComponent(r1));
    const k2 = key(r2, c, t);
    assert.equal(k2.subarray(0, p1.length).equals(p1), false);
  }), { numRuns: 3000 });
});

test('inverted timestamps round-trip across the 32-bit boundary', () => {
  const b = Buffer.alloc(8);
  for (const t of [0, 1, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 1_700_000_000_000, Number.MAX_SAFE_INTEGER]) {
    writeInvertedTimestamp(b, 0, t);
    assert.equal(readInvertedTimestamp(b, 0), t);
  }
});
