/**
 * Filling a fleet: N pins over 64 shards on a MariaDB dev cluster (2 pairs, started here), three
 * ways in one run: kit.objects.create one at a time (16 in flight), kit.objects.createMany in
 * batches of 500 (4 in flight: one transaction per shard and batch), and the raw tool's way, one
 * multi-row INSERT per shard and batch through mysql2 (the database's speed). Prints objects/s and
 * the ratios createMany / raw and createMany / create.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { devUp, devClusterDown, type DevCluster } from '../src/ops/dev-cluster.js';
import { ShardKit } from '../src/kit/shard-kit.js';
import { shardDatabaseName } from '../src/storage/shard-names.js';

const N = Number(process.env.BENCH_N ?? 20_000);
const BATCH = 500;
const SHARDS = 64;
const dir = mkdtempSync(join(tmpdir(), 'shardkit-bench-batch-'));
let cluster: DevCluster | undefined;
const pools = new Map<string, mysql.Pool>();
let kit: ShardKit | undefined;

const pinData = (i: number) => ({ n: i, details: 'x'.repeat(200) });

async function timed(label: string, fn: () => Promise<void>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  const rate = N / (Number(process.hrtime.bigint() - t0) / 1e9);
  console.log(`${label.padEnd(34)} ${rate.toFixed(0).padStart(8)} objects/s`);
  return rate;
}

async function inParallel(count: number, workers: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: workers }, async () => {
    while (next < count) await fn(next++);
  }));
}

try {
  const up = await devUp({ dir, pairs: 2, shards: SHARDS, modShards: SHARDS });
  cluster = up.cluster;
  const config = cluster.config();
  if (config.storage.backend !== 'mysql') throw new Error('not mysql');
  kit = await ShardKit.open({ config, dataDir: dir });
  for (const [name, h] of Object.entries(config.hosts)) {
    pools.set(name, mysql.createPool({ host: h.host!, port: h.port!, user: config.storage.user, password: config.storage.password!, connectionLimit: 10, charset: 'utf8mb4_bin' }));
  }
  const map = await kit.shardMap();
  const k = kit;
  console.log(`MariaDB dev cluster, 2 pairs, ${SHARDS} shards; ${N} pins of ~220 bytes each way`);
  const one = await timed('objects.create, 16 in flight', () => inParallel(N, 16, (i) => k.objects.create('pin', pinData(i), { shard: i % SHARDS })));
  const many = await timed(`objects.createMany (${BATCH}), 4 in flight`, () => inParallel(N / BATCH, 4, (b) => k.objects.createMany('pin', Array.from({ length: BATCH }, (_, j) => ({ data: pinData(b * BATCH + j), shard: (b * BATCH + j) % SHARDS })))));
  const raw = await timed(`raw multi-row INSERT (${BATCH}), 4 in flight`, () => inParallel(N / BATCH, 4, async (b) => {
    const byShard = new Map<number, unknown[][]>();
    for (let j = 0; j < BATCH; j++) {
      const i = b * BATCH + j;
      const rows = byShard.get(i % SHARDS) ?? [];
      rows.push([JSON.stringify(pinData(i)), Date.now() / 1000]);
      byShard.set(i % SHARDS, rows);
    }
    await Promise.all([...byShard].map(async ([shard, rows]) => {
      const pool = pools.get(map.locate(shard).master)!;
      await pool.query(`INSERT INTO \`${shardDatabaseName(shard)}\`.\`pins\` (data, ts) VALUES ${rows.map(() => '(?, FROM_UNIXTIME(?))').join(',')}`, rows.flat());
    }));
  }));
  console.log(`createMany / raw multi-row INSERT: ${(many / raw).toFixed(2)}x   createMany / create: ${(many / one).toFixed(2)}x`);
} finally {
  await kit?.close();
  for (const p of pools.values()) await p.end();
  if (cluster) await devClusterDown(cluster);
  rmSync(dir, { recursive: true, force: true });
}
