/**
 * PostgreSQL backend through ShardKit vs the same SQL sent with a raw pg.Pool, on two real
 * PostgreSQL 15 servers started here (initdb in temp dirs, 127.0.0.1, stopped at the end).
 * Same servers, same pool size (10 per host), same concurrency; the raw side also JSON.parses
 * what it reads, as any caller would. Short rounds alternate (ShardKit, raw, raw, ShardKit, ...);
 * the ratio is the median per-pair ratio, as in bench/mysql.bench.ts.
 * Then: getMany of 50 IDs on 50 shards over 2 hosts (time, round trips and peak in-flight per host).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { defaultConfig, parseConfig, type ShardKitConfig } from '../src/config/config.js';
import { PostgresInstance } from '../src/ops/postgres/postgres-instance.js';
import { initShards } from '../src/ops/shard-init.js';
import { ShardKit } from '../src/kit/shard-kit.js';
import type { PostgresBackend } from '../src/storage/postgres/postgres-backend.js';
import { qualified } from '../src/storage/postgres/postgres-ddl.js';
import { pinterestId } from '../src/ids/pinterest-id.js';

const POOL = 10;
const CONCURRENCY = 16;
const ROUND_MS = 400;
const PAIRS = 12;
const SHARDS = 64;
const DATABASE = 'shardkit';
const HOSTS = ['PG001A', 'PG002A'];

const dir = mkdtempSync(join(tmpdir(), 'shardkit-bench-pg-'));
const servers: PostgresInstance[] = [];
const pools = new Map<string, pg.Pool>();
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
async function compare(name: string, viaKit: (i: number) => Promise<unknown>, raw: (i: number) => Promise<unknown>): Promise<void> {
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
  console.log(`${name.padEnd(16)} shardkit ${median(k).toFixed(0).padStart(7)} ops/s   raw pg ${median(r).toFixed(0).padStart(7)} ops/s   ratio ${median(ratios).toFixed(2)}x (median of ${PAIRS} paired rounds)`);
}

/** 64 object shards and 64 mod shards, the first half on PG001A, the second on PG002A. */
function benchConfig(hosts: Record<string, { host: string; port: number }>, poolSize: number): ShardKitConfig {
  const half = SHARDS / 2;
  return parseConfig({
    storage: { backend: 'postgres', user: 'postgres', database: DATABASE, poolSize },
    hosts,
    shardMap: {
      version: 1,
      ranges: [
        { range: [0, half - 1], master: 'PG001A', slave: 'PG001B', open: true },
        { range: [half, SHARDS - 1], master: 'PG002A', slave: 'PG002B', open: true },
      ],
      modShards: {
        count: SHARDS,
        ranges: [
          { range: [0, half - 1], master: 'PG001A', slave: 'PG001B' },
          { range: [half, SHARDS - 1], master: 'PG002A', slave: 'PG002B' },
        ],
      },
    },
    topologyStore: { kind: 'memory' },
    schema: defaultConfig().schema,
  });
}

try {
  const t0 = Date.now();
  // Each server is recorded as soon as it is up, so a failure of the other still stops it.
  const started = await Promise.allSettled(HOSTS.map(async () => servers.push(await PostgresInstance.start({ databases: [DATABASE] }))));
  for (const s of started) if (s.status === 'rejected') throw s.reason;
  // The slaves are never queried here; they point at their masters' servers.
  const hosts: Record<string, { host: string; port: number }> = {};
  HOSTS.forEach((name, i) => {
    hosts[name] = { host: servers[i]!.host, port: servers[i]!.port };
    hosts[name.replace(/A$/, 'B')] = hosts[name];
  });
  const config = benchConfig(hosts, POOL);
  kit = await ShardKit.open({ config, dataDir: dir });
  const map = await kit.shardMap();
  const init = await initShards(kit.backend, map);
  console.log(`2 PostgreSQL servers up in ${Date.now() - t0} ms (init: ${init.created} of ${init.total} shards created)`);
  for (const name of HOSTS) {
    pools.set(name, new pg.Pool({ host: hosts[name]!.host, port: hosts[name]!.port, user: 'postgres', database: DATABASE, max: POOL }));
  }
  const poolOf = (shard: number) => pools.get(map.locate(shard).master)!;

  // Data: 64 boards (one per shard) with 200 pins each in board_has_pins; 1000 pins to read.
  const shards = Array.from({ length: SHARDS }, (_, s) => s);
  const boards = await Promise.all(shards.map((s) => kit!.objects.create('board', { name: `board ${s}` }, { shard: s })));
  const pins: bigint[] = [];
  for (let i = 0; i < 1000; i += 50) {
    pins.push(...(await Promise.all(Array.from({ length: 50 }, (_, j) => kit!.objects.create('pin', { n: i + j, details: 'x'.repeat(200) }, { shard: (i + j) % SHARDS })))).map((p) => p.id));
  }
  for (const b of boards) {
    await Promise.all(Array.from({ length: 200 }, (_, j) => kit!.mappings.add('board_has_pins', b.id, pins[j]!, { sequence: j })));
  }

  // The raw side sends the backend's SQL text (src/storage/postgres/postgres-backend.ts) verbatim.
  await compare('objects.get', (i) => kit!.objects.get(pins[i % pins.length]!), async (i) => {
    const d = pinterestId.decode(pins[i % pins.length]!);
    const res = await poolOf(d.shard).query<{ data: string }>(`SELECT 0 AS tbl, local_id, data, ts FROM ${qualified(d.shard, 'pins')} WHERE local_id = ANY($1::bigint[])`, [[d.localId]]);
    return JSON.parse(res.rows[0]!.data) as unknown;
  });
  await compare('objects.create', (i) => kit!.objects.create('pin', { n: i, details: 'y'.repeat(200) }, { shard: i % SHARDS }), async (i) => {
    const shard = i % SHARDS;
    const res = await poolOf(shard).query<{ local_id: string }>(`INSERT INTO ${qualified(shard, 'pins')} (data, ts) VALUES ($1, $2) RETURNING local_id`, [JSON.stringify({ n: i, details: 'y'.repeat(200) }), Date.now()]);
    return pinterestId.encode({ shard, type: 1, localId: Number(res.rows[0]!.local_id) });
  });
  await compare('mappings.list', (i) => kit!.mappings.list('board_has_pins', boards[i % SHARDS]!.id, { limit: 50, order: 'desc' }), async (i) => {
    const b = boards[i % SHARDS]!;
    const res = await poolOf(b.shard).query<{ to_id: string; sequence: string }>(`SELECT to_id, "sequence" FROM ${qualified(b.shard, 'board_has_pins')} WHERE from_id = $1 ORDER BY "sequence" DESC, to_id DESC LIMIT $2`, [b.id, 51]);
    return res.rows.slice(0, 50).map((r) => ({ id: BigInt(r.to_id), sequence: Number(r.sequence) }));
  });

  // getMany: 50 IDs on 50 distinct shards (7..31 on PG001A, 32..56 on PG002A): one query per
  // shard, all issued at once. Measured with the default pool (10 per host: at most 10 on the
  // wire per host) and with a pool of 25 per host (every query in flight together).
  const ids: bigint[] = [];
  for (let shard = 7; shard <= 56; shard++) ids.push(pins.find((p) => pinterestId.decode(p).shard === shard)!);
  const perHostShards: Record<string, number> = {};
  for (const id of ids) {
    const h = map.locate(pinterestId.decode(id).shard).master;
    perHostShards[h] = (perHostShards[h] ?? 0) + 1;
  }
  const measureGetMany = async (k: ShardKit, pool: number) => {
    const backend = k.backend as PostgresBackend;
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
    console.log(`getMany 50 ids / 50 shards / 2 hosts, pool ${pool}: median ${median(times).toFixed(2)} ms, p90 ${sorted[Math.floor(sorted.length * 0.9)]!.toFixed(2)} ms; ${per}`);
  };
  await measureGetMany(kit, POOL);
  const kit25 = await ShardKit.open({ config: benchConfig(hosts, 25), dataDir: dir });
  try {
    await measureGetMany(kit25, 25);
  } finally {
    await kit25.close();
  }
  const version = (await servers[0]!.sql<{ v: string }>('postgres', "SELECT current_setting('server_version') AS v"))[0]!.v;
  console.log(`\nsettings: pool ${POOL} per host, concurrency ${CONCURRENCY}, ${PAIRS} alternating round pairs of ${ROUND_MS} ms; PostgreSQL ${version}`);
} finally {
  await kit?.close();
  for (const p of pools.values()) await p.end();
  await Promise.all(servers.map((s) => s.destroy()));
  rmSync(dir, { recursive: true, force: true });
}
