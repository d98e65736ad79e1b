// The decoder of the MyRocks latest read (myrocks-reads.ts collectLatest): a pure function, so
// no server here; the conformance suite on MyRocks (myrocks-engine-suite.test.ts) runs it
// against real servers with limits, markers and TTL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { collectLatest, latestStatement, type LatestRow } from '../../src/widecolumn/myrocks/myrocks-reads.js';

const row = (col: string, hts: string, v: string): LatestRow => ({ col: Buffer.from(col), hts, v: Buffer.from(v) });

test('collectLatest: column names as strings, timestamps as numbers, no marker when the page is not full', () => {
  const page = collectLatest('r', [row('a', '5', 'x'), row('b', '7', 'y')], 10);
  assert.deepEqual(page, { row: 'r', columns: [
    { column: 'a', cells: [{ timestamp: 5, value: Buffer.from('x') }] },
    { column: 'b', cells: [{ timestamp: 7, value: Buffer.from('y') }] },
  ], marker: null });
});

test('collectLatest: limit + 1 rows give a page of limit columns and a marker at the last one', () => {
  const page = collectLatest('r', [row('a', '1', 'x'), row('b', '2', 'y'), row('c', '3', 'z')], 2);
  assert.deepEqual(page.columns.map((c) => c.column), ['a', 'b']);
  assert.equal(page.marker, Buffer.from('b').toString('base64url'));
});

test('collectLatest: rows out of column order (bytewise) are sorted before the page is cut', () => {
  // 'é' (0xC3 0xA9) sorts after 'z' bytewise.
  const page = collectLatest('r', [row('é', '1', '1'), row('a', '2', '2'), row('z', '3', '3')], 2);
  assert.deepEqual(page.columns.map((c) => c.column), ['a', 'z']);
  assert.equal(page.marker, Buffer.from('z').toString('base64url'));
});

test('latestStatement: values are parameters, the page size + 1 is the LIMIT', () => {
  const hh = Buffer.alloc(32, 1);
  const { sql, values } = latestStatement('`wc00001`.`events`', hh, null, 123, 101);
  assert.match(sql, /^SELECT col, hts, v FROM `wc00001`\.`events` WHERE rh = \? AND col > \? AND hts >= \? ORDER BY col LIMIT 101$/);
  assert.deepEqual(values, [hh, Buffer.alloc(0), 123]);
});
