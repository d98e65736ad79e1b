/**
 * Shard moves on MariaDB (issue 17 "Benchmark", MariaDB part): a dev cluster of 2 pairs and 64
 * shards; shards 0..31 move from MySQL001A/B to MySQL002A/B with the replication pre-copy while two
 * service processes write (creates and patches, half of them on the moving shards), each keeping a
 * ledger of what it acknowledged. Reports the write latency on the moving shards before the move
 * and during the cutover window (freeze to switch; p50, p99, max and the ratio), acknowledged
 * writes lost, writes found on the source after the cutover, errors by type (SHARD_MOVING with
 * the default 400 ms budget), copy rate, start -> cutover time and verify time.
 *
 *   node --import tsx bench/moves-mariadb.bench.ts
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { resolveSchema } from '../src/config/config.js';
import { ShardKit } from '../src/kit/shard-kit.js';
import { runMove, type MoveEvent } from '../src/moves/move-runner.js';
import { createMariadbMoveEngine, type MariadbMoveEngine } from '../src/moves/mariadb/index.js';
import { devUp, DevCluster } from '../src/ops/dev-cluster.js';
import { devHostAdmin } from '../src/ops/failover/host-admin.js';
import { moveAdmin } from '../src/moves/mariadb/move-admin.js';
import { fleetTables } from '../src/storage/shard-names.js';
import { createTopologyStore } from '../src/topology/index.js';
import { moveSteps } from './move-steps.js';
import { ShardMap } from '../src/topology/shard-map.js';
import { isShardKitError } from '../src/errors.js';
import { pinterestId } from '../src/ids/pinterest-id.js';

const SHARDS = 64;
const MOVING = { first: 0, last: 31 };
const ROWS_PER_SHARD = 100;
const BEFORE_MS = 4000;
const AFTER_MS = 2000;

interface WriteSample { start: number; ms: number; shard: number; ok: boolean; code?: string }
interface WriterReport { samples: WriteSample[]; acked: Array<[string, number]> }

async function writerMain(dir: string, seed: number): Promise<void> {
  const cluster = DevCluster.require(dir);
  const kit = await ShardKit.open({ configPath: cluster.configPath, dataDir: dir });
  const samples: WriteSample[] = [];
  const acked = new Map<string, number>();
  let stop = false;
  process.on('SIGTERM', () => (stop = true));
  const boards = (JSON.parse(process.env.BOARDS!) as string[]).map(BigInt);
  process.stdout.write('ready\n');
  let i = seed;
  while (!stop) {
    i++;
    const board = boards[(i * 7919) % boards.length]!;
    const shard = pinterestId.decode(board).shard;
    const start = Date.now();
    const t0 = performance.now();
    try {
      if (i % 2 === 0) {
        const pin = await kit.objects.create('pin', { w: seed, i }, { near: board });
        acked.set(pin.id.toString(), start);
      } else {
        await kit.objects.patch(board, { w: seed, i });
      }
      samples.push({ start, ms: performance.now() - t0, shard, ok: true });
    } catch (err) {
      samples.push({ start, ms: performance.now() - t0, shard, ok: false, code: isShardKitError(err) ? err.code : String(err) });
    }
  }
  await kit.close();
  const report: WriterReport = { samples, acked: [...acked] };
  writeFileSync(join(dir, `writer-${seed}.json`), JSON.stringify(report));
  process.stdout.write('done\n');
}

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-bench-mariamoves-'));
  let cluster: DevCluster | undefined;
  try {
    cluster = (await devUp({ dir, pairs: 2, shards: SHARDS })).cluster;
    const config = cluster.config();
    if (config.storage.backend !== 'mysql') throw new Error('not a mysql cluster');
    const kit = await ShardKit.open({ configPath: cluster.configPath, dataDir: dir });
    const boards: string[] = [];
    for (let s = 0; s < SHARDS; s++) {
      const b = await kit.objects.create('board', { s }, { shard: s });
      boards.push(b.id.toString());
      if (s <= MOVING.last) for (let i = 0; i < ROWS_PER_SHARD; i++) await kit.objects.create('pin', { s, i, pad: 'x'.repeat(200) }, { near: b.id });
    }
    await kit.close();

    const self = fileURLToPath(import.meta.url);
    const writers = [1, 2].map((seed) => spawn(process.execPath, ['--import', 'tsx', self, 'writer', dir, String(seed)], { env: { ...process.env, BOARDS: JSON.stringify(boards) }, stdio: ['ignore', 'pipe', 'inherit'] }));
    const lines = writers.map((w) => createInterface({ input: w.stdout! }));
    const waitFor = (i: number, what: string) => new Promise<void>((resolve) => lines[i]!.on('line', (l) => l === what && resolve()));
    await Promise.all(writers.map((_, i) => waitFor(i, 'ready')));
    await new Promise((r) => setTimeout(r, BEFORE_MS));

    const store = createTopologyStore(config.topologyStore, { dataDir: dir });
    if ((await store.read()) === undefined) await store.write(ShardMap.fromJSON(config.shardMap, { hosts: Object.keys(config.hosts) }), 0);
    const storage = config.storage;
    // Where the time goes: each engine step, and each compare-and-set on the topology store.
    const steps = moveSteps(store);
    const note = steps.note;
    const engine = createMariadbMoveEngine({
      onStep: note,
      // SHARDKIT_BENCH_FENCE_CONNECTIONS compares fence widths (default: the engine's, 4).
      ...(process.env.SHARDKIT_BENCH_FENCE_CONNECTIONS ? { fenceConnections: Number(process.env.SHARDKIT_BENCH_FENCE_CONNECTIONS) } : {}),
      hosts: config.hosts, user: storage.user, ...(storage.password !== undefined ? { password: storage.password } : {}),
      tables: fleetTables(resolveSchema(config), 'objects'), admin: moveAdmin(devHostAdmin(cluster)),
    });
    const events: Array<MoveEvent & { at: number }> = [];
    const startedAt = Date.now();
    const result = await runMove({ store, engine, hosts: Object.keys(config.hosts), start: { span: MOVING, target: { master: 'MySQL002A', slave: 'MySQL002B' } }, onEvent: (e) => events.push({ ...e, at: Date.now() }) });
    steps.stop();
    const at = (phase: string, n = 0) => events.filter((e) => e.phase === phase)[n]!.at;
    const copiedAt = at('copied');
    const frozeAt = at('frozen');
    const fencedAt = at('fenced', 0);
    const verifiedAt = at('fenced', 1);
    const switchedAt = at('switched');
    const load = loadavg()[0]!.toFixed(1);
    await new Promise((r) => setTimeout(r, AFTER_MS));
    const done = writers.map((_, i) => waitFor(i, 'done'));
    for (const w of writers) w.kill('SIGTERM');
    await Promise.all(done);
    const t = Date.now();
    // After the switch the target is ahead of the fenced source: this times the check, its mismatches are expected.
    const verifyAgain = await engine.verify(result.move);
    const verifyMs = Date.now() - t;
    await store.close();

    const reports = [1, 2].map((seed) => JSON.parse(readFileSync(join(dir, `writer-${seed}.json`), 'utf8')) as WriterReport);
    const samples = reports.flatMap((r) => r.samples);
    const moving = samples.filter((s) => s.shard >= MOVING.first && s.shard <= MOVING.last);
    const before = moving.filter((s) => s.ok && s.start < frozeAt).map((s) => s.ms);
    const window = moving.filter((s) => s.start + s.ms >= frozeAt && s.start <= switchedAt);
    const during = window.filter((s) => s.ok).map((s) => s.ms);
    const refused = window.filter((s) => !s.ok).length;
    const errors: Record<string, number> = {};
    for (const s of samples) if (!s.ok) errors[s.code!] = (errors[s.code!] ?? 0) + 1;

    const check = await ShardKit.open({ configPath: cluster.configPath, dataDir: dir });
    let lost = 0;
    const acked = reports.flatMap((r) => r.acked);
    for (const [id] of acked) {
      try {
        await check.objects.get(id);
      } catch {
        lost++;
      }
    }
    await check.close();
    // Nothing acknowledged after the cutover is on the source: its moved tables are fenced (renamed), so count live ones.
    const src = await devHostAdmin(cluster).connect('MySQL001A');
    const [live] = await src.query(`SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA IN (${Array.from({ length: MOVING.last + 1 }, (_, s) => `'db${String(s).padStart(5, '0')}'`).join(', ')}) AND TABLE_NAME = 'pins'`);
    await src.end();
    const copyRows = verifyAgain.rows;
    const copySec = (copiedAt - startedAt) / 1000;
    console.log(`moves (MariaDB 10.11, replication pre-copy, ${MOVING.last - MOVING.first + 1} of ${SHARDS} shards, ~${copyRows} rows, 2 writer processes, hold budget 400 ms), ${new Date().toISOString().slice(0, 10)}, load average ${load}`);
    console.log(`| | p50 ms | p99 ms | max ms | writes |`);
    console.log(`| --- | ---: | ---: | ---: | ---: |`);
    console.log(`| moving shards, before the move | ${pct(before, 50).toFixed(1)} | ${pct(before, 99).toFixed(1)} | ${Math.max(...before).toFixed(1)} | ${before.length} |`);
    console.log(`| moving shards, freeze to switch (acknowledged) | ${pct(during, 50).toFixed(1)} | ${pct(during, 99).toFixed(1)} | ${during.length > 0 ? Math.max(...during).toFixed(1) : '-'} | ${during.length} (+${refused} refused) |`);
    console.log(`ratio p99 cutover / before: ${(pct(during, 99) / pct(before, 99)).toFixed(1)}x`);
    console.log(`start -> copied (dump + load + replication start) ${copiedAt - startedAt} ms (${Math.round(copyRows / copySec)} rows/s), lag gate ${frozeAt - copiedAt} ms, freeze -> fence ${fencedAt - frozeAt} ms, fence -> caught up + verified ${verifiedAt - fencedAt} ms, -> switch ${switchedAt - verifiedAt} ms; freeze to switch ${result.freezeToSwitchMs} ms; start -> cutover ${switchedAt - startedAt} ms`);
    console.log(`verify alone (after, ${verifyAgain.rows} rows, ${verifyAgain.tables} tables): ${verifyMs} ms`);
    console.log(`acknowledged creates: ${acked.length}, lost: ${lost}; live moved tables left on the source: ${Number((live as Array<{ n: number }>)[0]!.n)}; errors by type: ${JSON.stringify(errors)}`);
    for (const line of steps.lines('step (engine onStep; topology CAS = store.write)')) console.log(line);
  } finally {
    await (cluster ?? DevCluster.open(dir))?.down().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'writer') await writerMain(process.argv[3]!, Number(process.argv[4]));
else await main();
