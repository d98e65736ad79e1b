/**
 * The randomized model test of the wide-column engine interface (issue 15), part of the
 * conformance suite. Seeded: the seed is printed, and WC_MODEL_SEED=<seed> replays one run.
 *
 * - Sequential: random puts (server and explicit timestamps, same-timestamp rewrites, backfills,
 *   future timestamps within the skew), deletes of columns and rows, clock moves and compactions,
 *   against an in-memory oracle; after every step a random read (every option: columns,
 *   versions, start/end, limit) is compared page by page, and batch reads too.
 * - Concurrent: writers, readers and compactions at once on the real clock. Every read must see
 *   each batch put whole, never an older value than one acknowledged before the read began, and a
 *   column deleted and backfilled while compactions run keeps its acknowledged cell.
 * Both parts are bounded by operation counts, never by time, so a loaded machine only runs slower.
 * `npm test` runs the full counts; `npm run test:unit` (scripts/run-tests.mjs sets
 * SHARDKIT_UNIT=1) half of each, with the same mix of operations and the same checks: the model
 * runs of the RocksDB and HTTP suites were ~25 s of its CPU.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { WideColumnEngine } from '../../src/widecolumn/engine.js';
import type { GetRowOptions, RowResult } from '../../src/widecolumn/types.js';
import { SuiteClock, type WideColumnSuiteOptions } from './widecolumn-suite.js';
import { WideColumnOracle as Oracle, type Cells } from './widecolumn-oracle.js';

function plain(r: RowResult): Array<[string, Cells]> {
  return r.columns.map((c) => [c.column, c.cells.map((x) => [x.timestamp, x.value.toString('utf8')] as [number, string])]);
}

/** A small seeded PRNG (mulberry32). */
function prng(seed: number): (n: number) => number {
  let a = seed >>> 0;
  return (n: number) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) % n);
  };
}

function seedFor(name: string): number {
  const fromEnv = process.env.WC_MODEL_SEED;
  const seed = fromEnv ? Number(fromEnv) : Math.floor(Math.random() * 2 ** 31);
  console.log(`# wide-column model test (${name}): seed ${seed} (replay with ${HALF ? 'SHARDKIT_UNIT=1 ' : ''}WC_MODEL_SEED=${seed})`);
  return seed;
}

/** Every page of a read, checking page sizes and markers on the way. */
async function readAll(e: WideColumnEngine, ds: string, row: string, q: GetRowOptions, limit: number): Promise<Array<[string, Cells]>> {
  const out: Array<[string, Cells]> = [];
  let marker: string | null = null;
  for (let pages = 0; ; pages++) {
    assert.ok(pages < 100, 'paging does not end');
    const r = await e.getRow(ds, row, { ...q, limit, marker });
    assert.ok(r.columns.length <= limit);
    out.push(...plain(r));
    if (r.marker === null) return out;
    assert.equal(r.columns.length, limit, 'a page with a marker is full');
    marker = r.marker;
  }
}

const HALF = process.env.SHARDKIT_UNIT === '1';
const SEQUENTIAL_STEPS = HALF ? 200 : 400;
const CONCURRENT_BATCHES = HALF ? 60 : 120;
const BACKFILL_ROUNDS = HALF ? 50 : 100;

const ROWS = ['u1', 'u2', 'é', 'a\u0000b'];
const COLUMNS = ['10', '7', ' ', 'a', 'click', 'é', '😀', 'x\u0000'];

async function sequential(options: WideColumnSuiteOptions, maxVersions: number, ttlSeconds: number): Promise<void> {
  const seed = seedFor(`${options.name}, sequential, maxVersions ${maxVersions}, ttl ${ttlSeconds}`);
  const rnd = prng(seed);
  const clock = new SuiteClock();
  const fx = await options.factory({ clock: clock.now });
  const e = fx.engine;
  const oracle = new Oracle(maxVersions, ttlSeconds);
  const used: Array<[string, string, number]> = [];
  const pick = <T>(list: readonly T[]): T => list[rnd(list.length)]!;
  try {
    await e.putDataset('m', { maxVersions, ttlSeconds });
    for (let step = 0; step < SEQUENTIAL_STEPS; step++) {
      const op = rnd(100);
      const where = `seed ${seed}, step ${step}`;
      if (op < 45) {
        // A put of 1..3 distinct columns: server time, explicit, backfill, same-timestamp rewrite.
        const row = pick(ROWS);
        const cols = [...new Set(Array.from({ length: 1 + rnd(3) }, () => pick(COLUMNS)))];
        const value = `v${step}`;
        const items = cols.map((column) => {
          const kind = rnd(5);
          if (kind === 0) return { column, value };
          if (kind === 1 && used.length > 0) {
            const [, , ts] = pick(used);
            return { column, value, timestamp: ts };
          }
          if (kind === 2) return { column, value, timestamp: clock.t + rnd(5_000) };
          return { column, value, timestamp: clock.t - rnd(200_000) };
        });
        const batch = rnd(4) === 0;
        const other = pick(ROWS.filter((r) => r !== row));
        const bts = clock.t - rnd(1000);
        const results = batch
          ? await e.batchPutRows('m', [{ row, items }, { row: other, items: [{ column: 'b', value, timestamp: bts }] }])
          : [await e.putRow('m', row, items)];
        for (const it of items) {
          const ts = it.timestamp ?? results[0]!.timestamp!;
          assert.equal(typeof ts, 'number', where);
          oracle.put(row, it.column, ts, value);
          used.push([row, it.column, ts]);
        }
        if (batch) oracle.put(other, 'b', bts, value);
      } else if (op < 53) {
        const row = pick(ROWS);
        if (rnd(3) === 0) {
          await e.deleteRow('m', row);
          oracle.delete(row);
        } else {
          const cols = [...new Set([pick(COLUMNS), pick(COLUMNS)])];
          await e.batchDeleteRows('m', [{ row, columns: cols }]);
          oracle.delete(row, cols);
        }
      } else if (op < 60) {
        clock.advance(rnd(3) === 0 ? rnd(120_000) : rnd(50));
      } else if (op < 64) {
        await e.compact();
      } else {
        const row = pick(ROWS);
        const q: GetRowOptions = {};
        if (rnd(3) === 0) q.columns = [...new Set([pick(COLUMNS), pick(COLUMNS), pick(COLUMNS)])];
        if (rnd(2) === 0) q.versions = 1 + rnd(maxVersions + 2);
        if (rnd(4) === 0) {
          q.start = clock.t - rnd(300_000);
          q.end = q.start + 1 + rnd(300_000);
        }
        const limit = 1 + rnd(4);
        assert.deepEqual(await readAll(e, 'm', row, q, limit), oracle.get(row, clock.t, q), `${where}: read ${JSON.stringify({ row, ...q, limit })}`);
        if (rnd(4) === 0) {
          const got = await e.batchGetRows('m', ROWS.map((r) => ({ row: r, versions: maxVersions, limit: 1000 })));
          assert.deepEqual(got.map(plain), ROWS.map((r) => oracle.get(r, clock.t, { versions: maxVersions })), `${where}: batch read`);
        }
      }
    }
    // Everything, at the end, after one more compaction.
    await e.compact();
    for (const row of ROWS) assert.deepEqual(await readAll(e, 'm', row, { versions: maxVersions }, 3), oracle.get(row, clock.t, { versions: maxVersions }), `seed ${seed}: final read of ${row}`);
  } finally {
    await fx.cleanup();
  }
}

async function concurrent(options: WideColumnSuiteOptions): Promise<void> {
  const seed = seedFor(`${options.name}, concurrent`);
  const rnd = prng(seed);
  // The real clock: server timestamps, compactions and reads interleave as in production.
  const fx = await options.factory({ clock: Date.now });
  const e = fx.engine;
  const crossRow = options.supports?.crossRowBatches ?? true;
  const WRITERS = 3;
  const BATCHES = CONCURRENT_BATCHES;
  const BATCH_ROWS = ['b0', 'b1', 'b2', 'b3'];
  const acked = new Array<number>(WRITERS).fill(-1);
  const failures: string[] = [];
  let writing = WRITERS + 2;
  try {
    await e.putDataset('c', { maxVersions: 2 });
    // Writer w owns column w<w> of every batch row: each batch sets it to the batch number in all rows.
    const writer = async (w: number): Promise<void> => {
      try {
        for (let n = 0; n < BATCHES; n++) {
          await e.batchPutRows('c', BATCH_ROWS.map((row) => ({ row, items: [{ column: `w${w}`, value: String(n) }, { column: 'shared', value: `${w}:${n}` }] })));
          acked[w] = n;
        }
      } finally {
        writing--;
      }
    };
    // Deletes a column and backfills it below its old cells, again and again, while compactions run
    // (defect 1): the acknowledged backfill must stay visible until the next delete.
    const backfiller = async (row: string): Promise<void> => {
      try {
        for (let n = 0; n < BACKFILL_ROUNDS; n++) {
          await e.putRow('c', row, [{ column: 'c', value: `new${n}`, timestamp: Date.now() - 1000 }]);
          await e.putRow('c', row, [{ column: 'c', value: `newer${n}`, timestamp: Date.now() - 500 }]);
          await e.deleteRow('c', row, ['c']);
          const ts = 1000 + rnd(1000);
          await e.putRow('c', row, [{ column: 'c', value: `old${n}`, timestamp: ts }]);
          for (let k = 0; k < 3; k++) {
            const r = await e.getRow('c', row);
            const got = r.columns.map((c) => c.cells.map((x) => `${x.timestamp}=${x.value.toString()}`).join(',')).join(';');
            if (got !== `${ts}=old${n}`) failures.push(`backfill ${row} ${n}: the acknowledged cell ${ts}=old${n} reads as "${got}"`);
          }
        }
      } finally {
        writing--;
      }
    };
    const reader = async (): Promise<void> => {
      while (writing > 0) {
        const before = [...acked];
        const rows = await e.batchGetRows('c', BATCH_ROWS.map((row) => ({ row, versions: 2 })));
        for (let w = 0; w < WRITERS; w++) {
          const newest = rows.map((r) => r.columns.find((c) => c.column === `w${w}`)?.cells[0]?.value.toString() ?? '-1').map(Number);
          if (crossRow && new Set(newest).size !== 1) failures.push(`writer ${w}: one read saw batches ${newest.join(',')} in its rows`);
          newest.forEach((n, i) => {
            if (n < before[w]!) failures.push(`writer ${w}: batch ${before[w]} was acknowledged before the read, which saw ${n} in ${BATCH_ROWS[i]}`);
          });
        }
        // Within one row a put is whole on every engine: the row's newest 'shared' cell w:n came in
        // the same put as its column w<w> = n, so that column reads n or later.
        rows.forEach((r, i) => {
          const [w, n] = (r.columns.find((c) => c.column === 'shared')?.cells[0]?.value.toString() ?? '-1:-1').split(':').map(Number) as [number, number];
          if (w < 0) return;
          const own = Number(r.columns.find((c) => c.column === `w${w}`)?.cells[0]?.value.toString() ?? '-1');
          if (own < n) failures.push(`${BATCH_ROWS[i]}: shared says writer ${w} batch ${n}, but its column w${w} reads ${own}: half a put`);
        });
        const shared = rows.map((r) => r.columns.find((c) => c.column === 'shared')?.cells.map((x) => x.value.toString()).join(',') ?? '');
        if (crossRow && new Set(shared).size !== 1) failures.push(`column shared differs between rows of one read: ${shared.join(' | ')}`);
        // Named columns, paged: one page is one consistent view too.
        const one = await e.getRow('c', BATCH_ROWS[rnd(BATCH_ROWS.length)]!, { columns: ['w0', 'w1', 'w2'], versions: 2, limit: 3 });
        for (const c of one.columns) {
          const w = Number(c.column.slice(1));
          if (Number(c.cells[0]!.value.toString()) < before[w]!) failures.push(`writer ${w}: a named-column read saw an older batch than one acknowledged before it`);
        }
      }
    };
    const compactor = async (): Promise<void> => {
      while (writing > 0) await e.compact();
    };
    await Promise.all([...Array.from({ length: WRITERS }, (_, w) => writer(w)), backfiller('bf1'), backfiller('bf2'), reader(), reader(), compactor()]);
    assert.deepEqual(failures.slice(0, 10), [], `seed ${seed}: ${failures.length} failures`);
    // At rest, after one more compaction: the last batch of every writer, whole.
    await e.compact();
    const rows = await e.batchGetRows('c', BATCH_ROWS.map((row) => ({ row })));
    for (let w = 0; w < WRITERS; w++) assert.deepEqual(rows.map((r) => r.columns.find((c) => c.column === `w${w}`)?.cells[0]?.value.toString()), BATCH_ROWS.map(() => String(BATCHES - 1)));
  } finally {
    await fx.cleanup();
  }
}

export function runWideColumnModelTests(options: WideColumnSuiteOptions): void {
  test(`[${options.name}] model: random puts, backfills, deletes, clock moves and compactions agree with an oracle on every read path (maxVersions 3)`, () => sequential(options, 3, 0));
  test(`[${options.name}] model: the same with a TTL and maxVersions 1`, () => sequential(options, 1, 60));
  test(`[${options.name}] model, concurrent: writers, readers, a delete-and-backfill loop and compactions at once; whole batches, nothing acknowledged lost`, () => concurrent(options));
}
