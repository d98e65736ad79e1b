import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { loadConfigFile, resolveSchema } from '../../config/config.js';
import { ShardKitError } from '../../errors.js';
import type { CopyRate, SourceLagBound } from '../../moves/copy-throttle.js';
import type { MoveEngine, VerifyReport } from '../../moves/move-engine.js';
import { runMove, type MoveEvent } from '../../moves/move-runner.js';
import { casMoveState, forgetMove } from '../../moves/move-state.js';
import type { OnStep } from '../../moves/step-timer.js';
import { DevCluster } from '../../ops/dev-cluster.js';
import { createProgress, formatBytes, type Progress } from '../../ops/progress.js';
import { openMoveEngine, type OpenedMoveEngine } from '../../ops/move-engines.js';
import { withHostRecords } from '../../ops/fleet-hosts.js';
import { createTopologyStore } from '../../topology/index.js';
import { parseShardSpan } from '../../topology/map-edits.js';
import { ShardMap, type MovePhase, type MoveRecord } from '../../topology/shard-map.js';
import type { TopologyStore } from '../../topology/topology-store.js';

interface CommonOptions {
  dir?: string;
  data?: string;
  config?: string;
  json?: boolean;
}

export interface MoveCommandOptions extends CommonOptions {
  to?: string;
  toSlave?: string;
  holdMs: number;
  resume?: boolean;
  abort?: boolean;
  maxRate?: CopyRate;
  maxSourceLag?: SourceLagBound;
  copyStreams?: number;
}

export type VerifyCommandOptions = CommonOptions & { againstSource?: boolean };
export type DropMovedOptions = CommonOptions;

/** Exit code when verify found copies that differ. */
export const EXIT_MISMATCH = 3;

interface MoveContext {
  store: TopologyStore;
  engine: MoveEngine;
  hosts: string[];
  map: ShardMap;
  /** The freeze starts only when the engine's lag is at most this (engines that replicate before the freeze). */
  maxLag?: number;
  /**
   * Compares shard `s` between two hosts (a move's source and target, or a master and its
   * slave); undefined when there is no second copy to compare.
   */
  compare(s: number, pair: [string, string], move: MoveRecord | undefined): Promise<VerifyReport | undefined>;
  close(): Promise<void>;
}

async function open(opts: CommonOptions & { maxRate?: CopyRate; maxSourceLag?: SourceLagBound; copyStreams?: number }, onStep?: OnStep): Promise<MoveContext> {
  const { dataDir, configPath } = locations(opts);
  if (!existsSync(configPath)) throw new ShardKitError('INVALID_CONFIG', `no config file at ${configPath} (give --dir for a dev cluster, or --config)`);
  const declared = loadConfigFile(configPath);
  const store = createTopologyStore(declared.topologyStore, { dataDir });
  let config = declared;
  let hosts = Object.keys(config.hosts);
  let map: ShardMap | undefined;
  try {
    config = await withHostRecords(declared, store);
    hosts = Object.keys(config.hosts);
    map = await store.read();
    // As a service would on first start: the config's map seeds the store.
    if (map === undefined) map = await store.write(ShardMap.fromJSON(config.shardMap, { hosts }), 0);
  } catch (err) {
    await store.close();
    throw err;
  }
  const schema = resolveSchema(config);
  let opened: OpenedMoveEngine;
  try {
    opened = await openMoveEngine(config, schema, dataDir, map, { ...(opts.maxRate !== undefined ? { rate: opts.maxRate } : {}), ...(opts.maxSourceLag !== undefined ? { sourceLag: opts.maxSourceLag } : {}), ...(opts.copyStreams !== undefined ? { streams: opts.copyStreams } : {}), ...(onStep !== undefined ? { onStep } : {}) });
  } catch (err) {
    await store.close();
    throw err;
  }
  return {
    store, hosts, map, ...opened,
    close: async () => {
      await opened.close();
      await store.close();
    },
  };
}

/**
 * Where the config and the data directory are. `--dir` is a dev cluster (as for `failover` and
 * `pair`); a `--config` alone resolves its file topology store and dev cluster beside itself, never
 * in ./data (where a move then found no admin access and copied into a read-only target).
 */
export function locations(opts: Pick<CommonOptions, 'dir' | 'data' | 'config'>): { dataDir: string; configPath: string } {
  if (opts.dir !== undefined && opts.data !== undefined) throw new ShardKitError('INVALID_ARGUMENT', 'give --dir (a dev cluster) or --data (a data directory), not both');
  if (opts.dir !== undefined) DevCluster.require(opts.dir);
  const base = opts.dir ?? opts.data;
  if (base !== undefined) {
    const dataDir = resolve(base);
    return { dataDir, configPath: opts.config !== undefined ? resolve(opts.config) : join(dataDir, 'shardkit.json') };
  }
  if (opts.config !== undefined) return { dataDir: dirname(resolve(opts.config)), configPath: resolve(opts.config) };
  const dataDir = resolve('./data');
  return { dataDir, configPath: join(dataDir, 'shardkit.json') };
}

/** The move recorded for exactly this span. */
export function moveFor(map: ShardMap, span: { first: number; last: number }): MoveRecord {
  const same = map.moves().filter((x) => x.range[0] === span.first && x.range[1] === span.last);
  // A switched move waits for drop-moved and may share its range with a later move back: the
  // unfinished one is what --resume and --abort are for (the first match was the old one).
  const m = same.find((x) => x.phase !== 'switched') ?? same.at(-1);
  if (m === undefined) {
    const listed = map.moves().map((x) => `${x.range[0]}..${x.range[1]} (${x.id}, ${x.phase})`);
    throw new ShardKitError('UNKNOWN_MOVE', `no move of shards ${span.first}..${span.last} is recorded${listed.length > 0 ? `; recorded: ${listed.join(', ')}` : ''}`);
  }
  return m;
}

/** Test hook: stop dead (for a kill -9) right after a phase is recorded. Never set it in production. */
export function stopHook(): ((phase: MovePhase) => Promise<void> | undefined) | undefined {
  const at = process.env.SHARDKIT_TEST_MOVE_STOP_AFTER;
  if (at === undefined || at === '') return undefined;
  return (phase) => {
    if (phase !== at) return undefined;
    process.stderr.write(`stopped after ${phase}\n`);
    return new Promise<void>(() => {
      setInterval(() => {}, 1000);
    });
  };
}

export async function moveCommand(spanText: string, opts: MoveCommandOptions): Promise<void> {
  const span = parseShardSpan(spanText);
  if (opts.resume && opts.abort) throw new ShardKitError('INVALID_ARGUMENT', 'give --resume or --abort, not both');
  const existing = opts.resume || opts.abort;
  if (!existing && opts.to === undefined) throw new ShardKitError('INVALID_ARGUMENT', 'shards move needs --to <master> (or --resume / --abort for a recorded move)');
  if (existing && (opts.to !== undefined || opts.toSlave !== undefined)) throw new ShardKitError('INVALID_ARGUMENT', '--to/--to-slave name a new move\'s target; --resume and --abort take the recorded one');
  // Each engine step's time (a count where the name says so), summed over the move: the result
  // line carries them, so an operator sees which step of the freeze took its time on this host.
  const steps: Record<string, number> = {};
  const ctx = await open(opts, (name, ms) => {
    steps[name] = (steps[name] ?? 0) + ms;
  });
  const jsonLines = opts.json === true || !process.stderr.isTTY;
  let bar: Progress | undefined;
  let moveId = '';
  let phase = '';
  let progressAt = 0;
  let tablesShown = '';
  let lastLag: number | undefined;
  const onEvent = (e: MoveEvent) => {
    moveId = e.moveId;
    phase = e.phase;
    if (typeof e.detail?.lag === 'number') lastLag = e.detail.lag;
    if (jsonLines) process.stdout.write(`${JSON.stringify({ event: 'phase', ...e })}\n`);
    else process.stderr.write(`${e.moveId}: ${e.phase}${e.detail ? ` ${JSON.stringify(e.detail)}` : ''} (${e.elapsedMs} ms)\n`);
  };
  try {
    const recorded = existing ? moveFor(ctx.map, span) : undefined;
    // A resumed copy reports progress before its first phase event: name the move from the start.
    moveId = recorded?.id ?? '';
    phase = recorded?.phase ?? '';
    // A restore's move copies from a backup: only its own command knows where (src/ops/backup/restore-into.ts).
    if (recorded !== undefined && recorded.id.startsWith('restore-')) throw new ShardKitError('INVALID_ARGUMENT', `move ${recorded.id} is a restore's: take it up with shardkit backup restore --from PATH ${opts.abort ? '--abort' : '--resume'} ${recorded.id}`);
    const hook = stopHook();
    const result = await runMove({
      store: ctx.store, engine: ctx.engine, hosts: ctx.hosts,
      ...(ctx.maxLag !== undefined ? { maxLag: ctx.maxLag } : {}),
      ...(existing
        ? { moveId: recorded!.id, abort: opts.abort === true }
        : { start: { span, target: { master: opts.to!, ...(opts.toSlave !== undefined ? { slave: opts.toSlave } : {}) }, holdMs: opts.holdMs } }),
      onEvent,
      onProgress: (done, total, rows) => {
        if (jsonLines) {
          // At most one line a second, the last one of a copy (every shard done), and one whenever
          // the tables in flight change (a script sees each table start).
          const names = (rows?.tables ?? []).map((t) => t.table).join('\n');
          if (done < total && Date.now() - progressAt < 1000 && names === tablesShown) return;
          progressAt = Date.now();
          tablesShown = names;
          process.stdout.write(`${JSON.stringify({ event: 'progress', moveId, phase, shardsDone: done, shardsTotal: total, ...rows })}\n`);
          return;
        }
        bar ??= createProgress(`copy shards ${span.first}..${span.last}`, total, { mode: 'bar', unit: 'shards' });
        bar.update(done, {
          phase,
          rows: rows?.rowsCopied === undefined ? undefined : `${rows.rowsCopied}${rows.rowsTotal === undefined ? '' : `/${rows.rowsTotal}`}`,
          bytes: rows?.bytesCopied === undefined ? undefined : formatBytes(rows.bytesCopied),
          rate: rows?.rowsPerSecond === undefined ? undefined : `${rows.rowsPerSecond} rows/s${rows.bytesPerSecond === undefined ? '' : ` ${formatBytes(rows.bytesPerSecond)}/s`}`,
          'rows eta': rows?.etaSeconds === undefined ? undefined : `${rows.etaSeconds} s`,
          // The tables in flight (one per copy stream), two named and the count of the others: the bar is one line.
          tables: rows?.tables === undefined || rows.tables.length === 0 ? undefined
            : `${rows.tables.slice(0, 2).map((t) => `${t.table} ${t.rowsCopied} rows`).join(', ')}${rows.tables.length > 2 ? ` +${rows.tables.length - 2}` : ''}`,
          lag: lastLag,
        });
      },
      ...(hook !== undefined ? { afterPhase: hook } : {}),
    });
    bar?.finish();
    const summary = {
      event: 'result', moveId: result.move.id, outcome: result.outcome, range: result.move.range,
      source: result.move.source, target: result.move.target,
      ...(result.freezeToSwitchMs !== undefined ? { freezeToSwitchMs: result.freezeToSwitchMs } : {}),
      ...(result.verify !== undefined ? { verifiedRows: result.verify.rows, verifiedChunks: result.verify.chunks } : {}),
      ...(Object.keys(steps).length > 0 ? { steps: Object.fromEntries(Object.entries(steps).map(([k, v]) => [k, Math.round(v)])) } : {}),
    };
    if (jsonLines) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else {
      process.stdout.write(result.outcome === 'switched'
        ? `moved shards ${span.first}..${span.last} from ${result.move.source.master} to ${result.move.target.master}${result.freezeToSwitchMs !== undefined ? ` (writes held ${result.freezeToSwitchMs} ms)` : ''}; run shards drop-moved to remove the old copies\n`
        : `aborted the move of shards ${span.first}..${span.last}: ${result.move.source.master} serves them\n`);
    }
  } finally {
    await ctx.close();
  }
}

export async function verifyCommand(spanText: string, opts: VerifyCommandOptions): Promise<void> {
  const span = parseShardSpan(spanText);
  const ctx = await open(opts);
  const report: VerifyReport & { compared: Array<{ shard: number; source: string; target: string }>; skipped: number[] } = {
    shards: 0, tables: 0, rows: 0, chunks: 0, mismatches: [], compared: [], skipped: [],
  };
  try {
    if (span.last >= ctx.map.shardCount) throw new ShardKitError('UNKNOWN_SHARD', `shards ${span.first}..${span.last} are not all in the shard map (0..${ctx.map.shardCount - 1})`);
    const progress = createProgress(`verify shards ${span.first}..${span.last}`, span.last - span.first + 1, opts.json ? { mode: 'silent' } : {});
    for (let s = span.first; s <= span.last; s++) {
      // A move's two copies while it runs. Once switched, services write to the target and the
      // source's fenced copy stays as it was, so the target is compared with its slave; where the
      // slave holds no copy (the embedded default), with the fenced copy as before the switch.
      const loc = ctx.map.locate(s);
      const move = ctx.map.moves().find((x) => x.range[0] <= s && s <= x.range[1] && x.phase !== 'started' && x.phase !== 'aborting');
      let m = move?.phase === 'switched' && loc.slave !== undefined && !opts.againstSource ? undefined : move;
      let pair: [string, string] | undefined = m !== undefined ? [m.source.master, m.target.master] : loc.slave !== undefined ? [loc.master, loc.slave] : undefined;
      let r = pair === undefined ? undefined : await ctx.compare(s, pair, m);
      if (r === undefined && move !== undefined && m === undefined) {
        m = move;
        pair = [move.source.master, move.target.master];
        r = await ctx.compare(s, pair, m);
      }
      if (pair === undefined || r === undefined) {
        report.skipped.push(s);
        progress.update(s - span.first + 1);
        continue;
      }
      report.shards++;
      report.tables += r.tables;
      report.rows += r.rows;
      report.chunks += r.chunks;
      report.mismatches.push(...r.mismatches);
      report.compared.push({ shard: s, source: pair[0]!, target: pair[1]! });
      progress.update(s - span.first + 1);
    }
    progress.finish({ mismatches: report.mismatches.length });
  } finally {
    await ctx.close();
  }
  if (opts.json) process.stdout.write(`${JSON.stringify({ ...report, compared: report.compared.length })}\n`);
  else {
    const lines = [`compared ${report.shards} shard(s), ${report.tables} table(s), ${report.rows} row(s) in ${report.chunks} chunk(s); ${report.skipped.length} shard(s) without a second copy`];
    for (const x of report.mismatches) lines.push(`  MISMATCH shard ${x.shard} ${x.table} keys ${x.fromKey}..${x.toKey}: ${x.sourceRows} row(s) on the source, ${x.targetRows} on the other copy`);
    lines.push(report.mismatches.length === 0 ? 'clean' : `${report.mismatches.length} mismatching chunk(s)`);
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  if (report.mismatches.length > 0) process.exitCode = EXIT_MISMATCH;
}

export async function dropMovedCommand(opts: DropMovedOptions): Promise<void> {
  const ctx = await open(opts);
  const done: Array<{ moveId: string; range: [number, number]; host: string; files: number }> = [];
  const unit = ctx.engine.droppedUnit;
  try {
    for (const m of ctx.map.moves().filter((x) => x.phase === 'switched')) {
      // A later move brought the range back to this move's source pair before drop-moved ran.
      const source = [m.source.master, m.source.slave];
      const movedBack = source.includes(ctx.map.locate(m.range[0]).master) && source.includes(ctx.map.locate(m.range[1]).master);
      const files = await ctx.engine.dropMoved(m, { movedBack });
      await casMoveState(ctx.store, (x) => forgetMove(x, m.id));
      done.push({ moveId: m.id, range: m.range, host: m.source.master, files });
    }
  } finally {
    await ctx.close();
  }
  if (opts.json) process.stdout.write(`${JSON.stringify({ dropped: done })}\n`);
  else if (done.length === 0) process.stdout.write('no switched moves to clean up\n');
  else for (const d of done) process.stdout.write(`dropped ${d.files} ${unit} of shards ${d.range[0]}..${d.range[1]} from ${d.host} (move ${d.moveId})\n`);
}
