import { createHash } from 'node:crypto';
import { existsSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { loadConfigFile, resolveSchema, type ShardKitConfig } from '../config/config.js';
import { isShardKitError, ShardKitError } from '../errors.js';
import { createBackend } from '../kit/backend-factory.js';
import { canCopyShards, type Fleet, type SchemaDef, type ShardBackend, type ShardCopy, type ShardRef } from '../storage/shard-backend.js';
import { fleetTables } from '../storage/shard-names.js';
import type { SqliteBackend } from '../storage/sqlite/index.js';
import { createTopologyStore } from '../topology/index.js';
import { ShardMap } from '../topology/shard-map.js';
import { copyTable, type TableCopyResult } from './chunk-copy.js';
import { MigrationState } from './migration-state.js';
import { lookupsKind, mappingsKind, objectsKind, type TableKind } from './table-kinds.js';
import { eachLimit } from './each-limit.js';
import { fenceSource } from './source-fence.js';

type Copier = ShardBackend & ShardCopy;

export interface KitMigrationOptions {
  /** The embedded store's config file (storage backend sqlite). */
  from: string;
  /** The target fleet's config file (any backend that can copy shards). */
  to: string;
  /** Cut over: fence the source, copy the last delta, leave the source read-only. */
  final?: boolean;
  /** Rows per chunk (change detection and re-copy unit). Default 500. */
  chunkRows?: number;
  /** Shards copied at once. Default 4. */
  concurrency?: number;
  /** A run stops catching up once a round changes at most this many rows. Default 0 (until nothing changes, or the delta stops shrinking). */
  nearZero?: number;
  /** Most rounds in one run. Default 8. */
  maxRounds?: number;
  /** How long --final may keep the source fenced before the fence lifts itself. Default 60 s. */
  freezeMs?: number;
  /** Where the migration remembers its progress; default `<source dir>/migrations/<target id>.sqlite`. */
  statePath?: string;
  onProgress?: (p: MigrationProgress) => void;
  /**
   * Called at the cutover's steps (tests use it to write at a known moment): 'fenced' once the
   * source refuses writes, before the final copy; 'copied' after the last copy, before the run
   * returns; 'chunk-write' before a chunk's rows are written to the target (an error thrown there
   * is handled like the target's own).
   */
  onStep?: (step: 'fenced' | 'copied' | 'chunk-write') => void | Promise<void>;
}

export interface MigrationProgress {
  round: number;
  phase: 'copy' | 'final' | 'verify';
  shardsDone: number;
  shardsTotal: number;
  rowsScanned: number;
  rowsChanged: number;
}

export interface RoundReport {
  round: number;
  phase: 'copy' | 'final' | 'verify';
  shards: number;
  rowsScanned: number;
  changedChunks: number;
  /** Rows written to the target (new or changed) and removed from it: the delta of this round. */
  upserts: number;
  deletes: number;
  /** Chunk failures of the target that were retried (after a backoff) rather than ending the run. */
  retries: number;
  elapsedMs: number;
}

export interface SkippedShard {
  fleet: Fleet;
  shard: number;
  reason: string;
}

export interface KitMigrationReport {
  from: string;
  to: string;
  state: string;
  rounds: RoundReport[];
  /** The last round's delta (upserts + deletes). */
  delta: number;
  shards: { objects: number; lookups: number };
  skipped: SkippedShard[];
  /** Set by --final (and by any run after it). */
  final?: { at: string; fencedFiles: number; freezeMs: number };
  nextSteps: string[];
}

interface Side {
  path: string;
  config: ShardKitConfig;
  dataDir: string;
  schema: SchemaDef;
  map: ShardMap;
  backend: Copier;
}

interface Job {
  fleet: Fleet;
  shard: number;
  sourceRef: ShardRef;
  targetRef: ShardRef;
  /** [source table, target table, kind] */
  tables: Array<[string, string, TableKind<any>]>;
}

const DEFAULTS = { chunkRows: 500, concurrency: 4, nearZero: 0, maxRounds: 8, freezeMs: 60_000 };

/** `shardkit migrate --from <embedded config> --to <fleet config> [--final]`: see docs/migrate.md. */
export async function migrateKit(options: KitMigrationOptions): Promise<KitMigrationReport> {
  const o = { ...DEFAULTS, ...options };
  const fromPath = resolve(options.from);
  const toPath = resolve(options.to);
  for (const [what, p] of [['--from', fromPath], ['--to', toPath]] as const) {
    if (!existsSync(p)) throw new ShardKitError('INVALID_ARGUMENT', `${what} ${p}: no such file`);
  }
  if (realpathSync(fromPath) === realpathSync(toPath)) throw new ShardKitError('INVALID_ARGUMENT', '--from and --to name the same config file');
  const source = await openSide(fromPath);
  let target: Side | undefined;
  let state: MigrationState | undefined;
  try {
    if (source.config.storage.backend !== 'sqlite') {
      throw new ShardKitError('INVALID_ARGUMENT', `--from must be an embedded store (storage backend sqlite), ${fromPath} uses ${source.config.storage.backend}`);
    }
    target = await openSide(toPath);
    if (target.config.storage.backend === 'sqlite' && sameSqliteDirs(source, target)) {
      throw new ShardKitError('INVALID_ARGUMENT', '--from and --to keep their shards in the same directories');
    }
    const tableMap = matchSchemas(source.schema, target.schema);
    checkMaps(source.map, target.map);
    const statePath = options.statePath ?? join(source.dataDir, 'migrations', `${targetId(target)}.sqlite`);
    state = new MigrationState(statePath);
    const ctx = { o, source, target, state, tableMap };
    return await run(ctx, fromPath, toPath, statePath);
  } finally {
    state?.close();
    await source.backend.close();
    await target?.backend.close();
  }
}

async function openSide(path: string): Promise<Side> {
  const config = loadConfigFile(path);
  const dataDir = dirname(path);
  const schema = resolveSchema(config);
  const seed = ShardMap.fromJSON(config.shardMap, { hosts: Object.keys(config.hosts) });
  const store = createTopologyStore(config.topologyStore, { dataDir });
  let map: ShardMap;
  try {
    map = (await store.read()) ?? seed;
  } finally {
    await store.close();
  }
  const backend = await createBackend({ config, dataDir, schema });
  if (!canCopyShards(backend)) {
    await backend.close();
    throw new ShardKitError('INVALID_ARGUMENT', `${path}: the ${backend.kind} backend cannot copy whole shards`);
  }
  return { path, config, dataDir, schema, map, backend };
}

function sameSqliteDirs(a: Side, b: Side): boolean {
  const dir = (s: Side) => resolve(s.dataDir, (s.config.storage as { dir: string }).dir);
  return dir(a) === dir(b);
}

/** Identifies the target by where its data lives (storage and hosts), not by its file name. */
function targetId(t: Side): string {
  const where = JSON.stringify({ storage: t.config.storage, hosts: t.config.hosts, dir: t.config.storage.backend === 'sqlite' ? t.dataDir : undefined });
  return `to-${createHash('sha1').update(where).digest('hex').slice(0, 16)}`;
}

/** Source table → target table for every source entity; the target must know each with the same type id. */
function matchSchemas(s: SchemaDef, t: SchemaDef): Map<string, string> {
  const out = new Map<string, string>();
  const fail = (m: string): never => {
    throw new ShardKitError('INVALID_CONFIG', `the target's schema does not match the source's: ${m}`);
  };
  for (const type of s.types) {
    const other = t.types.find((x) => x.name === type.name);
    if (other === undefined) fail(`type ${type.name} is missing`);
    if (other!.id !== type.id) fail(`type ${type.name} has id ${other!.id} there, ${type.id} here (ids would change)`);
    out.set(type.table, other!.table);
  }
  for (const m of s.mappings) {
    const other = t.mappings.find((x) => x.name === m.name);
    if (other === undefined) fail(`mapping ${m.name} is missing`);
    if (other!.from !== m.from || other!.to !== m.to) fail(`mapping ${m.name} links other types there`);
    out.set(m.table, other!.table);
  }
  for (const k of s.keyspaces) {
    const other = t.keyspaces.find((x) => x.name === k.name);
    if (other === undefined) fail(`keyspace ${k.name} is missing`);
    out.set(k.table, other!.table);
  }
  return out;
}

function checkMaps(s: ShardMap, t: ShardMap): void {
  if (t.shardCount < s.shardCount) {
    throw new ShardKitError('INVALID_CONFIG', `the target's shard map has ${t.shardCount} object shards, the source's ${s.shardCount}: shards keep their numbers, so the target needs all of them`);
  }
  if (t.modShardCount !== s.modShardCount) {
    throw new ShardKitError('INVALID_CONFIG', `the target has ${t.modShardCount} mod shards, the source ${s.modShardCount}: md5(key) mod N must stay the same`);
  }
}

interface RunContext {
  o: typeof DEFAULTS & KitMigrationOptions;
  source: Side;
  target: Side;
  state: MigrationState;
  tableMap: Map<string, string>;
}

async function run(ctx: RunContext, fromPath: string, toPath: string, statePath: string): Promise<KitMigrationReport> {
  const { o, state } = ctx;
  const rounds: RoundReport[] = [];
  const skipped: SkippedShard[] = [];
  const finalAt = state.get('final');
  let jobs = await prepare(ctx, skipped);
  const report = (): KitMigrationReport => {
    const last = rounds[rounds.length - 1];
    return {
      from: fromPath, to: toPath, state: statePath, rounds, delta: last === undefined ? 0 : last.upserts + last.deletes,
      shards: { objects: jobs.filter((j) => j.fleet === 'objects').length, lookups: jobs.filter((j) => j.fleet === 'lookups').length },
      skipped, nextSteps: [],
    };
  };
  if (finalAt === undefined) {
    // Copy, then catch up round after round while the delta shrinks.
    let previous = Infinity;
    for (let n = 1; n <= o.maxRounds; n++) {
      const r = await round(ctx, jobs, n, 'copy');
      rounds.push(r);
      const delta = r.upserts + r.deletes;
      if (delta <= o.nearZero || delta >= previous) break;
      previous = delta;
    }
    if (!o.final) {
      const out = report();
      out.nextSteps.push(`run it again to catch up (the source keeps serving), then: shardkit migrate --from ${o.from} --to ${o.to} --final`);
      return out;
    }
  }
  // --final: fence the source (writes refused, retryable, until the fence lifts itself at
  // `until`; source-fence.ts says which files and tables), then copy what changed. The fence comes
  // before the copy, so a write acknowledged before it is copied and none is acknowledged after.
  const sqlite = ctx.source.backend as unknown as SqliteBackend;
  const until = Date.now() + o.freezeMs;
  if (finalAt === undefined) {
    const reason = `the store is being migrated to ${toPath}: writes are refused until the cutover ends (at the latest ${new Date(until).toISOString()}); retry`;
    await fenceSource(ctx.source, sqlite, { until, reason });
    await o.onStep?.('fenced');
    jobs = await prepare(ctx, skipped);
    rounds.push(await round(ctx, jobs, rounds.length + 1, 'final'));
    if (Date.now() >= until) {
      // Writes may have landed after the fence lifted: not a cutover. The next run copies them.
      throw new ShardKitError('SHARD_MOVING', `the final pass took longer than the freeze (${o.freezeMs} ms) and the fence has lifted: run --final again (catch-up runs first make the last delta smaller), or give it more time with --freeze-seconds`);
    }
    state.set('final', new Date().toISOString());
  }
  // The cutover is done: the source stays read-only for good (idempotent, so a rerun after a crash here finishes it).
  const at = state.get('final')!;
  const reason = `this store was migrated to ${toPath} at ${at} and is read-only: run the services on the new config`;
  const files = await fenceSource(ctx.source, sqlite, { reason });
  writeFileSync(join(ctx.source.dataDir, 'MIGRATED.json'), `${JSON.stringify({ migratedTo: toPath, at, readOnly: true }, null, 2)}\n`);
  await markMapReadOnly(ctx.source, reason, Date.parse(at));
  jobs = await prepare(ctx, skipped);
  rounds.push(await round(ctx, jobs, rounds.length + 1, 'verify'));
  await o.onStep?.('copied');
  const out = report();
  out.final = { at, fencedFiles: files.length, freezeMs: o.freezeMs };
  out.nextSteps.push(
    `restart every service on the new config: shardkit serve --config ${toPath} (or switch them through the topology store)`,
    `the old store stays read-only (its shard files refuse writes; ${join(ctx.source.dataDir, 'MIGRATED.json')} says where it went)`,
  );
  return out;
}

/**
 * Says so in the source's shard map (`readOnly`, shown by `topology show --json`):
 * compare-and-set on the map in force, redone when another writer won; a no-op when already set.
 */
async function markMapReadOnly(source: Side, reason: string, since: number): Promise<void> {
  const store = createTopologyStore(source.config.topologyStore, { dataDir: source.dataDir });
  try {
    for (let attempt = 1; ; attempt++) {
      const stored = await store.read();
      const current = stored ?? ShardMap.fromJSON(source.config.shardMap);
      if (current.readOnly !== undefined) return;
      const next = ShardMap.fromJSON({ ...current.toJSON(), readOnly: { reason, since } });
      try {
        await store.write(next, stored?.version ?? 0);
        return;
      } catch (err) {
        if (!isShardKitError(err, 'VERSION_CONFLICT') || attempt >= 5) throw err;
      }
    }
  } finally {
    await store.close();
  }
}

/**
 * The shards to copy (those the source holds, and those an earlier run started), after checking
 * that every shard this migration has not touched yet is empty on the target: a target that holds
 * other data there is refused before anything is written.
 */
async function prepare(ctx: RunContext, skipped: SkippedShard[]): Promise<Job[]> {
  const { source, target, state } = ctx;
  const jobs: Job[] = [];
  for (const fleet of ['objects', 'lookups'] as const) {
    const started = state.started(fleet);
    const shards = new Set<number>(started);
    for (const host of source.map.hostNames()) {
      const mine = new Set(fleet === 'objects' ? source.map.shardsOnHost(host) : source.map.modShardsOnHost(host));
      for (const s of await source.backend.listShards(host, fleet)) {
        if (mine.has(s)) shards.add(s);
        else skip(skipped, { fleet, shard: s, reason: `a shard file on ${host}, which the source's map does not name as this shard's master (a slave's copy or a leftover of a move): not copied` });
      }
    }
    const sourceTables = fleetTables(source.schema, fleet);
    for (const shard of [...shards].sort((a, b) => a - b)) {
      const srcHost = fleet === 'objects' ? source.map.locate(shard).master : source.map.locateModShard(shard).master;
      const tgtHost = fleet === 'objects' ? target.map.locate(shard).master : target.map.locateModShard(shard).master;
      const tables = sourceTables.map((t): [string, string, TableKind<any>] => {
        const kind = source.schema.types.some((x) => x.table === t) ? objectsKind : source.schema.mappings.some((x) => x.table === t) ? mappingsKind : lookupsKind;
        return [t, ctx.tableMap.get(t)!, kind];
      });
      jobs.push({ fleet, shard, sourceRef: { host: srcHost, shard, fleet }, targetRef: { host: tgtHost, shard, fleet }, tables });
    }
    const fresh = jobs.filter((j) => j.fleet === fleet && !started.has(j.shard));
    if (fresh.length === 0) continue;
    // Target shards: created where missing, and every fresh one must be empty.
    const existing = new Map<string, Set<number>>();
    for (const j of fresh) {
      if (!existing.has(j.targetRef.host)) existing.set(j.targetRef.host, new Set(await target.backend.listShards(j.targetRef.host, fleet)));
    }
    const busy: string[] = [];
    await eachLimit(fresh, ctx.o.concurrency, async (j) => {
      // Every table, even of a shard the target does not list as complete (some tables may exist).
      for (const [, table, kind] of j.tables) {
        const rows = await kind.scan(target.backend, j.targetRef, table, undefined, 1).catch((err: unknown) => {
          if (isShardKitError(err) && err.details?.missingTable === true) return [];
          throw err;
        });
        if (rows.length > 0) {
          busy.push(`${fleet} shard ${j.shard} (${table} on ${j.targetRef.host})`);
          return;
        }
      }
    });
    if (busy.length > 0) {
      busy.sort();
      throw new ShardKitError('ALREADY_EXISTS', `the target already holds other data in ${busy.length} shard${busy.length === 1 ? '' : 's'} this migration has not written: ${busy.slice(0, 3).join(', ')}${busy.length > 3 ? ', ...' : ''}; nothing was copied`);
    }
    await eachLimit(fresh, ctx.o.concurrency, async (j) => {
      if (!existing.get(j.targetRef.host)!.has(j.shard)) await target.backend.createShard(j.targetRef);
    });
    state.markStarted(fleet, fresh.map((j) => j.shard));
  }
  await createEmptyTargetShards(ctx);
  return jobs;
}

/**
 * An embedded store creates a shard's file on its first write, so a young source may lack some
 * shards: the target still gets every shard of its map (empty), or the service restarted on it
 * would refuse writes there until someone ran `shardkit init`.
 */
async function createEmptyTargetShards(ctx: RunContext): Promise<void> {
  const { map, backend } = ctx.target;
  for (const fleet of ['objects', 'lookups'] as const) {
    const refs: ShardRef[] = [];
    const masters = new Set((fleet === 'objects' ? map.objectRanges() : map.modShardRanges()).map((r) => r.master));
    for (const host of masters) {
      const have = new Set(await backend.listShards(host, fleet));
      for (const shard of fleet === 'objects' ? map.shardsOnHost(host) : map.modShardsOnHost(host)) {
        if (!have.has(shard)) refs.push({ host, shard, fleet });
      }
    }
    await eachLimit(refs, ctx.o.concurrency, (ref) => backend.createShard(ref));
  }
}

function skip(list: SkippedShard[], s: SkippedShard): void {
  if (!list.some((x) => x.fleet === s.fleet && x.shard === s.shard && x.reason === s.reason)) list.push(s);
}

async function round(ctx: RunContext, jobs: Job[], n: number, phase: RoundReport['phase']): Promise<RoundReport> {
  const started = Date.now();
  const r: RoundReport = { round: n, phase, shards: jobs.length, rowsScanned: 0, changedChunks: 0, upserts: 0, deletes: 0, retries: 0, elapsedMs: 0 };
  let done = 0;
  const progress = () => ctx.o.onProgress?.({ round: n, phase, shardsDone: done, shardsTotal: jobs.length, rowsScanned: r.rowsScanned, rowsChanged: r.upserts + r.deletes });
  progress();
  await eachLimit(jobs, ctx.o.concurrency, async (j) => {
    for (const [sourceTable, targetTable, kind] of j.tables) {
      const res: TableCopyResult = await copyTable(kind, {
        source: ctx.source.backend, target: ctx.target.backend, sourceRef: j.sourceRef, targetRef: j.targetRef, fleet: j.fleet,
        sourceTable, targetTable, state: ctx.state, chunkRows: ctx.o.chunkRows,
        beforeChunk: ctx.o.onStep === undefined ? undefined : () => ctx.o.onStep!('chunk-write'),
        onRetry: () => r.retries++,
      });
      r.rowsScanned += res.rowsScanned;
      r.changedChunks += res.changedChunks;
      r.upserts += res.upserts;
      r.deletes += res.deletes;
      if (kind === objectsKind) await carryIdCounter(ctx, j, sourceTable, targetTable);
    }
    done++;
    progress();
  });
  r.elapsedMs = Date.now() - started;
  return r;
}

/**
 * A deleted object's local id is never handed out again (it is part of a public ID): the target's
 * counter is raised to the source's high-water mark, deleted rows included, whenever it moved.
 */
async function carryIdCounter(ctx: RunContext, j: Job, sourceTable: string, targetTable: string): Promise<void> {
  const hw = await ctx.source.backend.objectIdHighWater(j.sourceRef, sourceTable);
  const key = `hw:${j.shard}:${sourceTable}`;
  if (Number(ctx.state.get(key) ?? 0) >= hw) return;
  await ctx.target.backend.raiseObjectIdHighWater(j.targetRef, targetTable, hw);
  ctx.state.set(key, String(hw));
}

