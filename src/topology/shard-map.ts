import { z } from 'zod';
import { ShardKitError } from '../errors.js';
import { PINTEREST_MAX_SHARD } from '../ids/pinterest-id.js';
import { RangeIndex, ShardTable, checkedSorted, invalid } from './shard-table.js';
import type { ShardLocation } from './shard-range.js';

export type { HostPair, RangeFreeze, ShardRange } from './shard-range.js';
import type { HostPair, RangeFreeze, ShardRange } from './shard-range.js';

/**
 * The phases of a move, in order (src/moves/move-runner.ts runs them); 'aborting' is entered from
 * any phase before 'switched' and ends with the record removed.
 */
export const MOVE_PHASES = ['started', 'copied', 'frozen', 'fenced', 'switched', 'aborting'] as const;
export type MovePhase = (typeof MOVE_PHASES)[number];
/** Steps inside a phase, for people watching (MoveProgress.step). */
export const MOVE_STEPS = ['copying', 'lag', 'verifying', 'settling', 'services', 'admission', 'catching-up'] as const;
export type MoveStep = (typeof MOVE_STEPS)[number];

/**
 * A move of object shards between host pairs, recorded in the shard map itself so every service
 * and every operator tool sees it and a crashed mover can be resumed from its last phase.
 */
export interface MoveRecord {
  id: string;
  /** What kind of operation: a shard move (`shards move`), or a failover by another tool. */
  kind: 'move' | 'failover';
  range: [number, number];
  source: HostPair;
  target: HostPair;
  phase: MovePhase;
  holdMs: number;
  /** Wall-clock ms since the epoch. */
  startedAt: number;
  updatedAt: number;
  /** Engine-specific resume data (positions, counts); small scalars only. */
  detail?: Record<string, string | number | boolean>;
  /**
   * How far the running phase is. Stored maps no longer carry it (#30): the mover writes it at
   * most once a second into the store's progress records (move-progress-records.ts), which
   * services do not watch, and readers (dashboard, `topology show`) merge it into this view.
   */
  progress?: MoveProgress;
}

/** A mover's progress through one phase of a move. */
export interface MoveProgress {
  /** The phase these numbers are about (older progress stays behind when the phase changes). */
  phase: MovePhase;
  /** Shards of the move copied (or caught up) so far, of shardsTotal. */
  shardsDone?: number;
  shardsTotal?: number;
  /** Rows copied so far, of rowsTotal, for engines that report rows. */
  rowsCopied?: number;
  rowsTotal?: number;
  /** Bytes of the copy streamed so far (MariaDB: the dump), while rows are not known yet. */
  bytesCopied?: number;
  /** Average rates since the copy started, and the seconds left at that rate. */
  rowsPerSecond?: number;
  bytesPerSecond?: number;
  etaSeconds?: number;
  /** The tables being copied now (one per copy stream), rows and bytes each. */
  tables?: Array<{ table: string; rowsCopied: number; bytesCopied: number }>;
  /** How far the target is behind the source, in the engine's unit (MoveEngine.lag). */
  lag?: number;
  /**
   * What the mover does inside the phase (#28: a phase such as `copied` holds the lag gate, the
   * verify before the freeze, the chunk settle and the services' gate, up to half a move).
   */
  step?: MoveStep;
  /** Tables verified so far, of verifyTables, in the current verify (before or under the freeze). */
  verifiedTables?: number;
  verifyTables?: number;
  /** Wall-clock ms of the last update. */
  at: number;
}

/** The JSON form of the shard map; `topology show --json` and `GET /v1/topology` print exactly this. */
export interface ShardMapJson {
  version: number;
  ranges: ShardRange[];
  modShards: { count: number; ranges: ShardRange[] };
  /** Moves in progress or switched and not yet cleaned up (absent: none). */
  moves?: MoveRecord[];
  /** Set by `shardkit migrate --final` on the store it migrated away from (docs/migrate.md): its shards refuse writes for good. Not served by GET /v1/topology yet. */
  readOnly?: MapReadOnly;
}

/** Why a whole store is read-only, and since when (wall-clock ms). */
export interface MapReadOnly {
  reason: string;
  since: number;
}

const hostName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'host names are 1-64 of [A-Za-z0-9_.-]');
/** Move ids: lowercase letters, digits and dashes (they appear in file names and SQL comments). */
export const MOVE_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,63}$/;
const moveId = z.string().regex(MOVE_ID_PATTERN, 'move ids are 1-64 of [a-z0-9-], starting with a letter or digit');
const pairSchema = z.object({ master: hostName, slave: hostName.optional() }).strict();
const epochMs = z.number().int().min(0);
/** A hold budget: a freeze longer than a minute would be an outage, not a pause. */
const holdMs = z.number().int().min(1).max(60_000);
const freezeSchema = z.object({ id: moveId, source: pairSchema, target: pairSchema, frozenAt: epochMs, holdMs }).strict();
export const rangeSchema = z.object({
  range: z.tuple([z.number().int().min(0), z.number().int().min(0)]),
  master: hostName,
  slave: hostName.optional(),
  open: z.boolean().optional(),
  frozen: freezeSchema.optional(),
}).strict();
/** Tables in flight a progress record names at most (a copy runs a handful of streams). */
export const MAX_PROGRESS_TABLES = 32;
/** A move's progress record (kept beside the map since #30; older maps may still carry one inline). */
export const moveProgressSchema = z.object({
  phase: z.enum(MOVE_PHASES),
  shardsDone: z.number().int().min(0).optional(),
  shardsTotal: z.number().int().min(0).optional(),
  rowsCopied: z.number().int().min(0).optional(),
  rowsTotal: z.number().int().min(0).optional(),
  bytesCopied: z.number().int().min(0).optional(),
  rowsPerSecond: z.number().min(0).optional(),
  bytesPerSecond: z.number().min(0).optional(),
  etaSeconds: z.number().min(0).optional(),
  tables: z.array(z.object({ table: z.string().min(1).max(300), rowsCopied: z.number().int().min(0), bytesCopied: z.number().int().min(0) }).strict()).max(MAX_PROGRESS_TABLES).optional(),
  lag: z.number().min(0).optional(),
  step: z.enum(MOVE_STEPS).optional(),
  verifiedTables: z.number().int().min(0).optional(),
  verifyTables: z.number().int().min(0).optional(),
  at: epochMs,
}).strict();
export const moveRecordSchema = z.object({
  id: moveId,
  kind: z.enum(['move', 'failover']),
  range: z.tuple([z.number().int().min(0), z.number().int().min(0)]),
  source: pairSchema,
  target: pairSchema,
  phase: z.enum(MOVE_PHASES),
  holdMs,
  startedAt: epochMs,
  updatedAt: epochMs,
  detail: z.record(z.string(), z.union([z.string().max(4096), z.number(), z.boolean()])).optional(),
  progress: moveProgressSchema.optional(),
}).strict();

export const shardMapSchema = z.object({
  version: z.number().int().min(0),
  ranges: z.array(rangeSchema).min(1),
  modShards: z.object({ count: z.number().int().min(1).max(65536), ranges: z.array(rangeSchema).min(1) }).strict(),
  moves: z.array(moveRecordSchema).optional(),
  readOnly: z.object({ reason: z.string().min(1).max(1000), since: epochMs }).strict().optional(),
}).strict();

export type { ShardLocation } from './shard-range.js';

export class ShardMap {
  readonly version: number;
  private readonly objects: ShardTable;
  private readonly mod: RangeIndex;
  readonly modShardCount: number;
  private readonly moveList: MoveRecord[];
  /** The object ranges under a freeze (few: one per move in its cutover), to check moves without a pass over every range. */
  private readonly frozenRanges: ShardRange[];
  /** Set on a store that was migrated away (`shardkit migrate --final`). */
  readonly readOnly: MapReadOnly | undefined;

  private constructor(version: number, objects: ShardTable, mod: RangeIndex, modCount: number, moves: MoveRecord[], frozen: ShardRange[], readOnly: MapReadOnly | undefined) {
    this.version = version;
    this.objects = objects;
    this.mod = mod;
    this.modShardCount = modCount;
    this.moveList = moves;
    this.frozenRanges = frozen;
    this.readOnly = readOnly === undefined ? undefined : { reason: readOnly.reason, since: readOnly.since };
    checkMoves(this.moveList, this.frozenRanges);
  }

  private static build(json: ShardMapJson, hosts?: Iterable<string>): ShardMap {
    const sorted = checkedSorted(json.ranges, 'object', 0, undefined);
    if (sorted.length === 0) invalid('no object shard ranges');
    if (sorted[sorted.length - 1]!.range[1] > PINTEREST_MAX_SHARD) invalid(`object shards stop at ${PINTEREST_MAX_SHARD}`);
    const mod = modIndex(json.modShards);
    const map = new ShardMap(json.version, ShardTable.fromSorted(sorted), mod, json.modShards.count, (json.moves ?? []).map(copyMove), sorted.filter((r) => r.frozen !== undefined), json.readOnly);
    if (hosts !== undefined) {
      const declared = new Set(hosts);
      for (const h of map.hostNames()) if (!declared.has(h)) invalid(`host ${h} is used by the shard map but not declared in "hosts"`);
    }
    return map;
  }

  /**
   * The next version of `previous` after a change of some pairs' records (the record layout's
   * watcher, #30): `removed` are previous ranges the change replaces, `added` the ranges that
   * replace them (each checked against the schema when its record was decoded); `removedMasters`:
   * pairs all of whose previous ranges are removed, found by the table under the added ones. Touches only the
   * shards of those ranges, sharing the rest of the table with `previous`; undefined when the
   * change is not a replacement of the same shards (growth, a gap, an overlap, a range not in
   * `previous`): build the map whole then, which checks everything.
   */
  static patched(previous: ShardMap, change: { version: number; removed: readonly ShardRange[]; removedMasters?: ReadonlyArray<{ master: string; ranges: number }>; added: readonly ShardRange[]; moves: readonly MoveRecord[]; modShards?: ShardMapJson['modShards']; readOnly?: MapReadOnly }): ShardMap | undefined {
    const objects = previous.objects.patch(change.removed, change.added, change.removedMasters);
    if (objects === undefined) return undefined;
    const frozen = objects.frozenRanges();
    const mod = change.modShards === undefined ? previous.mod : modIndex(change.modShards);
    const modCount = change.modShards === undefined ? previous.modShardCount : change.modShards.count;
    return new ShardMap(change.version, objects, mod, modCount, change.moves.map(copyMove), frozen, change.readOnly);
  }

  /** Validates JSON (schema, overlaps, coverage and, when given, that every host is declared). */
  static fromJSON(input: unknown, options: { hosts?: Iterable<string> } = {}): ShardMap {
    const parsed = shardMapSchema.safeParse(input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      invalid(`${issue.path.join('.') || '(root)'}: ${issue.message}`);
    }
    return ShardMap.build(parsed.data as ShardMapJson, options.hosts);
  }

  /**
   * A map from parts already checked one by one against the schema (the record layout's decoded
   * records, map-records.ts): skips the schema pass over every range, which at 65,536 shards is
   * most of the cost, and still checks everything across parts (overlaps, gaps, moves, hosts).
   */
  static fromCheckedParts(json: ShardMapJson, options: { hosts?: Iterable<string> } = {}): ShardMap {
    return ShardMap.build(json, options.hosts);
  }

  toJSON(): ShardMapJson {
    const copy = (r: ShardRange): ShardRange => {
      const out: ShardRange = { range: [r.range[0], r.range[1]], master: r.master };
      if (r.slave !== undefined) out.slave = r.slave;
      if (r.open !== undefined) out.open = r.open;
      if (r.frozen !== undefined) out.frozen = copyFreeze(r.frozen);
      return out;
    };
    const json: ShardMapJson = {
      version: this.version,
      ranges: this.objects.ranges().map(copy),
      modShards: { count: this.modShardCount, ranges: this.mod.ranges.map(copy) },
    };
    // Absent rather than empty, so maps without moves keep their exact JSON form.
    if (this.moveList.length > 0) json.moves = this.moveList.map(copyMove);
    if (this.readOnly !== undefined) json.readOnly = { ...this.readOnly };
    return json;
  }

  /** Same ranges, another version (used by stores when they write). */
  withVersion(version: number): ShardMap {
    return new ShardMap(version, this.objects, this.mod, this.modShardCount, this.moveList, this.frozenRanges, this.readOnly);
  }

  get shardCount(): number {
    return this.objects.lastShard + 1;
  }

  get openShardCount(): number {
    return this.objects.openCount;
  }

  /** Object shard → hosts, or UNKNOWN_SHARD. O(1), nothing allocated: the location is shared by every shard with the same route (frozen: do not change it). */
  locate(shard: number): ShardLocation {
    const loc = Number.isInteger(shard) ? this.objects.location(shard) : undefined;
    if (!loc) throw new ShardKitError('UNKNOWN_SHARD', `shard ${shard} is not in the shard map (0..${this.objects.lastShard})`);
    return loc;
  }

  /** The freeze on `shard`'s range (whether or not its hold budget has run out); O(1), nothing allocated. */
  freezeOf(shard: number): RangeFreeze | undefined {
    return Number.isInteger(shard) ? this.objects.location(shard)?.frozen : undefined;
  }

  /** The object ranges under a freeze. */
  frozenObjectRanges(): readonly ShardRange[] {
    return this.frozenRanges;
  }

  /** The object ranges whose master is `master` (what its pair record holds), made on each call. */
  rangesOf(master: string): ShardRange[] {
    return this.objects.rangesOf(master);
  }

  /** How many object ranges the map has. */
  get objectRangeCount(): number {
    return this.objects.rangeCount;
  }

  /** The object range holding `shard` (undefined when outside the map), made on each call. */
  rangeOf(shard: number): ShardRange | undefined {
    return Number.isInteger(shard) ? this.objects.find(shard) : undefined;
  }

  /** Moves recorded in the map (in progress, or switched and not yet cleaned up). */
  moves(): readonly MoveRecord[] {
    return this.moveList;
  }

  /** The move with this id, or undefined. */
  move(id: string): MoveRecord | undefined {
    return this.moveList.find((m) => m.id === id);
  }

  /** Mod shard → hosts, or UNKNOWN_SHARD. */
  locateModShard(shard: number): ShardLocation {
    const r = Number.isInteger(shard) ? this.mod.find(shard) : undefined;
    if (!r) throw new ShardKitError('UNKNOWN_SHARD', `mod shard ${shard} is not in the shard map (0..${this.modShardCount - 1})`);
    return { master: r.master, ...(r.slave !== undefined ? { slave: r.slave } : {}), open: true };
  }

  /** Maps `random` in [0, 1) to an open shard, uniformly over all open shards (the k-th open shard in shard order). */
  pickOpenShard(random: number = Math.random()): number {
    const total = this.openShardCount;
    if (total === 0) throw new ShardKitError('SHARD_CLOSED', 'no shard range is open for new objects');
    return this.objects.openShard(Math.min(total - 1, Math.floor(random * total)));
  }

  /** The object ranges in shard order, made on each call (the map keeps them in typed arrays). */
  objectRanges(): readonly ShardRange[] {
    return this.objects.ranges();
  }

  modShardRanges(): readonly ShardRange[] {
    return this.mod.ranges;
  }

  /** Every host named by the map, masters and slaves, object and mod-shard fleets, and move targets. */
  hostNames(): string[] {
    const names = new Set<string>();
    const add = (p: HostPair) => {
      names.add(p.master);
      if (p.slave !== undefined) names.add(p.slave);
    };
    this.objects.addHostNames(names);
    for (const r of this.mod.ranges) add(r);
    for (const m of this.moveList) {
      add(m.source);
      add(m.target);
    }
    return [...names];
  }

  /** Object shards whose master is `host`. */
  shardsOnHost(host: string): number[] {
    const out: number[] = [];
    for (const r of this.objects.rangesOf(host)) for (let s = r.range[0]; s <= r.range[1]; s++) out.push(s);
    return out;
  }

  /** Mod shards whose master is `host`. */
  modShardsOnHost(host: string): number[] {
    const out: number[] = [];
    for (const r of this.mod.ranges) if (r.master === host) for (let s = r.range[0]; s <= r.range[1]; s++) out.push(s);
    return out;
  }
}

function modIndex(modShards: ShardMapJson['modShards']): RangeIndex {
  const index = new RangeIndex(modShards.ranges, 'mod-shard', modShards.count - 1);
  for (const r of modShards.ranges) if (r.open !== undefined) invalid('mod-shard ranges have no "open" flag: all mod shards exist from the start');
  for (const r of modShards.ranges) if (r.frozen !== undefined) invalid('mod-shard ranges cannot be frozen: only object shards move');
  return index;
}

function copyPair(p: HostPair): HostPair {
  return p.slave === undefined ? { master: p.master } : { master: p.master, slave: p.slave };
}

function copyFreeze(f: RangeFreeze): RangeFreeze {
  return { id: f.id, source: copyPair(f.source), target: copyPair(f.target), frozenAt: f.frozenAt, holdMs: f.holdMs };
}

function copyMove(m: MoveRecord): MoveRecord {
  const out: MoveRecord = {
    id: m.id, kind: m.kind, range: [m.range[0], m.range[1]], source: copyPair(m.source), target: copyPair(m.target),
    phase: m.phase, holdMs: m.holdMs, startedAt: m.startedAt, updatedAt: m.updatedAt,
  };
  if (m.detail !== undefined) out.detail = { ...m.detail };
  if (m.progress !== undefined) out.progress = { ...m.progress };
  return out;
}

/**
 * Moves and freezes must agree (`frozen`: the object ranges with a freeze): ids unique, no two unfinished moves overlap, a frozen range is
 * exactly the span of an unfinished move with its id, still on that move's source.
 */
function checkMoves(moves: readonly MoveRecord[], frozen: readonly ShardRange[]): void {
  const ids = new Set<string>();
  for (const m of moves) {
    if (ids.has(m.id)) invalid(`move ${m.id} is recorded twice`);
    ids.add(m.id);
    if (m.range[0] > m.range[1]) invalid(`move ${m.id} has a reversed range`);
    if (m.source.master === m.target.master) invalid(`move ${m.id} has the same source and target master`);
    if (m.target.slave !== undefined && m.target.slave === m.target.master) invalid(`move ${m.id} has the same target master and slave`);
  }
  const live = moves.filter((m) => m.phase !== 'switched').sort((a, b) => a.range[0] - b.range[0]);
  for (let i = 1; i < live.length; i++) {
    if (live[i]!.range[0] <= live[i - 1]!.range[1]) invalid(`moves ${live[i - 1]!.id} and ${live[i]!.id} overlap`);
  }
  for (const r of frozen) {
    if (r.frozen === undefined) continue;
    const m = moves.find((x) => x.id === r.frozen!.id);
    const where = `range [${r.range[0]}, ${r.range[1]}]`;
    if (m === undefined || m.phase === 'switched') invalid(`${where} is frozen by ${r.frozen.id}, which is not a move in progress`);
    if (m.range[0] !== r.range[0] || m.range[1] !== r.range[1]) invalid(`${where} is frozen by ${m.id}, which moves ${m.range[0]}..${m.range[1]}`);
    if (r.master !== m.source.master || r.frozen.source.master !== m.source.master) invalid(`${where} is frozen by ${m.id} but is not on its source ${m.source.master}`);
  }
}

/** Splits `count` shards evenly over host pairs named `${prefix}001A/B`, ... */
export function evenRanges(count: number, pairs: number, name: (pair: number, role: 'master' | 'slave') => string, open?: boolean): ShardRange[] {
  if (count % pairs !== 0) throw new ShardKitError('INVALID_CONFIG', `${count} shards do not split evenly over ${pairs} pairs`);
  const size = count / pairs;
  return Array.from({ length: pairs }, (_, i) => ({
    range: [i * size, (i + 1) * size - 1] as [number, number],
    master: name(i + 1, 'master'),
    slave: name(i + 1, 'slave'),
    ...(open === undefined ? {} : { open }),
  }));
}

const pad3 = (n: number) => String(n).padStart(3, '0');

/** The seed's default: 4096 object shards (all open) over MySQL001A/B..MySQL008A/B, 4096 mod shards over msdb001a/b..msdb008a/b. */
export function defaultShardMapJson(options: { shards?: number; pairs?: number; modShards?: number; modPairs?: number; hostNames?: DefaultHostNames } = {}): ShardMapJson {
  const shards = options.shards ?? 4096;
  const pairs = options.pairs ?? 8;
  const local = options.hostNames === 'local';
  return {
    version: 1,
    ranges: evenRanges(shards, pairs, (i, role) => (local ? `local${pad3(i)}${role === 'master' ? '' : '-standby'}` : `MySQL${pad3(i)}${role === 'master' ? 'A' : 'B'}`), true),
    modShards: {
      count: options.modShards ?? 4096,
      ranges: evenRanges(options.modShards ?? 4096, options.modPairs ?? pairs, (i, role) => (local ? `lookup${pad3(i)}${role === 'master' ? '' : '-standby'}` : `msdb${pad3(i)}${role === 'master' ? 'a' : 'b'}`)),
    },
  };
}

/**
 * Host names of a default map: the seed's (`MySQL001A`/`B`, `msdb001a`/`b`: the dev cluster's
 * MariaDB servers), or `local`: `local001`/`local001-standby`, `lookup001`/`lookup001-standby`,
 * honest names for the embedded SQLite default that `serve` writes into a new data directory.
 */
export type DefaultHostNames = 'mysql' | 'local';

