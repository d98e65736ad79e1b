// The heads' lists of newest timestamps (format 1, key-codec.ts encodeHead): a deep row's
// versions=N read is answered by one scan of the head region and one multi-get of exact cell
// keys (row-reader.ts planFromHead), and falls back to a bounded iterator per column whenever
// the list cannot answer exactly: heads written before the lists, reads deeper than the list,
// cells deleted or compacted away since the fold.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compact, type WideColumnStore } from '../../src/widecolumn/index.js';
import { cellKey, concat, decodeHead, encodeHead, escapeComponent, headValue } from '../../src/widecolumn/key-codec.js';
import type { RocksDB } from '../../src/widecolumn/rocksdb.js';
import { HEAD_TOPS, mergedTops } from '../../src/widecolumn/write-log.js';
import type { GetRowOptions } from '../../src/widecolumn/types.js';
import { WideColumnOracle } from '../conformance/widecolumn-oracle.js';
import { openStore, plain, tempDir, TestClock } from './helpers.js';

/** Counts the native iterators and multi-gets of the store's reads (each read takes one snapshot). */
function countReads(store: WideColumnStore): { iterators: number; multiGets: number; reset(): void } {
  const db = store.db as RocksDB;
  const counts = {
    iterators: 0,
    multiGets: 0,
    reset() {
      counts.iterators = 0;
      counts.multiGets = 0;
    },
  };
  const snapshot = db.snapshot.bind(db);
  db.snapshot = () => {
    const s = snapshot();
    const iterator = s.iterator.bind(s);
    const read = s.read.bind(s);
    s.iterator = (...args) => {
      counts.iterators++;
      return iterator(...args);
    };
    s.read = (...args) => {
      counts.multiGets++;
      return read(...args);
    };
    return s;
  };
  return counts;
}

async function withStore(fn: (store: WideColumnStore, clock: TestClock) => Promise<void>): Promise<void> {
  const tmp = tempDir();
  const clock = new TestClock();
  // skipBudget 0: a row with any column deeper than a read wants is read through its head region;
  // folds only when a read meets the log (or the test settles them).
  const store = await openStore(tmp.dir, { clock: clock.now, foldAfter: 100_000, scanSkipBudget: 0 });
  try {
    await fn(store, clock);
  } finally {
    await store.close();
    tmp.cleanup();
  }
}

/** Reads once (a deep row read that meets log records schedules a fold) and waits for the folds. */
async function fold(store: WideColumnStore, dataset: string, row: string): Promise<void> {
  await store.getRow(dataset, row, { versions: 2 });
  await store.foldsSettled();
}

async function rawHead(store: WideColumnStore, dataset: string, row: string, column: string): Promise<Buffer | null> {
  const ctx = store.context(store.dataset(dataset), row);
  return store.db.get(concat(ctx.headPrefix, escapeComponent(Buffer.from(column))));
}

/** 10 columns x `depth` versions, timestamps t0 + 10 v (gaps for backfills), in batches. */
async function deepRow(store: WideColumnStore, model: WideColumnOracle, t0: number, depth: number, columns = 10): Promise<void> {
  for (let v = 0; v < depth; v += 50) {
    const items = [];
    for (let k = v; k < Math.min(depth, v + 50); k++) {
      for (let c = 0; c < columns; c++) items.push({ column: `c${c}`, value: `v${k}-${c}`, timestamp: t0 + 10 * k });
    }
    await store.batchPutRows('d', [{ row: 'deep', items }]);
    for (const it of items) model.put('deep', it.column, it.timestamp, it.value);
  }
}

test('versions=N on a deep row returns exactly the newest N of each column: from the heads\' lists (one head scan + one multi-get) for N <= 16, with later puts, backfills and rewrites in the log', () => withStore(async (store, clock) => {
  await store.putDataset('d', { maxVersions: 1000 });
  const model = new WideColumnOracle(1000);
  const t0 = clock.t - 1_000_000;
  await deepRow(store, model, t0, 300);
  await fold(store, 'd', 'deep');
  const head = decodeHead((await rawHead(store, 'd', 'deep', 'c0'))!);
  assert.deepEqual(head.tops, Array.from({ length: HEAD_TOPS }, (_, i) => t0 + 10 * (299 - i)), 'the fold wrote the 16 newest timestamps');
  assert.equal(head.complete, false);
  const counts = countReads(store);
  const check = async (label: string, q: GetRowOptions, listed: boolean): Promise<void> => {
    // The first read of a query may read early the columns the previous query's heads could not
    // answer (a hint kept between reads); the second shows what this query costs.
    await store.getRow('d', 'deep', q);
    counts.reset();
    assert.deepEqual(plain((await store.getRow('d', 'deep', q)).columns), model.get('deep', clock.t, q), `${label} ${JSON.stringify(q)}`);
    if (listed) assert.deepEqual([counts.iterators, counts.multiGets], [1, 1], `${label} ${JSON.stringify(q)}: one head scan, one multi-get`);
    else assert.ok(counts.iterators > 1, `${label} ${JSON.stringify(q)}: bounded iterators (${counts.iterators})`);
    // The iterator path (named columns) agrees.
    assert.deepEqual(plain((await store.getRow('d', 'deep', { ...q, columns: [...model.rows.get('deep')!.keys()] })).columns), model.get('deep', clock.t, q), `${label} named`);
  };
  const ranged = (n: number, start: number, end: number): GetRowOptions => ({ versions: n, start, end });
  const queries = (label: string): Array<[string, GetRowOptions, boolean]> => [
    [label, { versions: 2 }, true],
    [label, { versions: 5 }, true],
    [label, { versions: 16 }, true],
    [label, { versions: 17 }, false], // deeper than the lists (only c99's, complete, could answer)
    [label, { versions: 50 }, false],
    // A time range inside the list: decided by it (the cells newer than `end` are fetched too).
    [label, ranged(5, t0 + 10 * 290, t0 + 10 * 297), true],
    [label, ranged(3, 0, t0 + 10 * 295), true],
    // A range reaching past the list: the cells decide.
    [label, ranged(5, 0, t0 + 10 * 288), false],
    [label, ranged(20, t0 + 10 * 280, t0 + 10 * 299), false],
  ];
  for (const [label, q, listed] of queries('after the fold')) await check(label, q, listed);
  await store.getRow('d', 'deep', { versions: 5 }); // answered by the heads: nothing is read early next time
  // Puts since the fold, still in the write log: a newer cell (c1), a backfill inside the list's
  // range (c2), a rewrite of the newest cell at its timestamp (c3), a backfill older than the
  // list (c4: outside what the list can decide), a new column only in the log (c99).
  await store.putRow('d', 'deep', [{ column: 'c1', value: 'newer', timestamp: t0 + 10 * 300 }]);
  await store.putRow('d', 'deep', [{ column: 'c2', value: 'backfill', timestamp: t0 + 10 * 297 + 5 }]);
  await store.putRow('d', 'deep', [{ column: 'c3', value: 'rewritten', timestamp: t0 + 10 * 299 }]);
  await store.putRow('d', 'deep', [{ column: 'c4', value: 'old backfill', timestamp: t0 + 10 * 100 + 5 }]);
  await store.putRow('d', 'deep', [{ column: 'c99', value: 'new column', timestamp: t0 }]);
  // One call with several cells of one column (c5): the log names every one of them, so the fold
  // merges all three into the list (naming only the newest made the list skip the others).
  const c5 = [t0 + 10 * 300 + 2, t0 + 10 * 300 + 1, t0 + 10 * 298 + 5];
  await store.putRow('d', 'deep', c5.map((timestamp, k) => ({ column: 'c5', value: `c5 in one call ${k}`, timestamp })));
  c5.forEach((ts, k) => model.put('deep', 'c5', ts, `c5 in one call ${k}`));
  model.put('deep', 'c1', t0 + 10 * 300, 'newer');
  model.put('deep', 'c2', t0 + 10 * 297 + 5, 'backfill');
  model.put('deep', 'c3', t0 + 10 * 299, 'rewritten');
  model.put('deep', 'c4', t0 + 10 * 100 + 5, 'old backfill');
  model.put('deep', 'c99', t0, 'new column');
  // c99 has no head (only logged): it is read with a bounded iterator beside the multi-get.
  counts.reset();
  const q5 = { versions: 5 };
  assert.deepEqual(plain((await store.getRow('d', 'deep', q5)).columns), model.get('deep', clock.t, q5), 'with the log');
  assert.deepEqual([counts.iterators, counts.multiGets], [2, 1], 'head scan + multi-get + one iterator for the column without a head');
  await store.foldsSettled();
  assert.deepEqual(decodeHead((await rawHead(store, 'd', 'deep', 'c2'))!).tops!.slice(0, 4), [t0 + 2990, t0 + 2980, t0 + 2975, t0 + 2970], 'the fold merged the backfill into the list');
  assert.deepEqual(decodeHead((await rawHead(store, 'd', 'deep', 'c5'))!).tops!.slice(0, 5), [t0 + 3002, t0 + 3001, t0 + 2990, t0 + 2985, t0 + 2980], 'every cell of one call is in the list');
  assert.equal(decodeHead((await rawHead(store, 'd', 'deep', 'c99'))!).complete, true, 'a column of one cell: complete list');
  // The last read remembered c99 (its head could not answer) and reads it early next time; once
  // its head answers, it is forgotten.
  await store.getRow('d', 'deep', q5);
  for (const [label, q, listed] of queries('after the second fold')) await check(label, q, listed);
}));

test('heads written before the lists (first format, no list) are read right, through the iterator per column; a later fold writes the list', () => withStore(async (store, clock) => {
  await store.putDataset('d', { maxVersions: 1000 });
  const model = new WideColumnOracle(1000);
  const t0 = clock.t - 1_000_000;
  await deepRow(store, model, t0, 100, 3);
  await fold(store, 'd', 'deep');
  // Rewrite every head as the previous release wrote it: timestamp:u64 | value.
  const ctx = store.context(store.dataset('d'), 'deep');
  for (const c of ['c0', 'c1', 'c2']) {
    await store.db.put(concat(ctx.headPrefix, escapeComponent(Buffer.from(c))), headValue(t0 + 990, Buffer.from(`v99-${c.slice(1)}`)));
  }
  assert.equal(decodeHead((await rawHead(store, 'd', 'deep', 'c0'))!).tops, null);
  const counts = countReads(store);
  for (const q of [{}, { versions: 5 }, { versions: 16 }, { versions: 3, start: t0 + 500, end: t0 + 985 }]) {
    counts.reset();
    assert.deepEqual(plain((await store.getRow('d', 'deep', q)).columns), model.get('deep', clock.t, q), JSON.stringify(q));
    if ((q as GetRowOptions).versions) assert.equal(counts.iterators, 4, `${JSON.stringify(q)}: head scan + one iterator per column`);
  }
  // A put to c1 and its fold: c1's head gets the list, the others stay as they were.
  await store.putRow('d', 'deep', [{ column: 'c1', value: 'new', timestamp: t0 + 1000 }]);
  model.put('deep', 'c1', t0 + 1000, 'new');
  await fold(store, 'd', 'deep');
  const c1 = decodeHead((await rawHead(store, 'd', 'deep', 'c1'))!);
  assert.deepEqual(c1.tops, Array.from({ length: HEAD_TOPS }, (_, i) => t0 + 1000 - 10 * i));
  assert.equal((await rawHead(store, 'd', 'deep', 'c0'))![0], 0x00, 'c0 keeps the first format');
  await store.getRow('d', 'deep', { versions: 5 }); // the columns read early are now c0 and c2 only
  counts.reset();
  assert.deepEqual(plain((await store.getRow('d', 'deep', { versions: 5 })).columns), model.get('deep', clock.t, { versions: 5 }));
  assert.deepEqual([counts.iterators, counts.multiGets], [3, 1], 'c1 from the multi-get, c0 and c2 with iterators');
}));

test('a listed cell deleted or compacted away: reads fall back to the cells; compaction trims the lists it makes stale; deleting a column drops its list', () => withStore(async (store, clock) => {
  await store.putDataset('d', { maxVersions: 1000 });
  const model = new WideColumnOracle(1000);
  const t0 = clock.t - 1_000_000;
  await deepRow(store, model, t0, 100, 3);
  await fold(store, 'd', 'deep');
  const counts = countReads(store);
  const read = async (label: string, q: GetRowOptions): Promise<void> => {
    counts.reset();
    assert.deepEqual(plain((await store.getRow('d', 'deep', q)).columns), model.get('deep', clock.t, q), `${label} ${JSON.stringify(q)}`);
  };
  // A listed cell removed behind the list's back (white box: what a range delete does to it).
  const ctx = store.context(store.dataset('d'), 'deep');
  await store.db.delete(cellKey(ctx.cellPrefix, escapeComponent(Buffer.from('c0')), t0 + 970));
  model.removeCell('deep', 'c0', t0 + 970);
  await read('a listed cell gone', { versions: 5 });
  assert.deepEqual([counts.iterators, counts.multiGets], [2, 1], 'the multi-get missed for c0 only: one iterator for it');
  await read('a listed cell gone, a read that does not need it', { versions: 2 });
  assert.deepEqual([counts.iterators, counts.multiGets], [1, 1]);
  // Compaction after lowering maxVersions removes listed cells; raised again, reads see what is left.
  await store.putDataset('d', { maxVersions: 3 });
  model.maxVersions = 3;
  const report = await compact(store);
  assert.ok(report.rangeDeletes >= 3, `compaction removed versions (${report.rangeDeletes} range deletes)`);
  for (const c of ['c1', 'c2']) {
    const h = decodeHead((await rawHead(store, 'd', 'deep', c))!);
    assert.deepEqual(h.tops, [t0 + 990, t0 + 980, t0 + 970], `${c}: the list keeps what compaction kept`);
    assert.equal(h.complete, true, `${c}: and says it is all`);
  }
  // c0 still names the cell removed behind its back above (compaction kept ranks 1..3 of what is there).
  assert.deepEqual(decodeHead((await rawHead(store, 'd', 'deep', 'c0'))!).tops, [t0 + 990, t0 + 980, t0 + 970, t0 + 960]);
  for (const c of ['c0', 'c1', 'c2']) {
    const cells = model.rows.get('deep')!.get(c)!;
    const kept = [...cells.keys()].sort((a, b) => b - a).slice(0, 3);
    for (const ts of [...cells.keys()]) if (!kept.includes(ts)) model.removeCell('deep', c, ts);
  }
  await store.putDataset('d', { maxVersions: 1000 });
  model.maxVersions = 1000;
  await read('after compaction, maxVersions raised again', { versions: 10 });
  assert.deepEqual([counts.iterators, counts.multiGets], [2, 1], 'complete lists answer a read deeper than the column (c0: its missing cell sends it to the iterator)');
  // Deleting a column deletes its head (list included); new cells get a new list from the cells.
  await store.deleteRow('d', 'deep', ['c1']);
  model.delete('deep', ['c1']);
  assert.equal(await rawHead(store, 'd', 'deep', 'c1'), null);
  await store.putRow('d', 'deep', [{ column: 'c1', value: 'again', timestamp: t0 + 5 }]);
  model.put('deep', 'c1', t0 + 5, 'again');
  await read('a deleted column written again', { versions: 5 });
  await fold(store, 'd', 'deep');
  assert.deepEqual(decodeHead((await rawHead(store, 'd', 'deep', 'c1'))!).tops, [t0 + 5]);
  await read('after its fold (c1 still read early: remembered)', { versions: 5 });
  await read('after its fold', { versions: 5 });
  assert.deepEqual([counts.iterators, counts.multiGets], [2, 1], 'c1 from its new list; c0 (its missing cell) from the iterator');
}));

test('TTL on a deep row: the lists answer with expired cells cut off exactly as the cells do, before and after compaction', () => withStore(async (store, clock) => {
  await store.putDataset('d', { maxVersions: 1000, ttlSeconds: 100 });
  const model = new WideColumnOracle(1000, 100);
  // Timestamps 10 ms apart, the newest 5 s old: reads as time passes expire a few at a time.
  const t0 = clock.t - 5000 - 10 * 99;
  await deepRow(store, model, t0, 100, 3);
  await fold(store, 'd', 'deep');
  const counts = countReads(store);
  for (const advance of [0, 94_950, 20, 20, 1000, 100_000]) {
    clock.advance(advance);
    for (const q of [{ versions: 5 }, { versions: 16 }, { versions: 4, end: t0 + 10 * 98 }]) {
      counts.reset();
      assert.deepEqual(plain((await store.getRow('d', 'deep', q)).columns), model.get('deep', clock.t, q), `+${advance} ms ${JSON.stringify(q)}`);
    }
    if (advance === 20) {
      await compact(store);
      for (const c of ['c0', 'c1', 'c2']) for (const ts of [...model.rows.get('deep')?.get(c)?.keys() ?? []]) if (ts + 100_000 < clock.t) model.removeCell('deep', c, ts);
    }
  }
}));

test('head values: both formats decode; lists round-trip; merging a list with logged timestamps stays exact down to its last entry', () => {
  const legacy = headValue(2 ** 53 - 1, Buffer.from('v'));
  assert.equal(legacy[0], 0x00, 'a first-format head starts with 00 (timestamps < 2^53)');
  assert.deepEqual(decodeHead(legacy), { ts: 2 ** 53 - 1, value: Buffer.from('v'), tops: null, complete: false });
  for (const tops of [[5], [2 ** 53 - 1, 2 ** 32, 2 ** 32 - 1, 0], Array.from({ length: 16 }, (_, i) => 1000 - i)]) {
    for (const complete of [true, false]) {
      for (const value of [Buffer.alloc(0), Buffer.from([0x01, 0x00, 0xff])]) {
        const d = decodeHead(encodeHead(tops, complete, value));
        assert.deepEqual(d, { ts: tops[0], value, tops, complete });
      }
    }
  }
  assert.throws(() => decodeHead(Buffer.from([0x01, 0, 0])), /malformed/);
  const head = (tops: number[], complete: boolean) => decodeHead(encodeHead(tops, complete, Buffer.alloc(0)));
  // Incomplete list [100, 90, 80]: logged 85 joins, logged 50 is below what the list knows.
  assert.deepEqual(mergedTops(head([100, 90, 80], false), [85, 50], 3), { list: [100, 90, 85], complete: false });
  assert.equal(mergedTops(head([100, 90, 80], false), [50], 4), null, 'too short to give 4 exact entries');
  assert.deepEqual(mergedTops(head([100, 90], true), [50, 95, 100], 4), { list: [100, 95, 90, 50], complete: true });
  assert.deepEqual(mergedTops(head([100, 90], true), [50, 95, 70], 3), { list: [100, 95, 90], complete: false });
  assert.equal(mergedTops(decodeHead(legacy), [1], 3), null, 'a first-format head has no list to merge');
});
