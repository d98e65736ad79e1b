import { randomBytes } from 'node:crypto';
import { ShardKitError } from '../../errors.js';
import type { MoveProgressFn } from '../../moves/move-engine.js';
import { runMove, type MoveEvent, type MoveResult } from '../../moves/move-runner.js';
import { RestoreInMoveEngine, type RestoredTables, type RestoreInSource, type RestoreInTarget } from '../../moves/restore-in-engine.js';
import { shardDatabaseName } from '../../storage/shard-names.js';
import type { ShardSpan } from '../../topology/map-edits.js';
import type { HostPair, MovePhase, MoveRecord, ShardMap } from '../../topology/shard-map.js';
import type { TopologyStore } from '../../topology/topology-store.js';
import type { BackupEngine } from './backup-engine.js';
import { readManifest, type BackupManifest, type UnitBackup } from './backup-manifest.js';
import { baseFor } from './backup-restore.js';
import { readText, type BackupTarget } from './backup-target.js';

/** `restores/<move id>.json` in the backup directory: what a restore-in move restores, and how far its load got. */
export interface RestoreInRecord {
  format: 1;
  moveId: string;
  backupId: string;
  toMs?: number;
  range: [number, number];
  into: HostPair;
  /** Backup unit (pair at backup time) -> the shards restored from it. */
  units: Record<string, number[]>;
  state: 'planned' | 'loading' | 'loaded';
  /** What the restored tables hold (written with state loaded). */
  expected?: RestoredTables;
}

export interface RestoreIntoDeps {
  backup: BackupEngine;
  target: BackupTarget;
  store: TopologyStore;
  /** Hosts the config and the host records declare (the spare pair must be one). */
  hosts: string[];
  /** The object fleet's tables: what is restored and moved in. */
  tables: readonly string[];
  /** The engine's move parts (moves/mariadb mariadbRestoreInTarget, moves/postgres postgresRestoreInTarget). */
  moveTarget: RestoreInTarget;
  /** SQL the load runs first in its transaction (PostgreSQL: the move's marker, unless `marker` is false, and the shards' tables). */
  preamble?: (move: MoveRecord, marker?: boolean) => string;
  onEvent?: (e: MoveEvent) => void;
  onProgress?: MoveProgressFn;
  /** Test hook: called after each phase is recorded (the CLI's SHARDKIT_TEST_MOVE_STOP_AFTER, as for shards move). */
  afterPhase?: (phase: MovePhase) => void | Promise<void>;
}

export type RestoreIntoRequest =
  | { span: ShardSpan; into: HostPair; toTime?: number; id?: string; holdMs?: number }
  | { resume: string }
  | { abort: string };

export interface RestoreIntoReport extends MoveResult {
  backupId: string;
  toTime?: string;
}

const recordName = (moveId: string) => `restores/${moveId}.json`;
const MOVE_ID = /^restore-[a-z0-9-]{1,56}$/;

/**
 * `backup restore --shards A..B [--to-time T] --into MASTER`: the shards restored aside onto a
 * spare pair that holds none of their rows, then switched in by the move machinery (freeze, fence,
 * switch: src/moves/restore-in-engine.ts). The other shards are never touched; the live rows of the
 * restored shards stay on their old pair, fenced, until `shards drop-moved`. A killed run is taken
 * up by `--resume <move id>` (or rolled back by `--abort <move id>`).
 */
export async function restoreShardsInto(deps: RestoreIntoDeps, req: RestoreIntoRequest): Promise<RestoreIntoReport> {
  let record: RestoreInRecord;
  let manifest: BackupManifest;
  if ('span' in req) {
    ({ record, manifest } = await plan(deps, req));
    await writeRecord(deps.target, record);
    try {
      return await run(deps, req, record, manifest);
    } catch (err) {
      // Refused before the move was recorded (the map's own checks): nothing is left, not even the record.
      if ((await deps.store.read())?.move(record.moveId) === undefined) await deps.target.remove(recordName(record.moveId));
      throw err;
    }
  } else {
    const moveId = 'resume' in req ? req.resume : req.abort;
    record = await readRecord(deps.target, moveId);
    manifest = await readManifest(deps.target, record.backupId);
  }
  return run(deps, req, record, manifest);
}

async function run(deps: RestoreIntoDeps, req: RestoreIntoRequest, record: RestoreInRecord, manifest: BackupManifest): Promise<RestoreIntoReport> {
  const engine = new RestoreInMoveEngine(source(deps, record, manifest), deps.moveTarget);
  const result = await runMove({
    store: deps.store, engine, hosts: deps.hosts,
    ...('span' in req
      ? { start: { span: req.span, target: req.into, id: record.moveId, ...(req.holdMs !== undefined ? { holdMs: req.holdMs } : {}) } }
      : { moveId: record.moveId, abort: 'abort' in req }),
    ...(deps.onEvent !== undefined ? { onEvent: deps.onEvent } : {}),
    ...(deps.onProgress !== undefined ? { onProgress: deps.onProgress } : {}),
    ...(deps.afterPhase !== undefined ? { afterPhase: deps.afterPhase } : {}),
  });
  // An aborted restore left nothing on the spare: its record goes too (a switched one stays, as history).
  if (result.outcome === 'aborted') await deps.target.remove(recordName(record.moveId));
  return { ...result, backupId: record.backupId, ...(record.toMs !== undefined ? { toTime: new Date(record.toMs).toISOString() } : {}) };
}

/** Checks everything before anything changes: the backup, the time, the shards, the spare pair. */
async function plan(deps: RestoreIntoDeps, req: { span: ShardSpan; into: HostPair; toTime?: number; id?: string }): Promise<{ record: RestoreInRecord; manifest: BackupManifest }> {
  const map = await checkSpan(deps, req.span, 'restore --shards --into');
  const { first, last } = req.span;
  for (const h of [req.into.master, req.into.slave]) {
    if (h !== undefined && !deps.hosts.includes(h)) throw new ShardKitError('INVALID_ARGUMENT', `--into names ${h}, which neither the config nor the host records declare (add it with \`shardkit topology hosts add\`, or \`shardkit dev add-pair\`): nothing changed`);
  }
  const pair = map.locate(first);
  for (let s = first + 1; s <= last; s++) {
    if (map.locate(s).master !== pair.master) throw new ShardKitError('INVALID_ARGUMENT', `shards ${first}..${last} are not all on one pair (${first} is on ${pair.master}, ${s} on ${map.locate(s).master}): restore each pair's part on its own: nothing changed`);
  }
  if ([pair.master, pair.slave].includes(req.into.master)) throw new ShardKitError('INVALID_ARGUMENT', `--into ${req.into.master} is a host of the pair that serves shards ${first}..${last} now: restore into a spare pair: nothing changed`);
  const { manifest, held } = await backupUnits(deps, req);
  const units: Record<string, number[]> = {};
  for (const { shard, unit } of held) (units[unit.unit] ??= []).push(shard);
  const moveId = `restore-${req.span.first}-${req.span.last}-${randomBytes(3).toString('hex')}`;
  return { record: { format: 1, moveId, backupId: manifest.id, ...(req.toTime !== undefined ? { toMs: req.toTime } : {}), range: [first, last], into: req.into, units, state: 'planned' }, manifest };
}

/** What both restores check first: an engine that restores shards aside, a map, and the shards in it. */
async function checkSpan(deps: Pick<RestoreIntoDeps, 'backup' | 'store'>, span: ShardSpan, command: string): Promise<ShardMap> {
  const { backup } = deps;
  if (backup.restoreAside === undefined || backup.summariesOn === undefined) throw new ShardKitError('INVALID_ARGUMENT', `${command} is built for MariaDB and PostgreSQL fleets, not ${backup.kind} (restore the backup in place whole instead): nothing changed`);
  const map = await deps.store.read();
  if (map === undefined) throw new ShardKitError('INVALID_CONFIG', 'the topology store holds no shard map: nothing changed');
  if (span.last >= map.shardCount) throw new ShardKitError('UNKNOWN_SHARD', `shards ${span.first}..${span.last} are not all in the shard map (0..${map.shardCount - 1}): nothing changed`);
  return map;
}

/** The backup to restore from (named, the newest, or the one for toTime), of this engine, and the unit of it that held each shard. */
async function backupUnits(deps: Pick<RestoreIntoDeps, 'backup' | 'target' | 'tables'>, req: { span: ShardSpan; toTime?: number; id?: string }): Promise<{ manifest: BackupManifest; held: Array<{ shard: number; unit: UnitBackup }> }> {
  const { backup, target } = deps;
  const manifest = req.toTime === undefined ? await readManifest(target, req.id) : await baseFor(backup, target, req.toTime);
  if (manifest.engine !== backup.kind) throw new ShardKitError('INVALID_ARGUMENT', `backup ${manifest.id} is of a ${manifest.engine} fleet, this one is ${backup.kind}: nothing changed`);
  const held: Array<{ shard: number; unit: UnitBackup }> = [];
  for (let s = req.span.first; s <= req.span.last; s++) {
    const db = shardDatabaseName(s);
    const unit = manifest.units.find((u) => deps.tables.some((t) => `${db}.${t}` in u.tables));
    if (unit === undefined) throw new ShardKitError('NOT_FOUND', `shard ${s} has no object tables in backup ${manifest.id} (no pair of it held ${db}): nothing changed`);
    held.push({ shard: s, unit });
  }
  return { manifest, held };
}

/** The restore-in move's source: the backup, restored aside onto the move's target, unit by unit. */
function source(deps: RestoreIntoDeps, record: RestoreInRecord, manifest: BackupManifest): RestoreInSource {
  const { backup, target } = deps;
  return {
    state: async () => (record.state === 'planned' ? 'none' : record.state),
    load: async (move, onProgress) => {
      record.state = 'loading';
      await writeRecord(target, record);
      const expected: RestoredTables = {};
      const entries = Object.entries(record.units);
      for (const [i, [unitName, shards]] of entries.entries()) {
        const unit = manifest.units.find((u) => u.unit === unitName)!;
        const report = (rows: number, total: number) => onProgress?.(i, entries.length, { rowsCopied: rows, rowsTotal: total });
        Object.assign(expected, await backup.restoreAside!(unit, target, manifest.id, {
          shards, tables: deps.tables, into: move.target, ...(record.toMs !== undefined ? { toMs: record.toMs } : {}), onRows: report,
        }, deps.preamble?.(move) ?? ''));
      }
      onProgress?.(entries.length, entries.length);
      record.expected = expected;
      record.state = 'loaded';
      await writeRecord(target, record);
      return expected;
    },
    expected: async () => {
      if (record.expected === undefined) throw new ShardKitError('MOVE_STATE_LOST', `restore ${record.moveId} has no record of what it loaded (${recordName(record.moveId)}): run it with --abort`);
      return record.expected;
    },
    onTarget: async (move) => backup.summariesOn!(move.target.master, [...new Set(Object.values(record.units).flat())].map((s) => shardDatabaseName(s))),
  };
}

async function writeRecord(target: BackupTarget, record: RestoreInRecord): Promise<void> {
  await target.put(recordName(record.moveId), `${JSON.stringify(record, null, 2)}\n`);
}

async function readRecord(target: BackupTarget, moveId: string): Promise<RestoreInRecord> {
  if (!MOVE_ID.test(moveId)) throw new ShardKitError('INVALID_ARGUMENT', `a restore's move id is restore-<first>-<last>-<hex> (as the restore printed it), got ${JSON.stringify(moveId.slice(0, 80))}: nothing changed`);
  if (!(await target.exists(recordName(moveId)))) throw new ShardKitError('UNKNOWN_MOVE', `no restore ${moveId} in ${target.location} (${recordName(moveId)}): nothing changed`);
  return JSON.parse(await readText(target, recordName(moveId))) as RestoreInRecord;
}

export interface RestoreInPlaceReport {
  backupId: string;
  toTime?: string;
  range: [number, number];
  /** Pair (its master now) -> the shards restored on it. */
  pairs: Record<string, number[]>;
  rows: number;
  tables: number;
}

/**
 * `backup restore --shards A..B [--to-time T]` without `--into`: the shards' object tables put
 * back on the pairs that hold them now, restored aside in a scratch server as for `--into`, then
 * loaded over the live tables (their id counters kept where higher). Refused, nothing changed,
 * while services are connected to those pairs unless `force`, and while a move or failover covers
 * the shards. Checked afterwards against what the restore produced.
 */
export async function restoreShardsInPlace(deps: Pick<RestoreIntoDeps, 'backup' | 'target' | 'store' | 'tables' | 'preamble' | 'onProgress'>, req: { span: ShardSpan; toTime?: number; id?: string; force?: boolean }): Promise<RestoreInPlaceReport> {
  const { backup, target } = deps;
  const map = await checkSpan(deps, req.span, 'restore --shards');
  if (backup.requireNoServices === undefined) throw new ShardKitError('INVALID_ARGUMENT', `restore --shards is built for MariaDB and PostgreSQL fleets, not ${backup.kind}: nothing changed`);
  const { first, last } = req.span;
  const busy = map.moves().find((m) => m.phase !== 'switched' && m.range[0] <= last && m.range[1] >= first);
  if (busy !== undefined) throw new ShardKitError('PRECONDITION_FAILED', `${busy.kind ?? 'move'} ${busy.id} (${busy.phase}) covers shards ${busy.range[0]}..${busy.range[1]}: restore after it finished: nothing changed`);
  const { manifest, held } = await backupUnits(deps, req);
  // Grouped by the pair that holds each shard now and the backup unit that held it then.
  const groups = new Map<string, { pair: HostPair; unit: UnitBackup; shards: number[] }>();
  for (const { shard: s, unit } of held) {
    const loc = map.locate(s);
    const key = `${loc.master}\n${unit.unit}`;
    const g = groups.get(key) ?? { pair: { master: loc.master, ...(loc.slave !== undefined ? { slave: loc.slave } : {}) }, unit, shards: [] };
    g.shards.push(s);
    groups.set(key, g);
  }
  if (!req.force) for (const master of new Set([...groups.values()].map((g) => g.pair.master))) await backup.requireNoServices!(master);
  const pairs: Record<string, number[]> = {};
  let rows = 0;
  let tables = 0;
  for (const [i, g] of [...groups.values()].entries()) {
    const move = { id: 'restore-in-place', range: [g.shards[0]!, g.shards.at(-1)!], source: g.pair, target: g.pair } as unknown as MoveRecord;
    const expected = await backup.restoreAside!(g.unit, target, manifest.id, {
      shards: g.shards, tables: deps.tables, into: g.pair, replace: true, ...(req.toTime !== undefined ? { toMs: req.toTime } : {}),
      onRows: (r, total) => deps.onProgress?.(i, groups.size, { rowsCopied: r, rowsTotal: total }),
    }, deps.preamble?.(move, false) ?? '');
    const have = await backup.summariesOn!(g.pair.master, g.shards.map((s) => shardDatabaseName(s)));
    const differ = Object.keys(expected).filter((n) => have[n]?.rows !== expected[n]!.rows || have[n]?.checksum !== expected[n]!.checksum);
    if (differ.length > 0) throw new ShardKitError('MOVE_VERIFY_MISMATCH', `after the restore, ${g.pair.master} holds other rows than the backup restored for ${differ.slice(0, 3).join(', ')}${differ.length > 3 ? ` and ${differ.length - 3} more` : ''}: run it again, or restore the whole pair`);
    (pairs[g.pair.master] ??= []).push(...g.shards);
    rows += Object.values(expected).reduce((n, t) => n + t.rows, 0);
    tables += Object.keys(expected).length;
  }
  deps.onProgress?.(groups.size, groups.size);
  return { backupId: manifest.id, ...(req.toTime !== undefined ? { toTime: new Date(req.toTime).toISOString() } : {}), range: [first, last], pairs, rows, tables };
}

