/**
 * MySQL backend through ShardKit vs the same SQL sent with raw mysql2, on a real dev cluster
 * (2 pairs of mariadbd started here, stopped at the end). Same servers, same pool size (10 per
 * host), same concurrency; the raw side also JSON.parses what it reads, as any caller would.
 * Short rounds alternate (ShardKit, raw, raw, ShardKit, ...); the ratio is the median per-pair ratio.
 * Then: getMany of 50 IDs on 50 shards over 2 hosts (time, round trips and peak in-flight per host).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { devUp, type DevCluster } from '../src/ops/dev-cluster.js';
import { ShardKit } from '../src/kit/shard-kit.js';
import { MysqlBackend } from '../src/storage/mysql/mysql-backend.js';
import { pinterestId } from '../src/ids/pinterest-id.js';
import { shardDatabaseName } from '../src/storage/shard-names.js';

const POOL = 10;
const CONCURRENCY = 16;
const ROUND_MS = 400;
const PAIRS = 12;

const dir = mkdtempSync(join(tmpdir(), 'shardkit-bench-mysql-'));
let cluster: DevCluster | undefined;
const pools = new Map<string, mysql.Pool>();
let kit: ShardKit | undefined;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** ops/s of `op` run by CONCURRENCY workers for ROUND_MS. */
async function throughput(op: (i: number) => Promise<unknown>): Promise<number> {
  let n = 0;
  const end = Date.now() + ROUND_MS;
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (Date.now() < end) await op(n++);
  }));
  return n / (Number(process.hrtime.bigint() - t0) / 1e9);
}

/**
 * Alternating short rounds (the order swaps every pair) so that load from other processes hits
 * both sides alike; the ratio is the median of the per-pair ratios.
 */
async function compare(name: string, viaKit: (i: number) => Promise<unknown>, raw: (i: number) => Promise<unknown>): Promise<string> {
  await throughput(viaKit); // warm-up both sides
  await throughput(raw);
  const k: number[] = [];
  const r: number[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < PAIRS; i++) {
    let a: number;
    let b: number;
    if (i % 2 === 0) {
      a = await throughput(viaKit);
      b = await throughput(raw);
    } else {
      b = await throughput(raw);
      a = await throughput(viaKit);
    }
    k.push(a);
    r.push(b);
    ratios.push(a / b);
  }
  const line = `${name.padEnd(16)} shardkit ${median(k).toFixed(0).padStart(7)} ops/s   raw mysql2 ${median(r).toFixed(0).padStart(7)} ops/s   ratio ${median(ratios).toFixed(2)}x (median of ${PAIRS} paired rounds)`;
  console.log(line);
  return line;
}

try {
  const t0 = Date.now();
  const up = await devUp({ dir, pairs: 2, shards: 64, modShards: 64 });
  cluster = up.cluster;
  console.log(`dev cluster: 2 pairs, 64 + 64 shards, up in ${Date.now() - t0} ms`);
  const config = cluster.config();
  if (config.storage.backend !== 'mysql') throw new Error('not mysql');
  config.storage.poolSize = POOL;
  kit = await ShardKit.open({ config, dataDir: dir });
  const storage = config.storage;
  for (const [name, h] of Object.entries(config.hosts)) {
    pools.set(name, mysql.createPool({
      host: h.host!, port: h.port!, user: storage.user, password: storage.password!, connectionLimit: POOL,
      supportBigNumbers: true, bigNumberStrings: true, charset: 'utf8mb4_bin',
    }));
  }
  const map = await kit.shardMap();
  const poolOf = (shard: number) => pools.get(map.locate(shard).master)!;

  // Data: 64 boards (one per shard) with 200 pins each in board_has_pins; 1000 pins to read.
  const shards = Array.from({ length: 64 }, (_, s) => s);
  const boards = await Promise.all(shards.map((s) => kit!.objects.create('board', { name: `board ${s}` }, { shard: s })));
  const pins: bigint[] = [];
  for (let i = 0; i < 1000; i += 50) {
    pins.push(...(await Promise.all(Array.from({ length: 50 }, (_, j) => kit!.objects.create('pin', { n: i + j, details: 'x'.repeat(200) }, { shard: (i + j) % 64 })))).map((p) => p.id));
  }
  for (const b of boards) {
    await Promise.all(Array.from({ length: 200 }, (_, j) => kit!.mappings.add('board_has_pins', b.id, pins[j]!, { sequence: j })));
  }

  const lines: string[] = [];
  lines.push(await compare('objects.get', (i) => kit!.objects.get(pins[i % pins.length]!), async (i) => {
    const id = pins[i % pins.length]!;
    const d = pinterestId.decode(id);
    const [rows] = await poolOf(d.shard).query(`SELECT 0 AS tbl, local_id, data, UNIX_TIMESTAMP(ts) AS ts FROM \`${shardDatabaseName(d.shard)}\`.\`pins\` WHERE local_id IN (?)`, [d.localId]);
    const row = (rows as Array<{ data: string }>)[0]!;
    return JSON.parse(row.data) as unknown;
  }));
  lines.push(await compare('objects.create', (i) => kit!.objects.create('pin', { n: i, details: 'y'.repeat(200) }, { shard: i % 64 }), async (i) => {
    const shard = i % 64;
    const [res] = await poolOf(shard).query(`INSERT INTO \`${shardDatabaseName(shard)}\`.\`pins\` (data, ts) VALUES (?, FROM_UNIXTIME(?))`, [JSON.stringify({ n: i, details: 'y'.repeat(200) }), Date.now() / 1000]);
    return pinterestId.encode({ shard, type: 1, localId: Number((res as { insertId: number }).insertId) });
  }));
  lines.push(await compare('mappings.list', (i) => kit!.mappings.list('board_has_pins', boards[i % 64]!.id, { limit: 50, order: 'desc' }), async (i) => {
    const b = boards[i % 64]!;
    const [rows] = await poolOf(b.shard).query(`SELECT to_id, \`sequence\` FROM \`${shardDatabaseName(b.shard)}\`.\`board_has_pins\` WHERE from_id = ? ORDER BY \`sequence\` DESC, to_id DESC LIMIT ?`, [b.id, 51]);
    return (rows as Array<{ to_id: string; sequence: string }>).slice(0, 50).map((r) => ({ id: BigInt(r.to_id), sequence: Number(r.sequence) }));
  }));

  // getMany: 50 IDs on 50 distinct shards (7..31 on MySQL001A, 32..56 on MySQL002A): one query
  // per shard, all issued at once. Measured with the default pool (10 per host: at most 10 on the
  // wire per host) and with a pool of 25 per host (every query in flight together).
  const ids: bigint[] = [];
  for (let shard = 7; shard <= 56; shard++) ids.push(pins.find((p) => pinterestId.decode(p).shard === shard)!);
  const perHostShards: Record<string, number> = {};
  for (const id of ids) {
    const h = map.locate(pinterestId.decode(id).shard).master;
    perHostShards[h] = (perHostShards[h] ?? 0) + 1;
  }
  const measureGetMany = async (k: ShardKit, pool: number) => {
    const backend = k.backend as MysqlBackend;
    for (let i = 0; i < 20; i++) await k.objects.getMany(ids);
    const times: number[] = [];
    const trips: Record<string, number[]> = {};
    const peaks: Record<string, number> = {};
    for (let i = 0; i < 100; i++) {
      backend.hostStats({ reset: true });
      const t = process.hrtime.bigint();
      const got = await k.objects.getMany(ids);
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
      for (const [h, st] of Object.entries(backend.hostStats())) {
        (trips[h] ??= []).push(st.queries);
        peaks[h] = Math.max(peaks[h] ?? 0, st.maxInFlight);
      }
      if (got.some((g) => g === undefined)) throw new Error('getMany lost an object');
    }
    const sorted = [...times].sort((a, b) => a - b);
    const per = Object.keys(trips).filter((h) => perHostShards[h]).map((h) => `${h}: ${Math.max(...trips[h]!)} round trips for ${perHostShards[h]} shards, peak ${peaks[h]} in flight`).join('; ');
    const line = `getMany 50 ids / 50 shards / 2 hosts, pool ${pool}: median ${median(times).toFixed(2)} ms, p90 ${sorted[Math.floor(sorted.length * 0.9)]!.toFixed(2)} ms; ${per}`;
    console.log(line);
  };
  await measureGetMany(kit, POOL);
  const wide = JSON.parse(JSON.stringify(config)) as typeof config;
  if (wide.storage.backend === 'mysql') wide.storage.poolSize = 25;
  const kit25 = await ShardKit.open({ config: wide, dataDir: dir });
  try {
    await measureGetMany(kit25, 25);
  } finally {
    await kit25.close();
  }
  console.log(`\nsettings: pool ${POOL} per host, concurrency ${CONCURRENCY}, ${PAIRS} alternating round pairs of ${ROUND_MS} ms; MariaDB ${(await cluster.instance('MySQL001A').admin<Array<{ v: string }>>('SELECT VERSION() AS v'))[0]!.v}`);
} finally {
  await kit?.close();
  for (const p of pools.values()) await p.end();
  await cluster?.down();
  rmSync(dir, { recursive: true, force: true });
}
