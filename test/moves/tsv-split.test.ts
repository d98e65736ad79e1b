/**
 * The move's text copy splits one batch-client session's output into its tables' rows
 * (src/moves/mariadb/tsv-split.ts). Whatever the pieces the pipe cuts it into, each table gets
 * exactly its bytes and its row count, and markers are found only at a line's start: rows that
 * hold the boundary's first bytes, or the boundary past a line's start, are rows.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TsvSplitter } from '../../src/moves/mariadb/tsv-split.js';

const B = '~shardkit-copy-0123456789abcdef~';

/** Tables' bytes and rows as the splitter hands them on, fed in pieces of the given sizes. */
function split(text: Buffer, sizes: (i: number) => number): Array<{ tag: string; bytes: string; rows: number }> {
  const out: Array<{ tag: string; bytes: string; rows: number }> = [{ tag: '(before)', bytes: '', rows: 0 }];
  const s = new TsvSplitter(Buffer.from(B, 'latin1'), {
    marker: (tag) => out.push({ tag, bytes: '', rows: 0 }),
    data: (bytes, rows) => {
      const t = out[out.length - 1]!;
      t.bytes += bytes.toString('latin1');
      t.rows += rows;
    },
  });
  for (let at = 0, i = 0; at < text.length; i++) {
    const n = Math.max(1, sizes(i));
    s.feed(text.subarray(at, at + n));
    at += n;
  }
  s.end();
  return out;
}

const tables = [
  { tag: 'open', rows: [] as string[] },
  // Rows that start like the boundary, hold it after a line's start, or are empty fields.
  { tag: '0', rows: ['1\t~shardkit\t\\N', '2\t' + B + '0', '~\t~shardkit-copy-0123', '~shardkit-copy-0123456789abcdeX~1', '\t\t'] },
  { tag: '1', rows: [] },
  { tag: '2', rows: ['x\\ty\\\\\\n\\0\r', '\u00e9\u00ff\u0001'] },
  { tag: '17', rows: Array.from({ length: 50 }, (_, i) => `${i}\t${'v'.repeat(i * 7)}`) },
];
const text = Buffer.from(tables.map((t) => `${B}${t.tag}\n${t.rows.map((r) => `${r}\n`).join('')}`).join(''), 'latin1');
const want = [{ tag: '(before)', bytes: '', rows: 0 }, ...tables.map((t) => ({ tag: t.tag, bytes: t.rows.map((r) => `${r}\n`).join(''), rows: t.rows.length }))];

test('whole, and cut at every position: each table gets exactly its lines and count', () => {
  assert.deepEqual(split(text, () => text.length), want);
  for (let cut = 1; cut < text.length; cut++) assert.deepEqual(split(text, (i) => (i === 0 ? cut : text.length)), want, `cut at ${cut}`);
});

test('fed in pieces of 1 to 40 bytes', () => {
  for (let size = 1; size <= 40; size++) assert.deepEqual(split(text, () => size), want, `pieces of ${size}`);
  let s = 7;
  const rand = () => ((s = (s * 1103515245 + 12345) >>> 0) % 23) + 1;
  assert.deepEqual(split(text, rand), want);
});

test('output that ends inside a held prefix hands those bytes on as rows', () => {
  const tail = Buffer.from(`${B}0\nrow\n~shardkit-co`, 'latin1');
  const got = split(tail, () => 3);
  assert.deepEqual(got.slice(1), [{ tag: '0', bytes: 'row\n~shardkit-co', rows: 1 }]);
});
