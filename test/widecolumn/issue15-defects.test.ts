// Regression tests for the defects of issue 15, each named after its defect. Each fails on the
// code before its fix (checked by reverting the fix; see the commit messages).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { WideColumnStore } from '../../src/widecolumn/index.js';
import { errorCode, openStore, tempDir, TestClock } from './helpers.js';

async function withStore(fn: (store: WideColumnStore, clock: TestClock) => Promise<void>, options: { realClock?: boolean } = {}): Promise<void> {
  const tmp = tempDir();
  const clock = new TestClock();
  const store = await openStore(tmp.dir, options.realClock ? {} : { clock: clock.now });
  try {
    await fn(store, clock);
  } finally {
    await store.close();
    tmp.cleanup();
  }
}

const COLS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];

/** Puts columns a..h = n<i> in a loop while readers check that every read sees one put whole. */
async function tornReads(store: WideColumnStore, ds: string, read: () => Promise<Array<{ column: string; cells: Array<{ value: Buffer }> }>>, puts: number): Promise<string[]> {
  const torn: string[] = [];
  let done = false;
  const writer = (async () => {
    try {
      for (let i = 1; i <= puts; i++) await store.putRow(ds, 'r', COLS.map((column) => ({ column, value: `n${i}` })));
    } finally {
      done = true;
    }
  })();
  const reader = async (): Promise<void> => {
    while (!done) {
      const cols = await read();
      if (cols.length === 0) continue;
      // The newest cell of every column must come from the same put.
      const newest = cols.map((c) => c.cells[0]!.value.toString());
      if (cols.length !== COLS.length || new Set(newest).size !== 1) torn.push(newest.join(','));
    }
  };
  await Promise.all([writer, reader(), reader(), reader()]);
  return torn;
}

test('defect 2: reads see half-applied batches (all columns, latestIndex false)', () => withStore(async (store) => {
  await store.putDataset('d', { maxVersions: 2, latestIndex: false });
  const torn = await tornReads(store, 'd', async () => (await store.getRow('d', 'r', { versions: 2 })).columns, 400);
  assert.deepEqual(torn.slice(0, 5), [], `${torn.length} torn reads`);
}, { realClock: true }));

test('defect 2: reads see half-applied batches (named columns, deep rows, batch reads)', () => withStore(async (store) => {
  await store.putDataset('d', { maxVersions: 50 });
  const torn = await tornReads(store, 'd', async () => {
    const [byName, all] = await store.batchGetRows('d', [{ row: 'r', columns: COLS, versions: 2 }, { row: 'r', versions: 2 }]);
    return [byName!, all!].find((r) => r.columns.length > 0)?.columns ?? [];
  }, 400);
  assert.deepEqual(torn.slice(0, 5), [], `${torn.length} torn reads`);
}, { realClock: true }));

test('defect 1: compaction erases acknowledged, visible writes (a delete and a backfill during the scan)', () => withStore(async (store, clock) => {
  await store.putDataset('d', { maxVersions: 1 });
  await store.putRow('d', 't5', [{ column: 'c', value: 'v1000', timestamp: 1000 }]);
  await store.putRow('d', 't5', [{ column: 'c', value: 'v2000', timestamp: 2000 }]);
  const shardOfT5 = (await store.getRow('d', 't5')).columns.length > 0 ? store.context(store.dataset('d'), 't5').shard : -1;
  // A row in a later shard, so the scan reports progress after t5's shard, with its plan made.
  let filler = 0;
  for (let i = 0; store.context(store.dataset('d'), `f${i}`).shard <= shardOfT5 || filler === 0; i++) {
    if (store.context(store.dataset('d'), `f${i}`).shard > shardOfT5) {
      await store.putRow('d', `f${i}`, [{ column: 'x', value: 'x', timestamp: 1 }]);
      filler++;
    }
  }
  let acted = false;
  await store.compact({
    onProgress: async (e) => {
      // The progress event after t5's shard: the scan has looked at t5 (c@1000 is beyond
      // maxVersions there); now the column is deleted and backfilled at 500, acknowledged.
      if (acted || e.phase !== 'scan' || e.done <= shardOfT5) return;
      acted = true;
      await store.deleteRow('d', 't5', ['c']);
      await store.putRow('d', 't5', [{ column: 'c', value: 'v500', timestamp: 500 }]);
      const seen = (await store.getRow('d', 't5')).columns.map((c) => c.cells.map((x) => x.value.toString()));
      assert.deepEqual(seen, [['v500']]);
    },
  });
  assert.ok(acted);
  clock.advance(1);
  const after = (await store.getRow('d', 't5')).columns.map((c) => [c.column, c.cells.map((x) => x.value.toString())]);
  assert.deepEqual(after, [['c', ['v500']]], 'the acknowledged backfill survives the compaction');
}));

test('defect 3: values with a lone UTF-16 surrogate are refused, never silently changed', () => withStore(async (store) => {
  await store.putDataset('d');
  for (const value of ['x\ud800y', '\udfff', 'ok\ud83d']) {
    assert.equal(await errorCode(store.putRow('d', 'r', [{ column: 'c', value }])), 'INVALID_ARGUMENT');
  }
  assert.equal(await errorCode(store.batchPutRows('d', [{ row: 'ok', items: [{ column: 'c', value: 'fine' }] }, { row: 'r', items: [{ column: 'c', value: 'x\ud800y' }] }])), 'INVALID_ARGUMENT');
  assert.deepEqual((await store.batchGetRows('d', [{ row: 'r' }, { row: 'ok' }])).map((r) => r.columns), [[], []], 'nothing written');
  // A well-formed pair and bytes are stored exactly.
  await store.putRow('d', 'r', [{ column: 'c', value: 'x\ud83d\ude00y' }, { column: 'b', value: Buffer.from([0xed, 0xa0, 0x80]) }]);
  const r = await store.getRow('d', 'r');
  assert.deepEqual(r.columns.map((c) => c.cells[0]!.value.toString('hex')), ['eda080', Buffer.from('x\ud83d\ude00y').toString('hex')]);
}));

test('defect 5: server timestamps run ahead of the clock (after an explicit future timestamp, after a restart)', async () => {
  const tmp = tempDir();
  const clock = new TestClock();
  let store = await openStore(tmp.dir, { clock: clock.now });
  try {
    await store.putDataset('d', { maxVersions: 10 });
    await store.putRow('d', 'r', [{ column: 'c', value: 'future', timestamp: clock.t + 30_000 }]);
    clock.advance(5);
    assert.equal((await store.putRow('d', 'r', [{ column: 'c', value: 'server' }])).timestamp, clock.t, 'not above the explicit future cell');
    await store.close();
    clock.advance(5);
    store = await openStore(tmp.dir, { clock: clock.now });
    assert.equal((await store.putRow('d', 'r', [{ column: 'c', value: 'after restart' }])).timestamp, clock.t, 'not above everything written before + 1 s');
    // Only a collision within one millisecond is separated: the same row, the same ms.
    const [a, b] = await Promise.all([store.putRow('d', 'x', [{ column: 'c', value: '1' }]), store.putRow('d', 'x', [{ column: 'c', value: '2' }])]);
    assert.deepEqual([a.timestamp, b.timestamp].sort(), [clock.t, clock.t + 1]);
    assert.equal((await store.putRow('d', 'y', [{ column: 'c', value: '3' }])).timestamp, clock.t, 'another row is not affected');
    assert.equal((await store.getRow('d', 'x', { versions: 5 })).columns[0]!.cells.length, 2);
  } finally {
    await store.close();
    tmp.cleanup();
  }
});
