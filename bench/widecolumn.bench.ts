// Wide-column engine vs raw rocksdb-native doing the equivalent key writes and reads, same run.
//   npm run bench -- widecolumn      (or: node --import tsx bench/widecolumn.bench.ts)
// Targets (issue 6): Put Row of 10 columns and Get Row (latest of 10 columns) >= 0.6x raw;
// Get Row versions=1 on a row with 1000 versions per column within 2x of a 1-version row.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import RocksDB from 'rocksdb-native';
import { WideColumnStore } from '../src/widecolumn/index.js';

const COLS = 10;
const VALUE = Buffer.alloc(100, 0x61);
const dir = mkdtempSync(join(tmpdir(), 'shardkit-wc-bench-'));

async function timeOps(n: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn(i);
  const ns = Number(process.hrtime.bigint() - t0);
  return n / (ns / 1e9);
}

/** Alternates a and b for `rounds` rounds and keeps the median ops/s of each. */
async function compare(n: number, rounds: number, a: (i: number) => Promise<unknown>, b: (i: number) => Promise<unknown>): Promise<[number, number]> {
  const ra: number[] = [];
  const rb: number[] = [];
  let offset = 0;
  for (let r = 0; r < rounds; r++) {
    ra.push(await timeOps(n, (i) => a(offset + i)));
    rb.push(await timeOps(n, (i) => b(offset + i)));
    offset += n;
  }
  const med = (x: number[]) => x.sort((p, q) => p - q)[Math.floor(x.length / 2)]!;
  return [med(ra), med(rb)];
}

function rawKey(row: number, col: number, ts: number): Buffer {
  // The same shape as the engine's: shard, tag, dataset, row, column, inverted timestamp.
  const head = Buffer.from(`\u0001\u0002\u0001\u0000\u0000\u0000\u0001user${row}\u0000\u0001column${col}\u0000\u0001`, 'latin1');
  const ts8 = Buffer.alloc(8);
  ts8.writeUInt32BE(0xffffffff - Math.floor(ts / 2 ** 32), 0);
  ts8.writeUInt32BE(0xffffffff - (ts % 2 ** 32), 4);
  return Buffer.concat([head, ts8]);
}

function rawRowRange(row: number): { gte: Buffer; lt: Buffer } {
  const p = Buffer.from(`\u0001\u0002\u0001\u0000\u0000\u0000\u0001user${row}\u0000\u0001`, 'latin1');
  const end = Buffer.from(p);
  end[end.length - 1]! += 1;
  return { gte: p, lt: end };
}

const results: string[] = [];
function report(name: string, engine: number, raw: number, target: string): void {
  const line = `${name.padEnd(58)} engine ${engine.toFixed(0).padStart(7)} ops/s   raw ${raw.toFixed(0).padStart(7)} ops/s   ratio ${(engine / raw).toFixed(2)}x (target ${target})`;
  results.push(line);
  console.log(line);
}

try {
  const store = await WideColumnStore.open(join(dir, 'engine'));
  await store.putDataset('bench', { maxVersions: 1000 });
  const raw = new RocksDB(join(dir, 'raw'));
  await raw.ready();
  const items = Array.from({ length: COLS }, (_, c) => ({ column: `column${c}`, value: VALUE }));
  const N = 3000;

  // 1. Put Row of 10 columns (server time) vs one raw write batch of 10 keys.
  let ts = 1_700_000_000_000;
  const [putE, putR] = await compare(N, 3,
    (i) => store.putRow('bench', `user${i}`, items),
    async (i) => {
      const w = raw.write({ capacity: COLS, autoDestroy: true });
      const t = ++ts;
      for (let c = 0; c < COLS; c++) w.tryPut(rawKey(i, c, t), VALUE);
      await w.flush();
    });
  report('Put Row, 10 columns', putE, putR, '>= 0.6x');

  // 2. Get Row, latest version of 10 columns, vs one raw range scan of the row's 10 keys.
  const rows = 3 * N;
  const [getE, getR] = await compare(N, 3,
    (i) => store.getRow('bench', `user${i % rows}`),
    async (i) => {
      let n = 0;
      for await (const _ of raw.iterator(rawRowRange(i % rows))) n++;
      if (n !== COLS) throw new Error(`raw row has ${n} keys`);
    });
  report('Get Row, latest of 10 columns', getE, getR, '>= 0.6x');

  // 3. Get Row versions=1 on a row with 1000 versions per column vs a row with 1 version.
  for (let v = 0; v < 1000; v += 50) {
    await store.batchPutRows('bench', [{ row: 'deep', items: Array.from({ length: COLS * 50 }, (_, k) => ({ column: `column${k % COLS}`, value: VALUE, timestamp: 1_600_000_000_000 + v + Math.floor(k / COLS) })) }]);
  }
  await store.putRow('bench', 'shallow', items);
  const deep = await store.getRow('bench', 'deep', { versions: 1000, columns: ['column0'] });
  if (deep.columns[0]!.cells.length !== 1000) throw new Error('deep row does not hold 1000 versions');
  const [deepR, shallowR] = await compare(N, 3, () => store.getRow('bench', 'deep'), () => store.getRow('bench', 'shallow'));
  report('Get Row v=1: 1000-version row vs 1-version row', deepR, shallowR, 'within 2x: >= 0.5x');
  // Informational: the cell path (versions=2), which seeks past unneeded versions per column.
  const [deep2, shallow2] = await compare(1000, 3, () => store.getRow('bench', 'deep', { versions: 2 }), () => store.getRow('bench', 'shallow', { versions: 2 }));
  report('Get Row v=2: 1000-version row vs 1-version row (info)', deep2, shallow2, 'info');
  const [deepNaive, _] = await compare(200, 1, async () => {
    let n = 0;
    for await (const _e of store.db.iterator({ gte: Buffer.from([0]), lt: Buffer.from([0xff, 0xff]) }, { limit: COLS * 1000 })) n++;
    return n;
  }, async () => 0);
  console.log(`(for scale: scanning 10,000 raw cells costs ${(1e6 / deepNaive).toFixed(0)} us; Get Row v=1 on the deep row costs ${(1e6 / deepR).toFixed(0)} us)`);

  await store.close();
  await raw.close();
  console.log('\nsummary:');
  for (const l of results) console.log(`  ${l}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
