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
