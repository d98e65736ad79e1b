/**
 * Shard moves on the embedded default (issue 17 "Benchmark", SQLite part; MariaDB and PostgreSQL
 * movers do not exist yet): 32 of 64 shards move from MySQL001A to MySQL002A while two service
 * processes write (creates and patches, half of them on the moving shards), each keeping a ledger
 * of what it acknowledged. Reports the write latency on the moving shards before the move and
 * during the cutover window (freeze to switch; p50, p99, max and the ratio), acknowledged writes
 * lost, errors by type, copy rate and verify time.
 *
 *   npm run bench -- moves        (or: node --import tsx bench/moves.bench.ts)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { defaultConfig } from '../src/config/config.js';
import { ShardKit } from '../src/kit/shard-kit.js';
import { runMove, type MoveEvent } from '../src/moves/move-runner.js';
import { createSqliteMoveEngine } from '../src/moves/sqlite/index.js';
import { SqliteBackend } from '../src/storage/sqlite/sqlite-backend.js';
import { FileTopologyStore } from '../src/topology/index.js';
import { defaultShardMapJson } from '../src/topology/shard-map.js';
import { isShardKitError } from '../src/errors.js';
import { pinterestId } from '../src/ids/pinterest-id.js';

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
    if (i % 16 === 0) await new Promise((r) => setImmediate(r));
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
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-bench-moves-'));
  try {
    const config = { ...defaultConfig({ shards: SHARDS, pairs: 2 }), shardMap: defaultShardMapJson({ shards: SHARDS, pairs: 2, modShards: 16 }) };
    writeFileSync(join(dir, 'shardkit.json'), JSON.stringify(config));
    const kit = await ShardKit.open({ configPath: join(dir, 'shardkit.json'), dataDir: dir });
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

    const store = new FileTopologyStore({ path: join(dir, 'topology.json') });
    const backend = new SqliteBackend({ root: join(dir, 'hosts'), schema: { types: [], mappings: [], keyspaces: [] } });
    const engine = createSqliteMoveEngine({ shardPath: (host, shard) => backend.shardPath({ host, shard, fleet: 'objects' }) });
    const events: Array<MoveEvent & { at: number }> = [];
    const result = await runMove({ store, engine, start: { span: MOVING, target: { master: 'MySQL002A', slave: 'MySQL002B' } }, onEvent: (e) => events.push({ ...e, at: Date.now() }) });
    const at = (phase: string, n = 0) => events.filter((e) => e.phase === phase)[n]!.at;
    const frozeAt = at('frozen');
    const fencedAt = at('fenced', 0);
    const verifiedAt = at('fenced', 1);
    const switchedAt = at('switched');
    const load = (await import('node:os')).loadavg()[0]!.toFixed(1);
    const t = Date.now();
    const verifyAgain = await engine.verify(result.move);
    const verifyMs = Date.now() - t;
    await new Promise((r) => setTimeout(r, AFTER_MS));
    const done = writers.map((_, i) => waitFor(i, 'done'));
    for (const w of writers) w.kill('SIGTERM');
    await Promise.all(done);
    await store.close();
    await backend.close();

    const reports = [1, 2].map((seed) => JSON.parse(readFileSync(join(dir, `writer-${seed}.json`), 'utf8')) as WriterReport);
    const samples = reports.flatMap((r) => r.samples);
    const moving = samples.filter((s) => s.shard >= MOVING.first && s.shard <= MOVING.last);
    const before = moving.filter((s) => s.ok && s.start < frozeAt).map((s) => s.ms);
    // Acknowledged writes that overlapped the cutover window (refused ones are counted apart: they fail fast once the budget is gone).
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
    const rows = verifyAgain.rows;
    const copyMs = verifiedAt - fencedAt;
    console.log(`moves (SQLite, ${MOVING.last - MOVING.first + 1} of ${SHARDS} shards, ${rows} rows, 2 writer processes), ${new Date().toISOString().slice(0, 10)}, load average ${load}`);
    console.log(`| | p50 ms | p99 ms | max ms | writes |`);
    console.log(`| --- | ---: | ---: | ---: | ---: |`);
    console.log(`| moving shards, before the move | ${pct(before, 50).toFixed(1)} | ${pct(before, 99).toFixed(1)} | ${Math.max(...before).toFixed(1)} | ${before.length} |`);
    console.log(`| moving shards, freeze to switch (acknowledged) | ${pct(during, 50).toFixed(1)} | ${pct(during, 99).toFixed(1)} | ${during.length > 0 ? Math.max(...during).toFixed(1) : '-'} | ${during.length} (+${refused} refused) |`);
    console.log(`ratio p99 cutover / before: ${(pct(during, 99) / pct(before, 99)).toFixed(1)}x`);
    console.log(`freeze -> fence ${fencedAt - frozeAt} ms, fence -> copied+verified ${copyMs} ms, -> switch ${switchedAt - verifiedAt} ms; freeze to switch ${result.freezeToSwitchMs} ms`);
    console.log(`copy + verify under the freeze: ${Math.round(rows / (copyMs / 1000))} rows/s; verify alone (after): ${verifyMs} ms for ${rows} rows in ${verifyAgain.chunks} chunks`);
    console.log(`acknowledged creates: ${acked.length}, lost: ${lost}; errors by type: ${JSON.stringify(errors)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'writer') await writerMain(process.argv[3]!, Number(process.argv[4]));
else await main();
