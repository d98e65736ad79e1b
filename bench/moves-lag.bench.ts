/**
 * The source's slave lag during a move's copy, with `--max-rate` and `--max-source-lag` set, under
 * a two-service write load (issue #29, benchmark row "source slave lag during the copy with
 * --max-rate set: <= the configured bound"). For each engine, a dev cluster whose source pair
 * holds 32 shards with ROWS rows (~300 bytes each), then `shards move` of those shards to another
 * pair while two ShardKit services create pins on them (retrying SHARD_MOVING for 2.5 s). From
 * the move's start to its `copied` phase the lag is sampled every 50 ms with the measure the
 * copy's gate reads:
 *   - MariaDB: transactions of the source's GTID domain the slave has not applied
 *     (src/moves/mariadb/copy-source.ts sourceSlaveLag), bound in transactions;
 *   - PostgreSQL: bytes of WAL between the primary's position and the standby's replay
 *     (src/moves/postgres/source-standby-lag.ts), bound in bytes.
 * Prints max and p99 of the samples against the bound, the gate's waits, the copy's rate against
 * --max-rate, and the acknowledged writes read back after the switch (0 lost).
 *
 *   node --import tsx bench/moves-lag.bench.ts                 (both engines, ROWS=300000)
 *   ENGINES=postgres ROWS=1000000 node --import tsx bench/moves-lag.bench.ts
 *   BENCH_BUSY=1 ...: one `yes > /dev/null` per core beside the run
 *   COPY_STREAMS=1 ...: one dump stream (MariaDB: no shared lock on the source's slave)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { resolveSchema } from '../src/config/config.js';
import { isShardKitError } from '../src/errors.js';
import { ShardKit } from '../src/kit/shard-kit.js';
import type { CopyWait } from '../src/moves/copy-throttle.js';
import { sourceSlaveLag } from '../src/moves/mariadb/copy-source.js';
import { createMariadbMoveEngine } from '../src/moves/mariadb/index.js';
import { moveAdmin } from '../src/moves/mariadb/move-admin.js';
import { runMove, type MoveEvent } from '../src/moves/move-runner.js';
import type { MoveEngine } from '../src/moves/move-engine.js';
import { createPostgresMoveEngine, POSTGRES_MOVE_MAX_LAG_BYTES } from '../src/moves/postgres/index.js';
import { sourceStandbyLag } from '../src/moves/postgres/source-standby-lag.js';
import { devClusterDown, devUp, DevCluster } from '../src/ops/dev-cluster.js';
import { devAddPair } from '../src/ops/dev/dev-add-pair.js';
import { pgServer } from '../src/ops/dev/dev-postgres.js';
import { devHostAdmin } from '../src/ops/failover/host-admin.js';
import { fleetTables } from '../src/storage/shard-names.js';
import { createTopologyStore } from '../src/topology/index.js';
import { ShardMap, type MoveRecord } from '../src/topology/shard-map.js';
import { busyHost } from './bench-shell.js';

const ROWS = Number(process.env.ROWS ?? 300_000);
const ENGINES = (process.env.ENGINES ?? 'mariadb,postgres').split(',');
const MOVING = 32;
/** COPY_STREAMS=1: the copy's streams (`shards move --copy-streams`; default 4). */
const STREAMS = process.env.COPY_STREAMS !== undefined ? Number(process.env.COPY_STREAMS) : undefined;
/** How long the write load runs before the move, its lag sampled alone. */
const BASELINE_MS = Number(process.env.BASELINE_MS ?? 3000);
/** MariaDB: rows per second and transactions; PostgreSQL: bytes per second and bytes of WAL. */
const MARIADB = { maxRate: Number(process.env.MARIADB_MAX_RATE ?? 60_000), bound: Number(process.env.MARIADB_MAX_LAG ?? 100) };
const POSTGRES = { maxBytesRate: Number(process.env.POSTGRES_MAX_RATE ?? 20_000_000), bound: Number(process.env.POSTGRES_MAX_LAG ?? 8 * 1024 * 1024) };
const db = (s: number) => `db${String(s).padStart(5, '0')}`;

interface Figures {
  engine: string; rows: number; unit: string; bound: number; rate: string; samples: number[]; baseline: number[]; waits: CopyWait[];
  copyMs: number; freezeMs: number; acked: number; lost: number; refused: number; outcome: string;
}

/** Two services creating pins on the moving shards until stopped; a client retries SHARD_MOVING for 2.5 s. */
function writers(kits: ShardKit[]): { acked: string[]; refused: () => number; stop: () => Promise<void> } {
  const acked: string[] = [];
  let refused = 0;
  let on = true;
  const loops = kits.map(async (kit, k) => {
    for (let i = 0; on; i++) {
      const t0 = performance.now();
      for (;;) {
        try {
          acked.push((await kit.objects.create('pin', { w: k, i }, { shard: (i * 2 + k) % MOVING })).id.toString());
          break;
        } catch (err) {
          if (!isShardKitError(err, 'SHARD_MOVING')) throw err;
          if (performance.now() - t0 > 2500) {
            refused++;
            break;
          }
        }
      }
    }
  });
  return { acked, refused: () => refused, stop: async () => { on = false; await Promise.all(loops); } };
}

/** Samples `lag()` every 50 ms until stopped. */
function sampler(lag: () => Promise<number>): { samples: number[]; stop: () => Promise<void> } {
  const samples: number[] = [];
  let on = true;
  const loop = (async () => {
    while (on) {
      samples.push(await lag().catch(() => NaN));
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return { samples, stop: async () => { on = false; await loop; } };
}

async function moveUnderLoad(dir: string, engine: MoveEngine, maxLag: number | undefined, target: { master: string; slave: string }, lag: () => Promise<number>): Promise<Omit<Figures, 'engine' | 'rows' | 'unit' | 'bound' | 'rate' | 'waits'>> {
  const config = DevCluster.require(dir).config();
  const store = createTopologyStore(config.topologyStore, { dataDir: dir });
  if ((await store.read()) === undefined) await store.write(ShardMap.fromJSON(config.shardMap, { hosts: Object.keys(config.hosts) }), 0);
  const kits = [await ShardKit.open({ configPath: join(dir, 'shardkit.json'), dataDir: dir }), await ShardKit.open({ configPath: join(dir, 'shardkit.json'), dataDir: dir })];
  const load = writers(kits);
  // The lag the write load alone makes, before the move starts: what no throttle of the copy can remove.
  const quiet = sampler(lag);
  await new Promise((r) => setTimeout(r, BASELINE_MS));
  await quiet.stop();
  const events: Array<MoveEvent & { at: number }> = [];
  let sampling: ReturnType<typeof sampler> | undefined;
  let copied: Promise<void> | undefined;
  const result = await runMove({
    store, engine, hosts: Object.keys(config.hosts), ...(maxLag !== undefined ? { maxLag } : {}),
    start: { span: { first: 0, last: MOVING - 1 }, target },
    onEvent: (e) => {
      events.push({ ...e, at: performance.now() });
      if (e.phase === 'started') sampling ??= sampler(lag);
      if (e.phase === 'copied') copied = sampling?.stop();
    },
  });
  await copied;
  await load.stop();
  let lost = 0;
  for (const id of load.acked) await kits[0]!.objects.get(id).catch(() => lost++);
  for (const k of kits) await k.close();
  await store.close();
  const at = (phase: string) => events.find((e) => e.phase === phase)?.at ?? NaN;
  return { samples: sampling?.samples ?? [], baseline: quiet.samples, copyMs: at('copied') - at('started'), freezeMs: result.freezeToSwitchMs ?? NaN, acked: load.acked.length, lost, refused: load.refused(), outcome: result.outcome };
}

async function mariadb(): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-bench-lag-maria-'));
  try {
    const { cluster } = await devUp({ dir, pairs: 2, shards: MOVING * 2 });
    const config = cluster.config();
    if (config.storage.backend !== 'mysql') throw new Error('not a mysql cluster');
    const hostAdmin = devHostAdmin(cluster);
    const src = await hostAdmin.connect('MySQL001A');
    const per = Math.ceil(ROWS / MOVING);
    for (let s = 0; s < MOVING; s++) await src.query(`INSERT INTO \`${db(s)}\`.pins (data) SELECT CONCAT('{"i":', seq, ',"pad":"', REPEAT('x', 260), '"}') FROM \`${db(s)}\`.seq_1_to_${per}`);
    await src.end();
    const waits: CopyWait[] = [];
    const admin = moveAdmin(hostAdmin);
    const engine = createMariadbMoveEngine({
      hosts: config.hosts, user: config.storage.user, ...(config.storage.password !== undefined ? { password: config.storage.password } : {}),
      tables: fleetTables(resolveSchema(config), 'objects'), admin, maxRate: MARIADB.maxRate, maxSourceSlaveLag: MARIADB.bound, onCopyWait: (w) => waits.push(w),
      ...(STREAMS !== undefined ? { copyStreams: STREAMS } : {}),
    });
    const lag = sourceSlaveLag(admin, { source: { master: 'MySQL001A', slave: 'MySQL001B' } } as MoveRecord);
    const f = await moveUnderLoad(dir, engine, undefined, { master: 'MySQL002A', slave: 'MySQL002B' }, lag);
    await engine.close();
    return { ...f, engine: 'MariaDB 10.11', rows: per * MOVING, unit: 'transactions', bound: MARIADB.bound, rate: `${MARIADB.maxRate} rows/s`, waits };
  } finally {
    const c = DevCluster.open(dir);
    if (c) await devClusterDown(c).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function postgres(): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-bench-lag-pg-'));
  try {
    await devUp({ dir, engine: 'postgres', pairs: 1, shards: MOVING * 2, modShards: 2 });
    const pair = await devAddPair(dir);
    const cluster = DevCluster.require(dir);
    const config = cluster.config();
    if (config.storage.backend !== 'postgres') throw new Error('not a postgres cluster');
    const storage = config.storage;
    const per = Math.ceil(ROWS / MOVING);
    const src = pgServer(cluster, 'PG001A');
    for (let s = 0; s < MOVING; s++) {
      await src.sql(`INSERT INTO ${db(s)}.pins (data, ts) SELECT '{"i":' || g || ',"pad":"' || repeat(md5(g::text), 8) || '"}', g FROM generate_series(1, ${per}) g`, [], storage.database);
    }
    await src.sql('CHECKPOINT');
    const waits: CopyWait[] = [];
    const engine = createPostgresMoveEngine({
      hosts: config.hosts, user: storage.user, ...(storage.password !== undefined ? { password: storage.password } : {}), database: storage.database, schema: resolveSchema(config),
      maxBytesRate: POSTGRES.maxBytesRate, maxSourceStandbyLagBytes: POSTGRES.bound, onCopyWait: (w) => waits.push(w),
      ...(STREAMS !== undefined ? { copyStreams: STREAMS } : {}),
    });
    const connect = async (host: string) => {
      const h = config.hosts[host]!;
      const c = new pg.Client({ host: h.socket ?? h.host ?? '127.0.0.1', port: h.port ?? 5432, user: storage.user, database: storage.database });
      await c.connect();
      return c;
    };
    const standby = ShardMap.fromJSON(config.shardMap).locate(0).slave!;
    const lag = sourceStandbyLag(connect, { source: { master: 'PG001A', slave: standby } } as MoveRecord);
    const f = await moveUnderLoad(dir, engine, POSTGRES_MOVE_MAX_LAG_BYTES, { master: pair.master, slave: pair.slave }, lag);
    await engine.close();
    return { ...f, engine: 'PostgreSQL 15', rows: per * MOVING, unit: 'bytes of WAL', bound: POSTGRES.bound, rate: `${(POSTGRES.maxBytesRate / 1e6).toFixed(0)} MB/s`, waits };
  } finally {
    const c = DevCluster.open(dir);
    if (c) await devClusterDown(c).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

const load0 = loadavg()[0]!.toFixed(1);
const busy = busyHost();
const out: Figures[] = [];
try {
  if (ENGINES.includes('mariadb')) out.push(await mariadb());
  if (ENGINES.includes('postgres')) out.push(await postgres());
} finally {
  busy.stop();
}
const rank = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.max(0, Math.ceil(q * xs.length) - 1))]!;
console.log(`Source slave lag during the copy, ${STREAMS ?? 4} copy stream(s), ${new Date().toISOString().slice(0, 10)}, ${cpus().length} cores, load average ${load0} at the start, ${loadavg()[0]!.toFixed(1)} at the end${busy.cores > 0 ? `, one \`yes\` per core beside it` : ''}; two services writing to the moving shards throughout`);
console.log('| engine | rows | --max-rate | copy (start -> copied) | --max-source-lag (bound) | lag samples (every 50 ms) | lag p50 / p99 / max during the copy | max / bound | write load alone before the move: p50 / p99 / max | gate waits (lag / rate) | freeze to switch | writes acked / lost / refused after 2.5 s | outcome |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
for (const f of out) {
  const s = f.samples.filter((x) => Number.isFinite(x));
  const b = f.baseline.filter((x) => Number.isFinite(x));
  const max = Math.max(0, ...s);
  const lagWaits = f.waits.filter((w) => w.why === 'lag').length;
  console.log(`| ${f.engine} | ${f.rows.toLocaleString('en')} | ${f.rate} | ${(f.copyMs / 1000).toFixed(2)} s (${Math.round(f.rows / (f.copyMs / 1000)).toLocaleString('en')} rows/s) | ${f.bound.toLocaleString('en')} ${f.unit} | ${s.length} | ${rank(s, 0.5)} / ${rank(s, 0.99)} / ${max} | ${(max / f.bound).toFixed(2)} | ${rank(b, 0.5)} / ${rank(b, 0.99)} / ${Math.max(0, ...b)} | ${lagWaits} / ${f.waits.length - lagWaits} | ${f.freezeMs} ms | ${f.acked} / ${f.lost} / ${f.refused} | ${f.outcome} |`);
}
// Where in the copy the lag rose: the samples past the bound, as (ms since the move started, lag).
for (const f of out) console.log(`${f.engine}: samples past the bound (ms after the start, lag): ${f.samples.map((x, i) => [i * 50, x] as const).filter(([, x]) => x > f.bound).map(([ms, x]) => `${ms}:${x}`).join(' ') || 'none'}`);
console.log(JSON.stringify(out.map((f) => ({ engine: f.engine, bound: f.bound, unit: f.unit, maxLag: Math.max(0, ...f.samples.filter((x) => Number.isFinite(x))), p99Lag: rank(f.samples.filter((x) => Number.isFinite(x)), 0.99), withinBound: Math.max(0, ...f.samples.filter((x) => Number.isFinite(x))) <= f.bound, lost: f.lost }))));
