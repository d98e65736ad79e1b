import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compact, type WideColumnStore } from '../../src/widecolumn/index.js';
import { openStore, plain, tempDir, TestClock } from './helpers.js';

/** Data records by kind: cells (tag 01), heads and write-log records (tag 02, log = 00 00 after the row). */
async function records(store: WideColumnStore): Promise<{ cells: number; heads: number; logs: number }> {
  const out = { cells: 0, heads: 0, logs: 0 };
  const snap = store.snapshot();
  try {
    for await (const { key } of snap.entries()) {
      if (key[0] === 0xff) continue;
      if (key[2] === 0x01) out.cells++;
      else {
        // Row keys in these tests have no zero bytes: the row ends at the first 00 01.
        const end = key.indexOf(Buffer.from([0x00, 0x01]), 7) + 2;
        if (key[end] === 0x00 && key[end + 1] === 0x00) out.logs++;
        else out.heads++;
      }
    }
  } finally {
    await snap.close();
  }
  return out;
}

/** skipBudget 0: a row with any column deeper than a read wants is read through its head region. */
async function withStore(foldAfter: number, fn: (store: WideColumnStore, clock: TestClock) => Promise<void>): Promise<void> {
  const tmp = tempDir();
  const clock = new TestClock();
  const store = await openStore(tmp.dir, { clock: clock.now, foldAfter, scanSkipBudget: 0 });
  try {
    await fn(store, clock);
  } finally {
    await store.close();
    tmp.cleanup();
  }
}

const tenColumns = (v: string) => Array.from({ length: 10 }, (_, c) => ({ column: `c${c}`, value: `${v}-${c}` }));

test('a put writes its cells and one write-log record; every foldAfter puts, or on a read of a deep row, the log becomes one head per column', () => withStore(5, async (store) => {
  await store.putDataset('d', { maxVersions: 10 });
  for (let i = 0; i < 4; i++) await store.putRow('d', 'row', tenColumns(`v${i}`));
  assert.deepEqual(await records(store), { cells: 40, heads: 0, logs: 4 }, 'no head is written by a put');
  await store.putRow('d', 'row', tenColumns('v4'));
  await store.foldsSettled();
  assert.deepEqual(await records(store), { cells: 50, heads: 10, logs: 0 }, 'the fifth put folded the log');
  const latest = (v: string) => Array.from({ length: 10 }, (_, c) => [`c${c}`, [`${v}-${c}`]]);
  assert.deepEqual(plain((await store.getRow('d', 'row')).columns).map(([c, cells]) => [c, cells.map(([, v]) => v)]), latest('v4'));
  // Two more puts: the deep row is read from heads + log (the logged cells' values from the
  // cells), and that read folds the log.
  await store.putRow('d', 'row', tenColumns('v5'));
  await store.putRow('d', 'row', tenColumns('v6'));
  assert.equal((await records(store)).logs, 2);
  assert.deepEqual(plain((await store.getRow('d', 'row')).columns).map(([c, cells]) => [c, cells.map(([, v]) => v)]), latest('v6'));
  await store.foldsSettled();
  assert.deepEqual(await records(store), { cells: 70, heads: 10, logs: 0 });
  assert.deepEqual(plain((await store.getRow('d', 'row')).columns).map(([c, cells]) => [c, cells.map(([, v]) => v)]), latest('v6'));
  // A shallow row is read from its cells: its log waits for foldAfter puts.
  await store.putRow('d', 'shallow', [{ column: 'a', value: '1' }]);
  assert.deepEqual(plain((await store.getRow('d', 'shallow')).columns).map(([c, cells]) => [c, cells.map(([, v]) => v)]), [['a', ['1']]]);
  await store.foldsSettled();
  assert.equal((await records(store)).logs, 1);
  // latestIndex false: cells only.
  await store.putDataset('plain', { latestIndex: false });
  await store.putRow('plain', 'row', tenColumns('p'));
  assert.deepEqual(await records(store), { cells: 81, heads: 10, logs: 1 });
}));

test('a cell written again at the same timestamp after a fold: the later value wins on every read path, before and after the next fold', () => withStore(1000, async (store, clock) => {
  await store.putDataset('d', { maxVersions: 5 });
  const t = clock.t - 1000;
  await store.putRow('d', 'row', [{ column: 'c', value: 'first', timestamp: t }, { column: 'c', value: 'older', timestamp: t - 1 }, { column: 'other', value: 'o' }]);
  await compact(store);
  assert.deepEqual(await records(store), { cells: 3, heads: 2, logs: 0 });
  await store.getRow('d', 'row'); // finds the row deep: later reads go to its head region at once
  await store.putRow('d', 'row', [{ column: 'c', value: 'second', timestamp: t }]);
  const paths = async (): Promise<string[]> => [
    (await store.getRow('d', 'row')).columns.find((c) => c.column === 'c')!.cells[0]!.value.toString(),
    (await store.getRow('d', 'row', { columns: ['c'] })).columns[0]!.cells[0]!.value.toString(),
    (await store.getRow('d', 'row', { marker: Buffer.from('b').toString('base64url') })).columns[0]!.cells[0]!.value.toString(),
    (await store.getRow('d', 'row', { versions: 2 })).columns[0]!.cells[0]!.value.toString(),
  ];
  assert.deepEqual(await paths(), ['second', 'second', 'second', 'second']);
  await store.foldsSettled();
  await compact(store);
  assert.deepEqual(await records(store), { cells: 3, heads: 2, logs: 0 });
  assert.deepEqual(await paths(), ['second', 'second', 'second', 'second']);
}));

test('a backfill older than the head does not replace it; deleting a column that is only in the log removes it everywhere', () => withStore(1000, async (store, clock) => {
  await store.putDataset('d', { maxVersions: 5 });
  await store.putRow('d', 'row', [{ column: 'c', value: 'new', timestamp: clock.t }]);
  await compact(store);
  const put = await store.putRow('d', 'row', [{ column: 'c', value: 'old', timestamp: clock.t - 5000 }, { column: 'logonly', value: 'x' }]);
  assert.deepEqual(plain((await store.getRow('d', 'row')).columns), [['c', [[clock.t, 'new']]], ['logonly', [[put.timestamp!, 'x']]]]);
  await store.deleteRow('d', 'row', ['logonly']);
  assert.deepEqual(await records(store), { cells: 2, heads: 1, logs: 0 }, 'the delete folded the log first');
  for (const q of [{}, { columns: ['logonly', 'c'] }, { versions: 3 }]) {
    assert.deepEqual((await store.getRow('d', 'row', q)).columns.map((c) => c.column), ['c'], JSON.stringify(q));
  }
  assert.deepEqual(plain((await store.getRow('d', 'row', { versions: 3 })).columns), [['c', [[clock.t, 'new'], [clock.t - 5000, 'old']]]]);
}));

test('reads racing background folds never miss or resurrect a column (foldAfter 1: a fold after every put)', () => withStore(1, async (store) => {
  await store.putDataset('d', { maxVersions: 3 });
  const expected = new Map<string, string>();
  for (let i = 0; i < 150; i++) {
    const column = `c${String(i % 23).padStart(2, '0')}`;
    const value = `v${i}`;
    await store.putRow('d', 'row', [{ column, value }]);
    expected.set(column, value);
    // These run while the fold of this put is in flight.
    const want = [...expected].sort(([a], [b]) => (a < b ? -1 : 1));
    const [all, named, page2, deep] = await Promise.all([
      store.getRow('d', 'row'),
      store.getRow('d', 'row', { columns: [column, 'c00', 'zz'] }),
      store.getRow('d', 'row', { limit: 100, marker: Buffer.from('c10').toString('base64url') }),
      store.getRow('d', 'row', { versions: 2 }),
    ]);
    assert.deepEqual(all.columns.map((c) => [c.column, c.cells[0]!.value.toString()]), want, `all columns after put ${i}`);
    assert.deepEqual(named.columns.map((c) => [c.column, c.cells[0]!.value.toString()]), want.filter(([c]) => c === column || c === 'c00'), `named after put ${i}`);
    assert.deepEqual(page2.columns.map((c) => c.column), want.map(([c]) => c).filter((c) => c > 'c10'), `after marker, put ${i}`);
    assert.deepEqual(deep.columns.map((c) => [c.column, c.cells[0]!.value.toString()]), want, `versions=2 after put ${i}`);
  }
  await store.foldsSettled();
  assert.equal((await records(store)).logs, 0);
}));

test('a deep row (200 versions per column) is read from heads and log, not by scanning its versions', () => withStore(16, async (store, clock) => {
  await store.putDataset('d', { maxVersions: 1000 });
  for (let v = 0; v < 200; v++) await store.putRow('d', 'deep', tenColumns(`v${v}`));
  await store.putRow('d', 'deep', [{ column: 'c3', value: 'latest' }]);
  await store.putRow('d', 'deep', [{ column: 'c3', value: 'backfill', timestamp: clock.t - 60_000 }]);
  await store.foldsSettled();
  const r = await store.getRow('d', 'deep');
  assert.deepEqual(r.columns.map((c) => c.cells[0]!.value.toString()), Array.from({ length: 10 }, (_, c) => (c === 3 ? 'latest' : `v199-${c}`)));
  const counts = await records(store);
  assert.equal(counts.cells, 2002);
  assert.ok(counts.logs < 16, `the log stays short (${counts.logs} records)`);
  assert.equal(counts.heads, 10);
}));

test('a deep row read with the columns it listed last time (read beside the directory scan) still follows added, deleted and rewritten columns', () => withStore(1000, async (store, clock) => {
  await store.putDataset('d', { maxVersions: 1000 });
  const t = clock.t - 10_000;
  const cols = ['a', 'b', 'c'];
  await store.batchPutRows('d', [{ row: 'r', items: Array.from({ length: 3 * 40 }, (_, k) => ({ column: cols[k % 3]!, value: `${cols[k % 3]}${Math.floor(k / 3)}`, timestamp: t + Math.floor(k / 3) })) }]);
  const newest2 = (col: string) => [[t + 39, `${col}39`], [t + 38, `${col}38`]];
  const v2 = async () => plain((await store.getRow('d', 'r', { versions: 2 })).columns);
  const expected: Array<[string, Array<[number, string]>]> = cols.map((c) => [c, newest2(c)] as [string, Array<[number, string]>]);
  // The first read finds the row deep and lists its columns; the second reads them at once.
  assert.deepEqual(await v2(), expected, 'first read');
  assert.deepEqual(await v2(), expected, 'second read (same columns)');
  // A newer cell in a listed column: same column set, the early reads see it (same snapshot).
  await store.putRow('d', 'r', [{ column: 'b', value: 'b-new', timestamp: t + 100 }]);
  expected[1] = ['b', [[t + 100, 'b-new'], [t + 39, 'b39']]];
  assert.deepEqual(await v2(), expected, 'after a newer cell in b');
  // A new column (only in the write log): the directory lists four, the guess had three.
  await store.putRow('d', 'r', [{ column: 'bb', value: 'bb1', timestamp: t + 5 }]);
  expected.splice(2, 0, ['bb', [[t + 5, 'bb1']]]);
  assert.deepEqual(await v2(), expected, 'after adding bb');
  assert.deepEqual(await v2(), expected, 'after adding bb, again');
  // A deleted column: the directory lists three again, not the ones guessed.
  await store.deleteRow('d', 'r', ['a']);
  expected.shift();
  assert.deepEqual(await v2(), expected, 'after deleting a');
  // Same number of columns, another name: a replaced by aa.
  await store.putRow('d', 'r', [{ column: 'aa', value: 'aa1', timestamp: t + 6 }]);
  await store.deleteRow('d', 'r', ['bb']);
  expected.splice(1, 1);
  expected.unshift(['aa', [[t + 6, 'aa1']]]);
  assert.deepEqual(await v2(), expected, 'after replacing bb by aa');
  await store.foldsSettled();
  assert.deepEqual(await v2(), expected, 'after the fold');
  // Pages: limit 1 reads a shorter chunk than the columns remembered.
  const page1 = await store.getRow('d', 'r', { versions: 2, limit: 1 });
  assert.deepEqual(plain(page1.columns), expected.slice(0, 1), 'page 1');
  const page2 = await store.getRow('d', 'r', { versions: 2, limit: 5, marker: page1.marker! });
  assert.deepEqual(plain(page2.columns), expected.slice(1), 'page 2');
}));

test('a logged cell that is gone (compacted away meanwhile): reads and folds take the column\'s newest remaining cell, agreeing with the cell path', () => withStore(1000, async (store, clock) => {
  await store.putDataset('d', { maxVersions: 5 });
  const t = clock.t;
  await store.putRow('d', 'row', [{ column: 'deep', value: 'd1', timestamp: t - 3 }, { column: 'deep', value: 'd2', timestamp: t - 2 }]);
  await store.putRow('d', 'row', [{ column: 'c', value: 'newest', timestamp: t }]);
  await store.putRow('d', 'row', [{ column: 'c', value: 'backfill', timestamp: t - 100 }]);
  // What compaction's range delete does to an expired newest cell (white box: the cell key).
  const ctx = store.context(store.dataset('d'), 'row');
  const { cellKey, escapeComponent } = await import('../../src/widecolumn/key-codec.js');
  await store.db.delete(cellKey(ctx.cellPrefix, escapeComponent(Buffer.from('c')), t));
  const expected = [['c', [[t - 100, 'backfill']]], ['deep', [[t - 2, 'd2']]]];
  assert.deepEqual(plain((await store.getRow('d', 'row', { versions: 1, start: 0, end: t + 1 })).columns), expected, 'the cell path');
  assert.deepEqual(plain((await store.getRow('d', 'row')).columns), expected, 'heads + log');
  await store.foldsSettled();
  assert.equal((await records(store)).logs, 0, 'that read folded the log');
  assert.deepEqual(plain((await store.getRow('d', 'row')).columns), expected, 'heads after the fold');
}));

test('write-log records: (column, timestamp) lists round-trip for hostile names; log keys sort before every head key of the row; malformed records are refused', async () => {
  const { decodeLog, encodeLog, escapeComponent, isLogKey, logKey, logRange, rowPrefix } = await import('../../src/widecolumn/key-codec.js');
  const names = ['', '\u0000', '\u0000\u0000', '\u0000\u0001', 'a\u0000b', '\uffff', '😀', 'x'.repeat(1024)];
  const cells = names.map((n, i) => ({ colEsc: escapeComponent(Buffer.from(n, 'utf8')), ts: [0, 1, 2 ** 32, 2 ** 53 - 1][i % 4]! }));
  assert.deepEqual(decodeLog(encodeLog(cells)).map((c) => [c.colEsc.toString('hex'), c.ts]), cells.map((c) => [c.colEsc.toString('hex'), c.ts]));
  const head = rowPrefix(0x02, 7, 3, escapeComponent(Buffer.from('row\u0000', 'utf8')));
  const range = logRange(head);
  for (const seq of [0, 1, 2 ** 53 - 1]) {
    const k = logKey(head, seq);
    assert.ok(isLogKey(k, head.length));
    assert.ok(Buffer.compare(k, range.gte) >= 0 && Buffer.compare(k, range.lt) < 0);
    for (const c of cells) {
      const h = Buffer.concat([head, c.colEsc]);
      assert.equal(isLogKey(h, head.length), false, `head of ${c.colEsc.toString('hex')}`);
      assert.ok(Buffer.compare(h, range.lt) >= 0, 'heads sort after the log range');
    }
  }
  assert.ok(Buffer.compare(logKey(head, 2), logKey(head, 1)) < 0, 'newer sequence first');
  const good = encodeLog(cells.slice(0, 2));
  for (const bad of [Buffer.alloc(0), good.subarray(0, good.length - 1), Buffer.from([0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff])]) assert.throws(() => decodeLog(bad), /malformed/);
});

test('one delete batch with a whole row and then some of its columns leaves nothing of the row', () => withStore(1000, async (store) => {
  await store.putDataset('d', { maxVersions: 5 });
  for (let v = 0; v < 3; v++) await store.putRow('d', 'row', tenColumns(`v${v}`));
  await store.getRow('d', 'row'); // deep: later reads use the head region
  await store.foldsSettled();
  await store.putRow('d', 'row', tenColumns('v3'));
  await store.batchDeleteRows('d', [{ row: 'row' }, { row: 'row', columns: ['c1'] }]);
  assert.deepEqual(await records(store), { cells: 0, heads: 0, logs: 0 });
  assert.deepEqual((await store.getRow('d', 'row')).columns, []);
}));

test('foldAfter must be a positive integer', async () => {
  const tmp = tempDir();
  try {
    for (const foldAfter of [0, -1, 1.5, Number.NaN]) {
      await assert.rejects(openStore(tmp.dir, { foldAfter }), (err: { code?: string }) => err.code === 'INVALID_CONFIG', String(foldAfter));
    }
  } finally {
    tmp.cleanup();
  }
});
