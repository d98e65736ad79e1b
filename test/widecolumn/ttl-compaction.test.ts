import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compact, type WideColumnStore } from '../../src/widecolumn/index.js';
import { openStore, plain, tempDir, TestClock } from './helpers.js';
import { WideColumnOracle } from '../conformance/widecolumn-oracle.js';

/** Data records (cells, heads and write-log records) as RocksDB holds them: what compaction is about. */
async function rawCount(store: WideColumnStore): Promise<number> {
  const snap = store.snapshot();
  let n = 0;
  try {
    for await (const { key } of snap.entries()) if (key[0] !== 0xff) n++;
  } finally {
    await snap.close();
  }
  return n;
}

test('TTL: a cell is returned up to ts + ttl and never after, on every read path, before and after compaction', async () => {
  const tmp = tempDir();
  const clock = new TestClock();
  const store = await openStore(tmp.dir, { clock: clock.now });
  try {
    await store.putDataset('t', { maxVersions: 5, ttlSeconds: 10 });
    const t0 = clock.t;
    await store.putRow('t', 'r', [{ column: 'old', value: 'o', timestamp: t0 - 10_000 }, { column: 'edge', value: 'e', timestamp: t0 - 9_999 }]);
    await store.putRow('t', 'r', [{ column: 'mixed', value: 'm1', timestamp: t0 - 20_000 }, { column: 'mixed', value: 'm2', timestamp: t0 }]);
    const reads = async (): Promise<Array<ReturnType<typeof plain>>> => [
      plain((await store.getRow('t', 'r')).columns),
      plain((await store.getRow('t', 'r', { versions: 5 })).columns),
      plain((await store.getRow('t', 'r', { start: 0, end: t0 + 1 })).columns),
      plain((await store.getRow('t', 'r', { columns: ['old', 'edge', 'mixed'] })).columns),
      plain((await store.getRow('t', 'r', { columns: ['old', 'edge', 'mixed'], versions: 5 })).columns),
    ];
    // now == ts + ttl exactly: still visible (expired only when now > ts + ttl).
    for (const r of await reads()) {
      assert.deepEqual(r.map(([c]) => c), ['edge', 'mixed', 'old']);
      assert.deepEqual(r.find(([c]) => c === 'mixed')![1].map(([, v]) => v), ['m2'], 'm1 is 20 s old');
    }
    clock.advance(1);
    for (const r of await reads()) assert.deepEqual(r, [['edge', [[t0 - 9_999, 'e']]], ['mixed', [[t0, 'm2']]]]);
    assert.equal(await rawCount(store), 6, '4 cells and the 2 puts\' write-log records');
    const report = await compact(store);
    assert.equal(report.removedExpiredCells, 2, 'old and mixed@t0-20000');
    assert.equal(report.foldedLogRecords, 2);
    assert.equal(report.removedHeads, 0, '"old" expired before it got a head: its log entry is dropped, no head is written');
    assert.equal(await rawCount(store), 4, 'the cells of edge and mixed@t0, and their heads');
    for (const r of await reads()) assert.deepEqual(r, [['edge', [[t0 - 9_999, 'e']]], ['mixed', [[t0, 'm2']]]]);
    clock.advance(10_000);
    for (const r of await reads()) assert.deepEqual(r, []);
    await compact(store);
    for (const r of await reads()) assert.deepEqual(r, []);
    // Changing the TTL applies to reads at once (nothing was compacted for the remaining cells).
    await store.putRow('t', 'r', [{ column: 'c', value: 'x', timestamp: clock.t - 50_000 }]);
    assert.deepEqual((await store.getRow('t', 'r')).columns, []);
    await store.putDataset('t', { ttlSeconds: 0 });
    assert.deepEqual(plain((await store.getRow('t', 'r')).columns), [['c', [[clock.t - 50_000, 'x']]]]);
  } finally {
    await store.close();
    tmp.cleanup();
  }
});

test('maxVersions: versions beyond it are never returned, and compaction removes exactly those', async () => {
  const tmp = tempDir();
  const clock = new TestClock();
  const store = await openStore(tmp.dir, { clock: clock.now });
  try {
    await store.putDataset('v', { maxVersions: 3 });
    for (let i = 1; i <= 8; i++) await store.putRow('v', 'r', [{ column: 'c', value: `v${i}`, timestamp: i * 100 }, { column: 'd', value: `d${i}`, timestamp: i * 100 }]);
    const expectC = [[800, 'v8'], [700, 'v7'], [600, 'v6']];
    const check = async (): Promise<void> => {
      assert.deepEqual(plain((await store.getRow('v', 'r', { columns: ['c'], versions: 100 })).columns), [['c', expectC]]);
      assert.deepEqual(plain((await store.getRow('v', 'r', { versions: 100 })).columns)[0], ['c', expectC]);
      // A time range that only covers old versions finds nothing: they are beyond maxVersions.
      assert.deepEqual((await store.getRow('v', 'r', { versions: 100, start: 0, end: 600 })).columns, []);
      assert.deepEqual(plain((await store.getRow('v', 'r', { versions: 100, start: 0, end: 700 })).columns), [['c', [[600, 'v6']]], ['d', [[600, 'd6']]]]);
    };
    await check();
    const report = await compact(store);
    assert.equal(report.removedExcessVersions, 10);
    assert.equal(report.removedExpiredCells, 0);
    assert.equal(report.rangeDeletes, 2, 'one range delete per column');
    await check();
    // Raising maxVersions does not bring compacted versions back; lowering hides at once.
    await store.putDataset('v', { maxVersions: 10 });
    await check();
    await store.putDataset('v', { maxVersions: 1 });
    assert.deepEqual(plain((await store.getRow('v', 'r', { columns: ['c'], versions: 100 })).columns), [['c', [[800, 'v8']]]]);
    // Backfilling below the kept versions is stored, but invisible while 1 newer version exists.
    await store.putRow('v', 'r', [{ column: 'c', value: 'backfill', timestamp: 50 }]);
    assert.deepEqual(plain((await store.getRow('v', 'r', { columns: ['c'], versions: 100 })).columns), [['c', [[800, 'v8']]]]);
  } finally {
    await store.close();
    tmp.cleanup();
  }
});

test('compaction frees the disk: SST bytes drop once expired data is compacted away', async () => {
  const tmp = tempDir();
  const clock = new TestClock();
  const store = await openStore(tmp.dir, { clock: clock.now });
  try {
    await store.putDataset('big', { maxVersions: 1, ttlSeconds: 60 });
    const value = Buffer.alloc(1000, 7);
    for (let b = 0; b < 40; b++) {
      await store.batchPutRows('big', Array.from({ length: 50 }, (_, i) => ({ row: `row${b}-${i}`, items: [{ column: 'a', value }, { column: 'b', value }] })));
    }
    await store.db.flush();
    const first = await compact(store);
    assert.equal(first.removedExpiredCells + first.removedExcessVersions, 0);
    assert.ok(first.sstBytesAfter > 2000 * 1000, `data is on disk (${first.sstBytesAfter})`);
    clock.advance(61_000);
    const second = await compact(store);
    assert.equal(second.removedExpiredCells, 4000);
    assert.equal(second.removedHeads, 4000);
    assert.ok(second.sstBytesAfter < first.sstBytesAfter / 10, `SST ${first.sstBytesAfter} -> ${second.sstBytesAfter}`);
    assert.equal(await rawCount(store), 0, 'no data record is left');
  } finally {
    await store.close();
    tmp.cleanup();
  }
});

test('compaction while puts go on: no live cell is lost, and reads agree with a model before and after', async () => {
  const tmp = tempDir();
  const clock = new TestClock();
  const store = await openStore(tmp.dir, { clock: clock.now });
  const model = new WideColumnOracle();
  model.maxVersions = 2;
  model.ttlSeconds = 5;
  try {
    await store.putDataset('c', { maxVersions: 2, ttlSeconds: 5 });
    for (let i = 0; i < 300; i++) {
      const row = `r${i % 13}`;
      const column = `c${i % 4}`;
      const ts = clock.t - (i % 9) * 1000;
      await store.putRow('c', row, [{ column, value: `v${i}`, timestamp: ts }]);
      model.put(row, column, ts, `v${i}`);
    }
    clock.advance(1500);
    const writes = (async () => {
      for (let i = 0; i < 200; i++) {
        const row = `r${i % 13}`;
        const column = `c${(i + 1) % 4}`;
        const r = await store.putRow('c', row, [{ column, value: `w${i}` }]);
        model.put(row, column, r.timestamp!, `w${i}`);
      }
    })();
    const report = await compact(store);
    await writes;
    assert.ok(report.removedExpiredCells + report.removedExcessVersions > 0);
    for (let k = 0; k < 13; k++) {
      for (const q of [{}, { versions: 2 }, { start: 0, end: Number.MAX_SAFE_INTEGER }]) {
        assert.deepEqual(plain((await store.getRow('c', `r${k}`, q)).columns), model.get(`r${k}`, clock.t, q), `r${k} ${JSON.stringify(q)}`);
      }
    }
    await compact(store);
    for (let k = 0; k < 13; k++) {
      assert.deepEqual(plain((await store.getRow('c', `r${k}`, { versions: 2 })).columns), model.get(`r${k}`, clock.t, { versions: 2 }));
    }
  } finally {
    await store.close();
    tmp.cleanup();
  }
});
