/**
 * The conformance suite of the wide-column engine interface (src/widecolumn/engine.ts): every
 * engine (embedded RocksDB, MyRocks) runs it through its own test file:
 *
 *   runWideColumnSuite({ name: 'rocksdb', factory: async ({ clock }) => ({ engine, cleanup }) });
 *
 * The factory returns a fresh, isolated engine whose clock is `clock` (tests move time
 * explicitly). Tests use only the interface; engine-specific checks live in each engine's own
 * test files. The randomized model test (wide-column-model.ts) is part of the suite.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardKitError } from '../../src/errors.js';
import type { WideColumnEngine } from '../../src/widecolumn/engine.js';
import { runWideColumnModelTests } from './widecolumn-model.js';

export interface WideColumnFixture {
  engine: WideColumnEngine;
  /** Closes the engine (if still open) and removes its data. */
  cleanup(): Promise<void>;
}

export interface WideColumnSuiteOptions {
  /** Shown in test names. */
  name: string;
  factory(options: { clock: () => number }): Promise<WideColumnFixture>;
  /**
   * What the engine promises beyond the interface's minimum. `crossRowBatches` (default true): a
   * batch over several rows is seen whole or not at all. MyRocks promises it per shard only (one
   * transaction per shard), so its reads are checked row by row.
   */
  supports?: { crossRowBatches?: boolean };
}

export class SuiteClock {
  constructor(public t = 1_700_000_000_000) {}
  readonly now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

export async function withEngine(options: WideColumnSuiteOptions, fn: (engine: WideColumnEngine, clock: SuiteClock) => Promise<void>): Promise<void> {
  const clock = new SuiteClock();
  const fx = await options.factory({ clock: clock.now });
  try {
    await fn(fx.engine, clock);
  } finally {
    await fx.cleanup();
  }
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ShardKitError) return err.code;
    throw err;
  }
  throw new Error('expected an error');
}

function plain(r: { columns: Array<{ column: string; cells: Array<{ timestamp: number; value: Buffer }> }> }): Array<[string, Array<[number, string]>]> {
  return r.columns.map((c) => [c.column, c.cells.map((x) => [x.timestamp, x.value.toString('utf8')] as [number, string])]);
}

export function runWideColumnSuite(options: WideColumnSuiteOptions): void {
  const t = (name: string, fn: (engine: WideColumnEngine, clock: SuiteClock) => Promise<void>): void => {
    test(`[${options.name}] ${name}`, () => withEngine(options, fn));
  };

  t('datasets: created, changed, listed; unknown dataset is UNKNOWN_DATASET', async (e) => {
    assert.equal((await e.putDataset('d', { maxVersions: 3 })).created, true);
    assert.equal((await e.putDataset('d', { ttlSeconds: 60 })).created, false);
    const d = await e.getDataset('d');
    assert.equal(d.maxVersions, 3);
    assert.equal(d.ttlSeconds, 60);
    assert.deepEqual((await e.listDatasets()).map((x) => x.name), ['d']);
    assert.equal(await codeOf(e.getDataset('nope')), 'UNKNOWN_DATASET');
    assert.equal(await codeOf(e.getRow('nope', 'r')), 'UNKNOWN_DATASET');
  });

  t('put and get: newest first, server time, versions, columns in byte order as an array', async (e, clock) => {
    await e.putDataset('d', { maxVersions: 3 });
    await e.putRow('d', 'r', [{ column: 'b', value: 'b1', timestamp: 10 }, { column: 'a', value: 'a1', timestamp: 10 }, { column: '10', value: 'x', timestamp: 10 }, { column: ' ', value: 's', timestamp: 10 }]);
    clock.advance(1000);
    const put = await e.putRow('d', 'r', [{ column: 'b', value: 'b2' }]);
    assert.equal(put.timestamp, clock.t);
    const r = await e.getRow('d', 'r', { versions: 2 });
    assert.deepEqual(plain(r), [[' ', [[10, 's']]], ['10', [[10, 'x']]], ['a', [[10, 'a1']]], ['b', [[clock.t, 'b2'], [10, 'b1']]]]);
    assert.equal(r.marker, null);
  });

  t('a row\'s server timestamps strictly increase within the process while the clock stands still or goes back: no put replaces an earlier one', async (e, clock) => {
    await e.putDataset('mv', { maxVersions: 100 });
    const first = await e.putRow('mv', 'u1', [{ column: 'c', value: 'v0' }]);
    const stamps = [first.timestamp!];
    for (let i = 1; i < 5; i++) stamps.push((await e.putRow('mv', 'u1', [{ column: 'c', value: `v${i}` }])).timestamp!);
    clock.advance(-50);
    // Repeats of one column in one put, after the clock went back: each newer than all before.
    const batch = await e.batchPutRows('mv', [{ row: 'u1', items: [{ column: 'c', value: 'r0' }, { column: 'c', value: 'r1' }] }]);
    stamps.push(batch[0]!.timestamp!);
    for (let i = 1; i < stamps.length; i++) assert.ok(stamps[i]! > stamps[i - 1]!, `server timestamp ${stamps[i]} after ${stamps[i - 1]}`);
    const r = await e.getRow('mv', 'u1', { versions: 100 });
    assert.deepEqual(plain(r)[0]![1].map(([, v]) => v), ['r1', 'r0', 'v4', 'v3', 'v2', 'v1', 'v0'], 'every acknowledged version is there, newest first');
  });

  t('paging: markers resume after the last column, pages agree with the order', async (e) => {
    await e.putDataset('d');
    const names = ['7', '10', ' ', 'a', 'é', 'Z', '__proto__'];
    await e.putRow('d', 'r', names.map((column) => ({ column, value: column, timestamp: 5 })));
    const seen: string[] = [];
    let marker: string | null = null;
    do {
      const page: Awaited<ReturnType<WideColumnEngine['getRow']>> = await e.getRow('d', 'r', { limit: 2, marker });
      seen.push(...page.columns.map((c) => c.column));
      marker = page.marker;
    } while (marker !== null);
    assert.deepEqual(seen, [...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
  });

  t('delete: columns or whole row; batch forms', async (e) => {
    await e.putDataset('d');
    await e.batchPutRows('d', [{ row: 'r1', items: [{ column: 'a', value: '1' }, { column: 'b', value: '2' }] }, { row: 'r2', items: [{ column: 'a', value: '3' }] }]);
    await e.deleteRow('d', 'r1', ['a']);
    assert.deepEqual((await e.getRow('d', 'r1')).columns.map((c) => c.column), ['b']);
    await e.batchDeleteRows('d', [{ row: 'r1' }, { row: 'r2' }]);
    const [a, b] = await e.batchGetRows('d', [{ row: 'r1' }, { row: 'r2' }]);
    assert.deepEqual([a!.columns, b!.columns], [[], []]);
  });

  t('bad input changes nothing: one bad item anywhere in a batch refuses the batch', async (e) => {
    await e.putDataset('d');
    assert.equal(await codeOf(e.batchPutRows('d', [{ row: 'ok', items: [{ column: 'a', value: '1' }] }, { row: 'bad', items: [{ column: '', value: 'x' }] }])), 'INVALID_ARGUMENT');
    assert.equal(await codeOf(e.putRow('d', 'r', [{ column: '\udc00', value: '1' }])), 'INVALID_ARGUMENT');
    assert.equal(await codeOf(e.putRow('d', 'r', [{ column: 'a', value: 'x\ud800y' }])), 'INVALID_ARGUMENT');
    assert.equal(await codeOf(e.getRow('d', 'r', { versions: 0 })), 'INVALID_ARGUMENT');
    assert.deepEqual((await e.getRow('d', 'ok')).columns, []);
    // A row twice in one put batch is refused (which items would win?); a delete batch may name a
    // row twice (deletes compose: the row is gone), on every engine alike.
    await e.batchPutRows('d', [{ row: 'kept', items: [{ column: 'a', value: '1' }, { column: 'b', value: '1' }] }, { row: 'also', items: [{ column: 'a', value: '2' }] }]);
    assert.equal(await codeOf(e.batchPutRows('d', [{ row: 'x', items: [{ column: 'a', value: '1' }] }, { row: 'x', items: [{ column: 'b', value: '2' }] }])), 'INVALID_ARGUMENT');
    await e.batchDeleteRows('d', [{ row: 'kept', columns: ['a'] }, { row: 'also' }, { row: 'kept', columns: ['a', 'b'] }]);
    assert.deepEqual((await e.batchGetRows('d', [{ row: 'kept' }, { row: 'also' }])).map((r) => r.columns.length), [0, 0]);
  });

  t('closed engine: every call is CLOSED', async (e) => {
    await e.putDataset('d');
    await e.close();
    assert.equal(e.closed, true);
    assert.equal(await codeOf(e.getRow('d', 'r')), 'CLOSED');
    assert.equal(await codeOf(e.putRow('d', 'r', [{ column: 'a', value: '1' }])), 'CLOSED');
  });

  runWideColumnModelTests(options);
}
