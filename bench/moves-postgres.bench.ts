/**
 * Shard moves on PostgreSQL 15 (issue 17 "Benchmark", PostgreSQL part): a dev cluster made by
 * `dev up --engine postgres` (64 object shards on PG001A) and `dev add-pair` (PG002A/PG002B);
 * shards 0..31 move to PG002A with logical replication while two service processes write
 * (creates and patches, half of them on the moving shards), each keeping a ledger of what it
 * acknowledged. Reports the write latency on the moving shards before the move and during the
 * cutover window (freeze to switch; p50, p99, max and the ratio), acknowledged writes lost,
 * errors by type, copy rate (the subscription's initial copy), start to cutover, verify time.
 *
 *   npm run bench -- moves-postgres      (or: node --import tsx bench/moves-postgres.bench.ts)
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { resolveSchema } from '../src/config/config.js';
import { isShardKitError } from '../src/errors.js';
import { pinterestId } from '../src/ids/pinterest-id.js';
import { ShardKit } from '../src/kit/shard-kit.js';
import { runMove, type MoveEvent } from '../src/moves/move-runner.js';
import { createPostgresMoveEngine, POSTGRES_MOVE_MAX_LAG_BYTES } from '../src/moves/postgres/index.js';
import { devClusterDown, devUp, DevCluster } from '../src/ops/dev-cluster.js';
import { devAddPair } from '../src/ops/dev/dev-add-pair.js';
import { createTopologyStore } from '../src/topology/index.js';
import { moveSteps } from './move-steps.js';

const SHARDS = 64;
const MOVING = { first: 0, last: 31 };
const ROWS_PER_SHARD = 200;
const BEFORE_MS = 3000;
const AFTER_MS = 2000;

interface WriteSample { start: number; ms: number; shard: number; ok: boolean; code?: string }
interface WriterReport { samples: WriteSample[]; acked: Array<[string, number]> }

async function writerMain(dir: string, seed: number): Promise<void> {
  const kit = await ShardKit.open({ configPath: join(dir, 'shardkit.json'), dataDir: dir });
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
        acked.set(pin.id.toString(), 0);
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
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-bench-pgmoves-'));
  try {
    await devUp({ dir, engine: 'postgres', pairs: 1, shards: SHARDS, modShards: 2 });
    const pair = await devAddPair(dir);
    const cluster = DevCluster.require(dir);
    const config = cluster.config();
    if (config.storage.backend !== 'postgres') throw new Error('not a postgres cluster');
    const kit = await ShardKit.open({ configPath: join(dir, 'shardkit.json'), dataDir: dir });
    const boards: string[] = [];
    for (let s = 0; s < SHARDS; s++) {
      const b = await kit.objects.create('board', { s }, { shard: s });
      boards.push(b.id.toString());
      if (s <= MOVING.last) await Promise.all(Array.from({ length: 4 }, async (_, w) => {
        for (let i = w; i < ROWS_PER_SHARD; i += 4) await kit.objects.create('pin', { s, i, pad: 'x'.repeat(200) }, { near: b.id });
      }));
    }
    await kit.close();

    const self = fileURLToPath(import.meta.url);
    const writers = [1, 2].map((seed) => spawn(process.execPath, ['--import', 'tsx', self, 'writer', dir, String(seed)], { env: { ...process.env, BOARDS: JSON.stringify(boards) }, stdio: ['ignore', 'pipe', 'inherit'] }));
    const lines = writers.map((w) => createInterface({ input: w.stdout! }));
    const waitFor = (i: number, what: string) => new Promise<void>((resolve) => lines[i]!.on('line', (l) => l === what && resolve()));
    await Promise.all(writers.map((_, i) => waitFor(i, 'ready')));
    await new Promise((r) => setTimeout(r, BEFORE_MS));

    const store = createTopologyStore(config.topologyStore, { dataDir: dir });
    const storage = config.storage;
    // Where the time goes: each engine step, and each compare-and-set on the topology store.
    const steps = moveSteps(store);
    const note = steps.note;
    const engine = createPostgresMoveEngine({ onStep: (name, ms) => { if (frozen || name.startsWith('topology')) note(name, ms); }, hosts: config.hosts, user: storage.user, ...(storage.password !== undefined ? { password: storage.password } : {}), database: storage.database, schema: resolveSchema(config) });
    const events: Array<MoveEvent & { at: number }> = [];
    // Engine steps are recorded from the freeze on (the copy's are not the pause).
    let frozen = false;
    const load = loadavg()[0]!.toFixed(1);
    const result = await runMove({
      store, engine, hosts: Object.keys(config.hosts), maxLag: POSTGRES_MOVE_MAX_LAG_BYTES,
      start: { span: MOVING, target: { master: pair.master, slave: pair.slave } },
      onEvent: (e) => {
        events.push({ ...e, at: Date.now() });
        if (e.phase === 'frozen') frozen = true;
        if (e.phase === 'switched') steps.stop();
      },
    });
    const at = (phase: string, n = 0) => events.filter((e) => e.phase === phase)[n]!.at;
    const startedAt = at('started');
    const copiedAt = at('copied');
    const frozeAt = at('frozen');
    const fencedAt = at('fenced', 0);
    const verifiedAt = at('fenced', 1);
    const switchedAt = at('switched');
    await new Promise((r) => setTimeout(r, AFTER_MS));
    const done = writers.map((_, i) => waitFor(i, 'done'));
    for (const w of writers) w.kill('SIGTERM');
    await Promise.all(done);
    // Verify on its own, after the load: the source's fenced copy against the target, where
    // writes after the switch show up as differing chunks (the chunked path, timed too).
    const t = Date.now();
    const verifyAgain = await engine.verify(result.move);
    const verifyMs = Date.now() - t;

    const reports = [1, 2].map((seed) => JSON.parse(readFileSync(join(dir, `writer-${seed}.json`), 'utf8')) as WriterReport);
    const samples = reports.flatMap((r) => r.samples);
    const moving = samples.filter((s) => s.shard >= MOVING.first && s.shard <= MOVING.last);
    const before = moving.filter((s) => s.ok && s.start < startedAt).map((s) => s.ms);
    const window = moving.filter((s) => s.start + s.ms >= frozeAt && s.start <= switchedAt);
    const during = window.filter((s) => s.ok).map((s) => s.ms);
    const refused = window.filter((s) => !s.ok).length;
    const errors: Record<string, number> = {};
    for (const s of samples) if (!s.ok) errors[s.code!] = (errors[s.code!] ?? 0) + 1;

    const check = await ShardKit.open({ configPath: join(dir, 'shardkit.json'), dataDir: dir });
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
    // Acknowledged pins of the moved shards that the source still holds but the target does not would be lost writes too.
    const dropped = await engine.dropMoved(result.move);
    await engine.close();
    await store.close();
    const rows = verifyAgain.rows;
    console.log(`moves (PostgreSQL 15, ${MOVING.last - MOVING.first + 1} of ${SHARDS} shards, ${result.verify?.rows ?? '?'} rows at the cutover, 2 writer processes), ${new Date().toISOString().slice(0, 10)}, load average ${load} at the start`);
    console.log(`| | p50 ms | p99 ms | max ms | writes |`);
    console.log(`| --- | ---: | ---: | ---: | ---: |`);
    console.log(`| moving shards, before the move | ${pct(before, 50).toFixed(1)} | ${pct(before, 99).toFixed(1)} | ${Math.max(...before).toFixed(1)} | ${before.length} |`);
    console.log(`| moving shards, freeze to switch (acknowledged) | ${pct(during, 50).toFixed(1)} | ${pct(during, 99).toFixed(1)} | ${during.length > 0 ? Math.max(...during).toFixed(1) : '-'} | ${during.length} (+${refused} refused) |`);
    console.log(`ratio p99 cutover / before: ${(pct(during, 99) / pct(before, 99)).toFixed(1)}x`);
    console.log(`start -> copied (subscription's initial copy) ${copiedAt - startedAt} ms: ${Math.round((result.verify?.rows ?? 0) / ((copiedAt - startedAt) / 1000))} rows/s; copied -> freeze (lag gate) ${frozeAt - copiedAt} ms; start -> cutover ${switchedAt - startedAt} ms`);
    console.log(`freeze -> fence ${fencedAt - frozeAt} ms, fence -> caught up + verified ${verifiedAt - fencedAt} ms, -> switch ${switchedAt - verifiedAt} ms; freeze to switch ${result.freezeToSwitchMs} ms`);
    console.log(`verify alone (after the load): ${verifyMs} ms for ${rows} rows in ${verifyAgain.chunks} chunks (${verifyAgain.mismatches.length} differing chunks: writes after the switch)`);
    console.log(`acknowledged creates: ${acked.length}, lost: ${lost}; errors by type: ${JSON.stringify(errors)}; drop-moved removed ${dropped} schemas`);
    for (const line of steps.lines('step under the freeze (engine onStep; topology CAS = store.write, all of the move)')) console.log(line);
  } catch (err) {
    // The target's log says why a subscription failed.
    const log = join(dir, 'servers', 'PG002A', 'postgres.log');
    if (existsSync(log)) console.error(readFileSync(log, 'utf8').split('\n').filter((l) => /ERROR|FATAL/.test(l)).slice(-10).join('\n'));
    throw err;
  } finally {
    const c = DevCluster.open(dir);
    if (c) await devClusterDown(c).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'writer') await writerMain(process.argv[3]!, Number(process.argv[4]));
else await main();
