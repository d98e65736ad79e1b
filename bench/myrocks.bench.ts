/**
 * The MyRocks wide-column engine (src/widecolumn/myrocks) on two local MariaDB servers with
 * MyRocks loaded (wide-column shards 0..31 on A, 32..63 on B):
 * - Put Row of 10 columns and Get Row (latest) of 10 columns, against raw mysql2 pools running
 *   the same statements on the same tables (target >= 0.9x);
 * - versions=5 on a deep row (1000 versions per column) against a shallow one (target >= 0.5x);
 * - batchGet of 100 rows over 2 hosts: round trips per host.
 * Short rounds alternate (engine, raw, raw, engine, ...); a ratio is the median per-pair ratio.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import mysql from 'mysql2/promise';
import { startMyrocksServers } from '../test/widecolumn/myrocks-servers.js';
import { ShardMap } from '../src/topology/shard-map.js';
import { wcDatabaseName } from '../src/widecolumn/myrocks/index.js';
import type { MyrocksEngine } from '../src/widecolumn/myrocks/index.js';

const CONCURRENCY = 16;
const POOL = 10;
const ROUND_MS = 400;
const PAIRS = 10;
const ROWS = 500;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** CPU time of this process per call, per side (microseconds): less sensitive to other load than ops/s. */
const cpuPerCall = new Map<unknown, { us: number; n: number }>();

async function throughput(op: (i: number) => Promise<unknown>, concurrency = CONCURRENCY): Promise<number> {
  let n = 0;
  const end = Date.now() + ROUND_MS;
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < end) await op(n++);
  }));
  const c = process.cpuUsage(c0);
  const acc = cpuPerCall.get(op) ?? { us: 0, n: 0 };
  cpuPerCall.set(op, { us: acc.us + c.user + c.system, n: acc.n + n });
  return n / (Number(process.hrtime.bigint() - t0) / 1e9);
}

function cpuUs(op: unknown): string {
  const c = cpuPerCall.get(op);
  return c ? (c.us / c.n).toFixed(0) : '?';
}

async function compare(name: string, a: (i: number) => Promise<unknown>, b: (i: number) => Promise<unknown>, labels: [string, string], concurrency = CONCURRENCY): Promise<void> {
  await throughput(a, concurrency);
  await throughput(b, concurrency);
  cpuPerCall.delete(a);
  cpuPerCall.delete(b);
  const xs: number[] = [];
  const ys: number[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < PAIRS; i++) {
    let x: number;
    let y: number;
    if (i % 2 === 0) {
      x = await throughput(a, concurrency);
      y = await throughput(b, concurrency);
    } else {
      y = await throughput(b, concurrency);
      x = await throughput(a, concurrency);
    }
    xs.push(x);
    ys.push(y);
    ratios.push(x / y);
  }
  console.log(`${name.padEnd(34)} ${labels[0]} ${median(xs).toFixed(0).padStart(6)} ops/s   ${labels[1]} ${median(ys).toFixed(0).padStart(6)} ops/s   ratio ${median(ratios).toFixed(2)}x (median of ${PAIRS} paired rounds, concurrency ${concurrency}); node CPU per call ${cpuUs(a)} vs ${cpuUs(b)} us`);
}

if (!existsSync('/usr/lib/mysql/plugin/ha_rocksdb.so')) {
  console.log('skipped: mariadb-plugin-rocksdb is not installed (scripts/install-test-deps.sh)');
  process.exit(0);
}

const fx = await startMyrocksServers();
let engine: MyrocksEngine | undefined;
const raw: Record<string, mysql.Pool> = {};
try {
  // 64 wide-column shards over the two servers.
  const map = ShardMap.fromJSON({
    version: 1,
    ranges: [{ range: [0, 31], master: 'A' }, { range: [32, 63], master: 'B' }],
    modShards: { count: 64, ranges: [{ range: [0, 31], master: 'A' }, { range: [32, 63], master: 'B' }] },
  });
  engine = await fx.engine({ shardMap: () => map, storage: { user: userInfo().username, poolSize: POOL } });
  const e = engine;
  for (const h of ['A', 'B'] as const) {
    raw[h] = mysql.createPool({ socketPath: fx.servers[h].socket, user: userInfo().username, connectionLimit: POOL, supportBigNumbers: true, bigNumberStrings: true, charset: 'utf8mb4_bin' });
  }
  await e.putDataset('bench', { maxVersions: 1000 });
  const cols = Array.from({ length: 10 }, (_, i) => `col${i}`);
  const value = 'x'.repeat(100);
  const rows = Array.from({ length: ROWS }, (_, i) => `user:${i}`);
  for (const row of rows) await e.putRow('bench', row, cols.map((column) => ({ column, value })));

  // The engine's statements, written out for raw mysql2: the same SQL text and parameters.
  const sha = (s: string, prefix = ''): Buffer => createHash('sha256').update(prefix).update(Buffer.from(s)).digest();
  const headKey = (row: string) => createHash('sha256').update('shardkit-wc-heads\u0000').update(Buffer.from(row)).digest();
  const place = (row: string) => {
    const shard = e.shardOf(row);
    return { table: `\`${wcDatabaseName(shard)}\`.\`bench\``, pool: raw[shard < 32 ? 'A' : 'B']! };
  };
  const NEVER = 2n ** 62n;
  const rawPut = async (i: number) => {
    const row = rows[i % ROWS]!;
    const { table, pool } = place(row);
    const ts = Date.now();
    const rh = sha(row);
    const hh = headKey(row);
    const values: unknown[] = [];
    for (const c of cols) values.push(rh, Buffer.from(c), -ts, Buffer.from(row), Buffer.from(value), NEVER, 0);
    for (const c of cols) values.push(hh, Buffer.from(c), 1, Buffer.from(row), Buffer.from(value), NEVER, ts);
    await pool.query(`INSERT INTO ${table} (rh, col, nts, row_key, v, exp, hts) VALUES ${Array.from({ length: 20 }, () => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}
         ON DUPLICATE KEY UPDATE v = IF(nts = 1 AND VALUES(hts) < hts, v, VALUES(v)), exp = IF(nts = 1 AND VALUES(hts) < hts, exp, VALUES(exp)), hts = GREATEST(hts, VALUES(hts))`, values);
  };
  const rawGet = async (i: number) => {
    const row = rows[i % ROWS]!;
    const { table, pool } = place(row);
    // The engine's statement for a latest read (myrocks-reads.ts latestStatement), and the same
    // decoding (column names as UTF-8 strings, timestamps as numbers), so both sides do equal work.
    const [r] = await pool.query(`SELECT col, hts, v FROM ${table} WHERE rh = ? AND col > ? AND hts >= ? ORDER BY col LIMIT 101`, [headKey(row), Buffer.alloc(0), 0]);
    const columns = (r as Array<{ col: Buffer; hts: string; v: Buffer }>).map((x) => ({ column: x.col.toString('utf8'), cells: [{ timestamp: Number(x.hts), value: x.v }] }));
    if (columns.length !== 10) throw new Error('raw get: wrong row');
  };
  const put = (i: number) => e.putRow('bench', rows[i % ROWS]!, cols.map((column) => ({ column, value })));
  const get = async (i: number) => {
    const r = await e.getRow('bench', rows[i % ROWS]!);
    if (r.columns.length !== 10) throw new Error('get: wrong row');
  };
  console.log(`MariaDB ${(await fx.servers.A.admin<Array<{ v: string }>>('SELECT VERSION() AS v'))[0]!.v}, MyRocks, 2 servers, 64 wide-column shards; pool ${POOL} per host on both sides; ${ROWS} rows of 10 columns x 100 bytes`);
  await compare('Put Row, 10 columns', put, rawPut, ['engine', 'raw mysql2']);
  await compare('Get Row latest, 10 columns', get, rawGet, ['engine', 'raw mysql2']);

  // Deep (1000 versions per column) against shallow (5 versions), versions=5.
  await e.putDataset('depth', { maxVersions: 1000 });
  for (let b = 0; b < 100; b++) {
    const items = [];
    for (const column of cols) for (let v = 0; v < 10; v++) items.push({ column, value: `d${b * 10 + v}`, timestamp: 1_000_000 + b * 10 + v });
    await e.putRow('depth', 'deep', items);
  }
  await e.putRow('depth', 'shallow', cols.flatMap((column) => Array.from({ length: 5 }, (_, v) => ({ column, value: `s${v}`, timestamp: 1_000_000 + v }))));
  const read5 = (row: string) => async () => {
    const r = await e.getRow('depth', row, { versions: 5 });
    if (r.columns.length !== 10 || r.columns[0]!.cells.length !== 5) throw new Error('versions=5: wrong answer');
  };
  await compare('versions=5, all 10 columns', read5('deep'), read5('shallow'), ['deep', 'shallow'], 4);
  const named5 = (row: string) => async () => {
    const r = await e.getRow('depth', row, { versions: 5, columns: cols });
    if (r.columns.length !== 10 || r.columns[0]!.cells.length !== 5) throw new Error('versions=5: wrong answer');
  };
  await compare('versions=5, 10 named columns', named5('deep'), named5('shallow'), ['deep', 'shallow'], 4);

  // batchGet of 100 rows spread over both hosts.
  const batch = rows.slice(0, 100).map((row) => ({ row }));
  const hostsOf = new Set(batch.map((b) => (e.shardOf(b.row) < 32 ? 'A' : 'B')));
  const times: number[] = [];
  let trips: Record<string, number> = {};
  for (let i = 0; i < 50; i++) {
    const before = e.roundTrips();
    const t0 = process.hrtime.bigint();
    const got = await e.batchGetRows('bench', batch);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (got.some((g) => g.columns.length !== 10)) throw new Error('batchGet: wrong answer');
    const after = e.roundTrips();
    trips = Object.fromEntries(Object.keys(after).map((h) => [h, after[h]! - (before[h] ?? 0)]));
  }
  console.log(`batchGet 100 rows on ${hostsOf.size} hosts: round trips per host ${JSON.stringify(trips)}; median ${median(times).toFixed(2)} ms over 50 calls`);
} finally {
  await engine?.close();
  await Promise.all(Object.values(raw).map((p) => p.end()));
  await fx.stop();
}
