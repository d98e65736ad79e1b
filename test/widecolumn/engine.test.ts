import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compact, WideColumnStore } from '../../src/widecolumn/index.js';
import { errorCode, openStore, plain, tempDir, TestClock } from './helpers.js';
import { WideColumnOracle } from '../conformance/widecolumn-oracle.js';

async function withStore(fn: (store: WideColumnStore, clock: TestClock, dir: string) => Promise<void>, options: { leaseMs?: number; foldAfter?: number; skipBudget?: number } = {}): Promise<void> {
  const tmp = tempDir();
  const clock = new TestClock();
  const store = await openStore(tmp.dir, { clock: clock.now, timestampLeaseMs: options.leaseMs ?? 1000, ...(options.foldAfter !== undefined ? { foldAfter: options.foldAfter } : {}), ...(options.skipBudget !== undefined ? { scanSkipBudget: options.skipBudget } : {}) });
  try {
    await fn(store, clock, tmp.dir);
  } finally {
    await store.close();
    tmp.cleanup();
  }
}

/** Reads every page of a row and checks each page's size and marker. */
async function readAll(store: WideColumnStore, ds: string, row: string, q: Record<string, unknown>, limit: number): Promise<ReturnType<typeof plain>> {
  const out: ReturnType<typeof plain> = [];
  let marker: string | null = null;
  for (let pages = 0; ; pages++) {
    assert.ok(pages < 1000, 'pagination does not end');
    const r = await store.getRow(ds, row, { ...q, limit, marker });
    assert.ok(r.columns.length <= limit);
    out.push(...plain(r.columns));
    if (r.marker === null) break;
    assert.equal(r.columns.length, limit, 'a page with a marker is full');
    marker = r.marker;
  }
  return out;
}

test('put then get: newest version first, default one version, server time when no timestamp', () => withStore(async (store, clock) => {
  await store.putDataset('events', { maxVersions: 5 });
  const t0 = clock.t;
  const r1 = await store.putRow('events', 'user1', [{ column: 'click', value: 'a' }, { column: 'search', value: 'q1' }]);
  assert.equal(r1.timestamp, t0);
  clock.advance(10);
  await store.putRow('events', 'user1', [{ column: 'click', value: 'b' }]);
  assert.deepEqual(plain((await store.getRow('events', 'user1')).columns), [['click', [[t0 + 10, 'b']]], ['search', [[t0, 'q1']]]]);
  assert.deepEqual(plain((await store.getRow('events', 'user1', { versions: 3 })).columns), [['click', [[t0 + 10, 'b'], [t0, 'a']]], ['search', [[t0, 'q1']]]]);
  assert.deepEqual(plain((await store.getRow('events', 'user1', { columns: ['click'], versions: 9 })).columns), [['click', [[t0 + 10, 'b'], [t0, 'a']]]]);
  assert.deepEqual((await store.getRow('events', 'nobody')).columns, []);
}));

test('backfill: an older explicit timestamp is stored as an older version and does not become the newest', () => withStore(async (store, clock) => {
  await store.putDataset('events', { maxVersions: 10 });
  await store.putRow('events', 'u', [{ column: 'c', value: 'now' }]);
  await store.putRow('events', 'u', [{ column: 'c', value: 'old', timestamp: 1000 }, { column: 'd', value: 'old-d', timestamp: 999 }]);
  assert.deepEqual(plain((await store.getRow('events', 'u')).columns), [['c', [[clock.t, 'now']]], ['d', [[999, 'old-d']]]]);
  assert.deepEqual(plain((await store.getRow('events', 'u', { versions: 5, columns: ['c'] })).columns), [['c', [[clock.t, 'now'], [1000, 'old']]]]);
  // A backfill newer than the stored head (but not in the future) becomes the newest.
  await store.putRow('events', 'u', [{ column: 'c', value: 'newer', timestamp: clock.t + 5 }]);
  assert.deepEqual(plain((await store.getRow('events', 'u', { columns: ['c'] })).columns), [['c', [[clock.t + 5, 'newer']]]]);
  // Server timestamps are the clock's time (issue 15, defect 5): once the clock passes it, a server put is the newest.
  const early = await store.putRow('events', 'u', [{ column: 'c', value: 'early' }]);
  assert.equal(early.timestamp, clock.t + 1, 'the same ms as the first put of the row: separated by 1 ms');
  assert.deepEqual(plain((await store.getRow('events', 'u', { columns: ['c'] })).columns), [['c', [[clock.t + 5, 'newer']]]]);
  clock.advance(10);
  const r = await store.putRow('events', 'u', [{ column: 'c', value: 'server' }]);
  assert.equal(r.timestamp, clock.t);
  assert.deepEqual(plain((await store.getRow('events', 'u', { columns: ['c'] })).columns), [['c', [[r.timestamp!, 'server']]]]);
  assert.equal(await errorCode(store.putRow('events', 'u', [{ column: 'c', value: 'x', timestamp: clock.t + 3_600_000 }])), 'INVALID_ARGUMENT');
}));

test('time range [start, end) returns the versions inside it, still capped by maxVersions', () => withStore(async (store) => {
  await store.putDataset('ts', { maxVersions: 4 });
  for (const t of [100, 200, 300, 400, 500, 600]) await store.putRow('ts', 'r', [{ column: 'c', value: `v${t}` }, { column: 'd', value: `w${t}`, timestamp: t + 1 }].map((i) => ({ ...i, timestamp: i.timestamp ?? t })));
  // Newest 4 of c: 600, 500, 400, 300; 200 and 100 are beyond maxVersions even inside the range.
  assert.deepEqual(plain((await store.getRow('ts', 'r', { columns: ['c'], versions: 10, start: 100, end: 500 })).columns), [['c', [[400, 'v400'], [300, 'v300']]]]);
  assert.deepEqual(plain((await store.getRow('ts', 'r', { versions: 10, start: 450, end: 602 })).columns), [['c', [[600, 'v600'], [500, 'v500']]], ['d', [[601, 'w600'], [501, 'w500']]]]);
  assert.deepEqual(plain((await store.getRow('ts', 'r', { start: 450, end: 601 })).columns), [['c', [[600, 'v600']]], ['d', [[501, 'w500']]]]);
  assert.deepEqual((await store.getRow('ts', 'r', { start: 0, end: 300 })).columns, []);
  assert.equal(await errorCode(store.getRow('ts', 'r', { start: 5, end: 5 })), 'INVALID_ARGUMENT');
}));

test('pagination: markers resume right after the last column, on every read path', () => withStore(async (store) => {
  await store.putDataset('wide', { maxVersions: 3 });
  const names = Array.from({ length: 250 }, (_, i) => `col${String(i).padStart(4, '0')}`);
  for (let i = 0; i < names.length; i += 50) {
    await store.putRow('wide', 'row', names.slice(i, i + 50).flatMap((c) => [{ column: c, value: `${c}-1`, timestamp: 10 }, { column: c, value: `${c}-2`, timestamp: 20 }]));
  }
  const first = await store.getRow('wide', 'row');
  assert.equal(first.columns.length, 100, 'default page is 100 columns');
  assert.equal(first.columns[99]!.column, 'col0099');
  assert.notEqual(first.marker, null);
  const expected1 = names.map((c) => [c, [[20, `${c}-2`]]]);
  const expected2 = names.map((c) => [c, [[20, `${c}-2`], [10, `${c}-1`]]]);
  for (const limit of [1, 7, 100, 250, 1000]) {
    assert.deepEqual(await readAll(store, 'wide', 'row', {}, limit), expected1, `heads, limit ${limit}`);
    assert.deepEqual(await readAll(store, 'wide', 'row', { versions: 2 }, limit), expected2, `cells, limit ${limit}`);
    assert.deepEqual(await readAll(store, 'wide', 'row', { start: 0, end: 1000 }, limit), expected1, `time range, limit ${limit}`);
    const some = names.filter((_, i) => i % 3 === 0);
    assert.deepEqual(await readAll(store, 'wide', 'row', { columns: some }, limit), expected1.filter((e) => some.includes(e[0] as string)), `named columns, limit ${limit}`);
    assert.deepEqual(await readAll(store, 'wide', 'row', { columns: some, versions: 2 }, limit), expected2.filter((e) => some.includes(e[0] as string)), `named columns cells, limit ${limit}`);
  }
  // The last page has no marker; a marker from another row still only resumes by column name.
  const page = await store.getRow('wide', 'row', { limit: 249 });
  const last = await store.getRow('wide', 'row', { limit: 249, marker: page.marker });
  assert.deepEqual(last.columns.map((c) => c.column), ['col0249']);
  assert.equal(last.marker, null);
  for (const bad of ['%%%', 'not base64!', 'QQ=']) assert.equal(await errorCode(store.getRow('wide', 'row', { marker: bad })), 'INVALID_ARGUMENT');
}));

test('delete: given columns (all versions), or the whole row; other rows untouched', () => withStore(async (store) => {
  await store.putDataset('d', { maxVersions: 5 });
  for (const row of ['r1', 'r2']) {
    await store.putRow('d', row, [{ column: 'a', value: '1', timestamp: 1 }, { column: 'b', value: '1', timestamp: 1 }, { column: 'c', value: '1', timestamp: 1 }]);
    await store.putRow('d', row, [{ column: 'a', value: '2', timestamp: 2 }, { column: 'b', value: '2', timestamp: 2 }]);
  }
  await store.deleteRow('d', 'r1', ['a', 'c']);
  assert.deepEqual(plain((await store.getRow('d', 'r1', { versions: 5 })).columns), [['b', [[2, '2'], [1, '1']]]]);
  assert.deepEqual(plain((await store.getRow('d', 'r1', { versions: 1 })).columns), [['b', [[2, '2']]]]);
  await store.deleteRow('d', 'r1');
  assert.deepEqual((await store.getRow('d', 'r1', { versions: 5 })).columns, []);
  assert.deepEqual((await store.getRow('d', 'r1')).columns, []);
  assert.equal((await store.getRow('d', 'r2', { versions: 5 })).columns.length, 3);
  // A put after a delete is visible again.
  await store.putRow('d', 'r1', [{ column: 'a', value: 'back', timestamp: 1 }]);
  assert.deepEqual(plain((await store.getRow('d', 'r1')).columns), [['a', [[1, 'back']]]]);
}));

test('batch forms: batch put is one atomic write; one bad item anywhere changes nothing', () => withStore(async (store) => {
  await store.putDataset('b', { maxVersions: 2 });
  const res = await store.batchPutRows('b', [
    { row: 'x', items: [{ column: 'c', value: 'x1' }] },
    { row: 'y', items: [{ column: 'c', value: 'y1' }, { column: 'c', value: 'y2' }] },
  ]);
  assert.equal(res.length, 2);
  // Repeats of a column in one call get consecutive timestamps, the later item newer.
  const y = await store.getRow('b', 'y', { versions: 2 });
  assert.deepEqual(y.columns[0]!.cells.map((c) => c.value.toString()), ['y2', 'y1']);
  assert.equal(y.columns[0]!.cells[0]!.timestamp, y.columns[0]!.cells[1]!.timestamp + 1);
  const got = await store.batchGetRows('b', [{ row: 'x' }, { row: 'y', versions: 2 }, { row: 'zz' }]);
  assert.deepEqual(got.map((r) => [r.row, r.columns.reduce((n, c) => n + c.cells.length, 0)]), [['x', 1], ['y', 2], ['zz', 0]]);
  for (const bad of [
    [{ row: 'x', items: [{ column: 'c', value: 'ok' }] }, { row: 'z', items: [{ column: '', value: 'empty column' }] }],
    [{ row: 'x', items: [{ column: 'c', value: 'ok' }] }, { row: 'z', items: [{ column: 'c', value: 'x'.repeat(2 * 1024 * 1024) }] }],
    [{ row: 'x', items: [{ column: 'c', value: 'ok' }] }, { row: 'x', items: [{ column: 'd', value: 'same row twice' }] }],
    [{ row: 'x', items: [{ column: 'c', value: 'ok', timestamp: 5 }, { column: 'c', value: 'dup', timestamp: 5 }] }],
    [{ row: 'x', items: [{ column: 'c', value: 'ok', timestamp: -1 }] }],
    [{ row: 'x', items: [] }],
  ]) {
    await assert.rejects(store.batchPutRows('b', bad as never), (e: Error & { code?: string }) => ['INVALID_ARGUMENT', 'PAYLOAD_TOO_LARGE'].includes(e.code!));
  }
  const after = await store.batchGetRows('b', [{ row: 'x', versions: 2 }, { row: 'z' }]);
  assert.deepEqual(after.map((r) => r.columns.map((c) => c.cells.map((x) => x.value.toString()))), [[['x1']], []]);
  await store.batchDeleteRows('b', [{ row: 'x' }, { row: 'y', columns: ['c'] }]);
  assert.deepEqual((await store.batchGetRows('b', [{ row: 'x' }, { row: 'y' }])).map((r) => r.columns), [[], []]);
}));

test('hostile row keys and column names: empty, separator-like bytes, unicode, 1 MB: stored apart or refused clearly', () => withStore(async (store) => {
  await store.putDataset('h', { maxVersions: 2 });
  const names = ['a', 'a\u0000', 'a\u0000\u0001', 'a\u0001', '\u0000', '\u0000\u0000', '\u0001', '\u00ff', '\uffff', '\u00fe', 'é', 'e\u0301', '😀', '\ud83d\ude00x', '/', 'a/b', '%2F', '__proto__', 'constructor', ' ', '\n'];
  let i = 0;
  for (const row of names) await store.putRow('h', row, names.map((column) => ({ column, value: `${JSON.stringify(row)}|${JSON.stringify(column)}`, timestamp: ++i })));
  for (const row of names) {
    const r = await store.getRow('h', row, { limit: 1000 });
    assert.equal(r.columns.length, names.length, `row ${JSON.stringify(row)} has all its columns and no other row's`);
    for (const c of r.columns) assert.equal(c.cells[0]!.value.toString(), `${JSON.stringify(row)}|${JSON.stringify(c.column)}`);
    assert.deepEqual(r.columns.map((c) => c.column), [...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
    const v2 = await store.getRow('h', row, { limit: 1000, versions: 2 });
    assert.deepEqual(plain(v2.columns), plain(r.columns));
  }
  await store.deleteRow('h', 'a', ['a']);
  assert.equal((await store.getRow('h', 'a\u0000')).columns.length, names.length, 'deleting column "a" of row "a" touches no other row');
  assert.equal((await store.getRow('h', 'a', { limit: 1000 })).columns.length, names.length - 1);
  await store.deleteRow('h', 'a');
  assert.equal((await store.getRow('h', 'a\u0000', { limit: 1000 })).columns.length, names.length, 'deleting row "a" leaves row "a\\0"');
  assert.equal((await store.getRow('h', 'a\u0001', { limit: 1000 })).columns.length, names.length);

  const mb = 'k'.repeat(1024 * 1024);
  for (const p of [
    store.putRow('h', '', [{ column: 'c', value: 'v' }]),
    store.putRow('h', 'r', [{ column: '', value: 'v' }]),
    store.putRow('h', mb, [{ column: 'c', value: 'v' }]),
    store.putRow('h', 'r', [{ column: mb, value: 'v' }]),
    store.putRow('h', 'r', [{ column: 'c', value: Buffer.alloc(1024 * 1024 + 1) }]),
    store.putRow('h', '\ud800', [{ column: 'c', value: 'v' }]),
    store.putRow('h', 'r', [{ column: 'x\udfff', value: 'v' }]),
    store.getRow('h', mb),
    store.getRow('h', ''),
    store.deleteRow('h', mb),
  ]) {
    await assert.rejects(p, (e: Error & { code?: string }) => {
      assert.ok(['INVALID_ARGUMENT', 'PAYLOAD_TOO_LARGE'].includes(e.code!), e.message);
      assert.match(e.message, /row key|column name|value/);
      return true;
    });
  }
  await assert.rejects(store.putRow('h', mb, [{ column: 'c', value: 'v' }]), /row key is 1048576 bytes; the limit is 4096 bytes/);
  // Values may be any bytes, including empty and the 1 MiB limit itself.
  await store.putRow('h', 'bin', [{ column: 'empty', value: Buffer.alloc(0) }, { column: 'max', value: Buffer.alloc(1024 * 1024, 0xab) }, { column: 'raw', value: Buffer.from([0, 0xff, 0x80]) }]);
  const bin = await store.getRow('h', 'bin');
  assert.deepEqual(bin.columns.map((c) => [c.column, c.cells[0]!.value.length]), [['empty', 0], ['max', 1024 * 1024], ['raw', 3]]);
  assert.deepEqual(bin.columns[2]!.cells[0]!.value, Buffer.from([0, 0xff, 0x80]));
}));

test('size limits: items per row, rows per batch and batch bytes are refused with PAYLOAD_TOO_LARGE', async () => {
  const tmp = tempDir();
  const store = await openStore(tmp.dir, { limits: { maxItemsPerRow: 10, maxBatchRows: 3, maxBatchBytes: 10_000 } });
  try {
    await store.putDataset('l');
    const items = (n: number) => Array.from({ length: n }, (_, i) => ({ column: `c${i}`, value: 'v' }));
    assert.equal(await errorCode(store.putRow('l', 'r', items(11))), 'PAYLOAD_TOO_LARGE');
    assert.equal(await errorCode(store.batchPutRows('l', [1, 2, 3, 4].map((i) => ({ row: `r${i}`, items: items(1) })))), 'PAYLOAD_TOO_LARGE');
    assert.equal(await errorCode(store.putRow('l', 'r', [{ column: 'c', value: 'x'.repeat(6000) }])), 'PAYLOAD_TOO_LARGE');
    assert.equal(await errorCode(store.getRow('l', 'r', { columns: items(11).map((i) => i.column) })), 'PAYLOAD_TOO_LARGE');
    assert.equal(await errorCode(store.batchGetRows('l', [1, 2, 3, 4].map((i) => ({ row: `r${i}` })))), 'PAYLOAD_TOO_LARGE');
    assert.deepEqual((await store.getRow('l', 'r')).columns, []);
    await store.putRow('l', 'r', items(10));
    assert.equal((await store.getRow('l', 'r')).columns.length, 10);
  } finally {
    await store.close();
    tmp.cleanup();
  }
});

test('datasets: validated names and settings, persisted across reopen, unknown dataset is UNKNOWN_DATASET', async () => {
  const tmp = tempDir();
  let store = await openStore(tmp.dir);
  try {
    assert.deepEqual((await store.putDataset('events', { maxVersions: 3, ttlSeconds: 60 })).created, true);
    const changed = await store.putDataset('events', { ttlSeconds: 120 });
    assert.equal(changed.created, false);
    assert.deepEqual([changed.dataset.maxVersions, changed.dataset.ttlSeconds], [3, 120]);
    await store.putDataset('other');
    for (const name of ['', 'Events', '1abc', 'a-b', 'a'.repeat(64), '../x', 'é']) assert.equal(await errorCode(store.putDataset(name)), 'INVALID_ARGUMENT', name);
    for (const s of [{ maxVersions: 0 }, { maxVersions: 1.5 }, { maxVersions: 100_001 }, { ttlSeconds: -1 }, { other: 1 }, { latestIndex: false }, { latestIndex: 'no' }]) assert.equal(await errorCode(store.putDataset('events', s as never)), 'INVALID_ARGUMENT');
    assert.equal((await store.putDataset('events', { latestIndex: true })).dataset.latestIndex, true, 'restating the fixed value is fine');
    assert.equal(await errorCode(store.getRow('nope', 'r')), 'UNKNOWN_DATASET');
    assert.equal(await errorCode(store.putRow('nope', 'r', [{ column: 'c', value: 'v' }])), 'UNKNOWN_DATASET');
    assert.equal(await errorCode(store.deleteRow('nope', 'r')), 'UNKNOWN_DATASET');
    await store.putRow('events', 'r', [{ column: 'c', value: 'v', timestamp: 5 }]);
    await store.putRow('other', 'r', [{ column: 'c', value: 'other', timestamp: 5 }]);
    await store.close();
    store = await openStore(tmp.dir);
    assert.deepEqual((await store.listDatasets()).map((d) => [d.name, d.maxVersions, d.ttlSeconds, d.latestIndex]), [['events', 3, 120, true], ['other', 1, 0, true]]);
    assert.deepEqual(plain((await store.getRow('other', 'r')).columns), [['c', [[5, 'other']]]], 'datasets do not share rows');
    assert.equal(await errorCode(() => WideColumnStore.open(`${tmp.dir}/widecolumn`)), 'STORE_LOCKED', 'one process, one open store');
    await store.close();
    assert.equal(await errorCode(() => WideColumnStore.open(`${tmp.dir}/widecolumn`, { shards: 128 })), 'INVALID_CONFIG', 'the shard count is fixed at creation');
    store = await openStore(tmp.dir);
  } finally {
    await store.close();
    tmp.cleanup();
  }
});

test('many concurrent puts to one row: every cell present, versions strictly ordered newest first', () => withStore(async (store) => {
  await store.putDataset('hot', { maxVersions: 10_000 });
  const N = 600;
  // The clock does not move: server timestamps must still be unique per row.
  await Promise.all(Array.from({ length: N }, (_, i) => store.putRow('hot', 'row', i % 7 === 0
    ? [{ column: 'c', value: `explicit${i}`, timestamp: 1_000 + i }]
    : [{ column: 'c', value: `v${i}` }, { column: `own${i % 5}`, value: `v${i}` }])));
  const r = await store.getRow('hot', 'row', { columns: ['c'], versions: N + 1 });
  const cells = r.columns[0]!.cells;
  assert.equal(cells.length, N);
  assert.deepEqual(new Set(cells.map((c) => c.value.toString())).size, N);
  for (let i = 1; i < cells.length; i++) assert.ok(cells[i - 1]!.timestamp > cells[i]!.timestamp);
  // The newest version (head record) agrees with the cells.
  const head = await store.getRow('hot', 'row', { columns: ['c'] });
  assert.deepEqual(head.columns[0]!.cells[0], cells[0]);
}));

test('server timestamps after reopen are the clock time; write-log records of before and after the reopen all count', async () => {
  const tmp = tempDir();
  const clock = new TestClock();
  let store = await openStore(tmp.dir, { clock: clock.now });
  try {
    await store.putDataset('e', { maxVersions: 10 });
    const first = await store.putRow('e', 'r', [{ column: 'c', value: 'server' }]);
    await store.close();
    clock.advance(-60_000);
    store = await openStore(tmp.dir, { clock: clock.now, foldAfter: 1000 });
    const second = await store.putRow('e', 'r', [{ column: 'd', value: 'after reopen' }]);
    assert.equal(second.timestamp, clock.t, 'the clock time, even though it went back');
    assert.ok(second.timestamp! < first.timestamp!);
    // Both puts' log records survive (their keys did not collide), so the head region knows both columns.
    assert.deepEqual((await store.getRow('e', 'r')).columns.map((c) => [c.column, c.cells[0]!.value.toString()]), [['c', 'server'], ['d', 'after reopen']]);
  } finally {
    await store.close();
    tmp.cleanup();
  }
});

// foldAfter 1 folds a row's write log after every put (folds run in the background, beside the
// reads); 1000 leaves the log to reads, column deletes and compaction. skipBudget 0 sends every
// read of a row with a deeper column than wanted to the head region (32 is the default).
for (const [seed0, latestIndex, foldAfter, skipBudget] of [[12345, true, 16, 32], [777, true, 1, 0], [4242, true, 3, 0], [2024, true, 1000, 0], [99, false, 16, 0], [31337, false, 16, 32]] as const) test(`model check (seed ${seed0}, latestIndex ${latestIndex}, foldAfter ${foldAfter}, skipBudget ${skipBudget}): random puts, backfills, deletes, clock moves, setting changes and compactions; every read path agrees with a plain model`, () => withStore(async (store, clock) => {
  const model = new WideColumnOracle();
  model.maxVersions = 3;
  model.ttlSeconds = 0;
  await store.putDataset('m', { maxVersions: 3, latestIndex });
  const rows = ['a', 'a\u0000', 'b', 'é', '😀'];
  const cols = ['x', 'x\u0000', 'x\u0001', 'y', 'é', '😀', '\uffff'];
  let seed = seed0;
  const rnd = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const pick = <T>(a: T[]): T => a[rnd(a.length)]!;
  const check = async (): Promise<void> => {
    for (const row of rows) {
      const queries: Array<Record<string, unknown>> = [
        {},
        { versions: 2 },
        { versions: 5 },
        { start: 0, end: Number.MAX_SAFE_INTEGER },
        { versions: 3, start: clock.t - 500, end: clock.t + 100 },
        { columns: ['x', '😀', 'zz'] },
        { columns: ['x\u0000', 'é'], versions: 3 },
      ];
      for (const q of queries) {
        const expected = model.get(row, clock.t, q as never);
        assert.deepEqual(await readAll(store, 'm', row, q, 1 + rnd(4)), expected, `row ${JSON.stringify(row)} query ${JSON.stringify(q)}`);
      }
    }
  };
  for (let step = 0; step < 600; step++) {
    const op = rnd(100);
    const row = pick(rows);
    if (op < 45) {
      const items = Array.from({ length: 1 + rnd(3) }, () => ({ column: pick(cols), value: `v${step}-${rnd(1000)}` }));
      const r = await store.putRow('m', row, items);
      const seen = new Map<string, number>();
      for (const it of items) {
        const k = seen.get(it.column) ?? 0;
        seen.set(it.column, k + 1);
        model.put(row, it.column, r.timestamp! + k, it.value);
      }
    } else if (op < 70) {
      const column = pick(cols);
      const ts = clock.t - rnd(2000) + rnd(50);
      const value = `b${step}`;
      await store.putRow('m', row, [{ column, value, timestamp: ts }]);
      model.put(row, column, ts, value);
    } else if (op < 78) {
      const columns = [pick(cols), pick(cols)];
      await store.deleteRow('m', row, columns);
      model.delete(row, columns);
    } else if (op < 81) {
      await store.deleteRow('m', row);
      model.delete(row);
    } else if (op < 93) {
      clock.advance(rnd(400));
    } else if (op < 97) {
      const ttl = pick([0, 0, 1, 2, 5]);
      const mv = 1 + rnd(4);
      await store.putDataset('m', { ttlSeconds: ttl, maxVersions: mv });
      model.ttlSeconds = ttl;
      model.maxVersions = mv;
    } else if (op < 98) {
      await compact(store);
    } else {
      await check();
    }
  }
  await check();
}, { foldAfter, skipBudget }));

test('latestIndex false: same answers as with head records on rows mixing deep and shallow columns', () => withStore(async (store) => {
  await store.putDataset('heads', { maxVersions: 6 });
  await store.putDataset('plain', { maxVersions: 6, latestIndex: false });
  const layout: Array<[string, number]> = [['a', 1], ['b', 5], ['c', 1], ['d', 2], ['e', 1], ['f', 1], ['g', 9], ['h', 1], ['i', 3], ['j', 1], ['k', 1], ['l', 1]];
  for (const ds of ['heads', 'plain']) {
    for (const [column, n] of layout) {
      await store.putRow(ds, 'row', Array.from({ length: n }, (_, v) => ({ column, value: `${column}${v}`, timestamp: 100 + v * 10 })));
    }
  }
  assert.equal((await store.getDataset('plain')).latestIndex, false);
  for (const q of [{}, { versions: 2 }, { versions: 3 }, { versions: 10 }, { start: 105, end: 140 }, { versions: 2, start: 0, end: 125 }, { columns: ['b', 'g', 'zz'], versions: 4 }]) {
    for (const limit of [1, 2, 5, 100]) {
      const a = await readAll(store, 'heads', 'row', q, limit);
      assert.deepEqual(await readAll(store, 'plain', 'row', q, limit), a, `${JSON.stringify(q)} limit ${limit}`);
    }
  }
  const latest = await readAll(store, 'plain', 'row', {}, 100);
  assert.deepEqual(latest.map(([c, cells]) => [c, cells.length]), layout.map(([c]) => [c, 1]));
  assert.deepEqual(latest.find(([c]) => c === 'g')![1], [[180, 'g8']]);
  const raw = store.snapshot();
  let heads = 0;
  for await (const { key } of raw.entries()) if (key[2] === 0x02 && key.readUInt32BE(3) === (await store.getDataset('plain')).id) heads++;
  await raw.close();
  assert.equal(heads, 0, 'no head records are written');
}));
