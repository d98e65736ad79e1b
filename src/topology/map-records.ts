import { z } from 'zod';
import { ShardKitError } from '../errors.js';
import { moveRecordSchema, rangeSchema, type MoveRecord, type ShardMapJson, type ShardRange } from './shard-map.js';

/**
 * The record layout of the shard map (#30): a map split into records that change independently,
 * plus a small root. A one-shard move's switch rewrites the root, the two pairs' records and the
 * move's record; a service receives and parses only those (etcd store), not the whole map.
 *
 *   root               {"layout":2,"version":N,"gen":"…","records":K,"moves"?:[ids],"readOnly"?}
 *   pair/<master>      the object ranges whose master is <master>, compact tuples
 *   mod                the mod-shard fleet: {"count","ranges"}
 *   move/<id>          one move's record (its phase steps; progress is never here)
 *
 * `records` is how many records the root's generation holds, so a reader that finds fewer (a
 * writer died halfway through a rewrite) refuses instead of routing by part of a map.
 */
export const RECORD_LAYOUT = 2;

export interface MapRoot {
  layout: typeof RECORD_LAYOUT;
  version: number;
  /** Which generation of record keys is live: a large rewrite writes a new one, then flips the root. */
  gen: string;
  records: number;
  /** Ids of the moves recorded, in the map's order (their records carry the rest). */
  moves?: string[];
  readOnly?: { reason: string; since: number };
  /** File store only: each record's content hash, which names its file (records are never rewritten in place). */
  files?: Record<string, string>;
}

const rootSchema = z.object({
  layout: z.literal(RECORD_LAYOUT),
  version: z.number().int().min(0),
  gen: z.string().regex(/^[a-z0-9]{1,32}$/),
  records: z.number().int().min(1),
  moves: z.array(z.string()).optional(),
  readOnly: z.object({ reason: z.string().min(1).max(1000), since: z.number().int().min(0) }).strict().optional(),
  files: z.record(z.string(), z.string().regex(/^[0-9a-f]{16}$/)).optional(),
}).strict();

/** Whether a stored document is a layout-2 root (anything else is read as today's single document). */
export function isRecordRoot(json: unknown): boolean {
  return json !== null && typeof json === 'object' && (json as { layout?: unknown }).layout === RECORD_LAYOUT;
}

export function parseRoot(json: unknown, where: string): MapRoot {
  const parsed = rootSchema.safeParse(json);
  if (!parsed.success) throw badRecord(where, parsed.error.issues[0]!);
  return parsed.data as MapRoot;
}

/** A range as a tuple: [lo, hi, slave|0, open 1/0/-1 (absent), frozen?]. */
type RangeTuple = [number, number, string | 0, number, ...unknown[]];

function rangeTuple(r: ShardRange): RangeTuple {
  const t: RangeTuple = [r.range[0], r.range[1], r.slave ?? 0, r.open === undefined ? -1 : r.open ? 1 : 0];
  if (r.frozen !== undefined) t.push(r.frozen);
  return t;
}

function tupleRange(master: string, t: unknown[]): unknown {
  const [lo, hi, slave, open, frozen] = t;
  return {
    range: [lo, hi], master,
    ...(slave === 0 ? {} : { slave }),
    ...(open === -1 ? {} : { open: open === 1 ? true : open === 0 ? false : open }),
    ...(t.length > 4 ? { frozen } : {}),
  };
}

/** The root of `json` stored at `version` with `records` records of generation `gen`. */
export function makeRoot(json: ShardMapJson, version: number, gen: string, records: number): MapRoot {
  return {
    layout: RECORD_LAYOUT, version, gen, records,
    ...(json.moves !== undefined && json.moves.length > 0 ? { moves: json.moves.map((m) => m.id) } : {}),
    ...(json.readOnly !== undefined ? { readOnly: { ...json.readOnly } } : {}),
  };
}

/** The map's records by name, each as the text stored. */
export function encodeRecords(json: ShardMapJson): Map<string, string> {
  const out = new Map<string, string>();
  const byMaster = new Map<string, RangeTuple[]>();
  for (const r of json.ranges) {
    let list = byMaster.get(r.master);
    if (list === undefined) byMaster.set(r.master, (list = []));
    list.push(rangeTuple(r));
  }
  for (const [master, list] of byMaster) out.set(`pair/${master}`, JSON.stringify(list));
  out.set('mod', JSON.stringify({ count: json.modShards.count, ranges: json.modShards.ranges }));
  for (const m of json.moves ?? []) {
    const { progress: _p, ...rest } = m;
    out.set(`move/${m.id}`, JSON.stringify(rest));
  }
  return out;
}

/** One record's decoded content; decoded once per change of that record (watchers keep them). */
export type DecodedRecord = { kind: 'pair'; ranges: ShardRange[]; /** Set by a watcher that keeps no copy: how many ranges the pair has in its map (record-patch.ts). */ inMap?: number } | { kind: 'mod'; count: number; ranges: ShardRange[] } | { kind: 'move'; move: MoveRecord };

const pairSchema = z.array(z.array(z.unknown()).min(4).max(5));
const modSchema = z.object({ count: z.number().int().min(1).max(65536), ranges: z.array(rangeSchema).min(1) }).strict();

/** Parses and checks one record; anything wrong is INVALID_CONFIG naming it (`where`). */
export function decodeRecord(name: string, text: string, where: string): DecodedRecord {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ShardKitError('INVALID_CONFIG', `shard map record ${where} is not valid JSON: ${(err as Error).message}`);
  }
  if (name.startsWith('pair/')) {
    const master = name.slice('pair/'.length);
    const fast = plainPairRanges(master, json);
    if (fast !== undefined) return { kind: 'pair', ranges: fast };
    const tuples = pairSchema.safeParse(json);
    if (!tuples.success) throw badRecord(where, tuples.error.issues[0]!);
    const ranges: ShardRange[] = [];
    for (const t of tuples.data) {
      const r = rangeSchema.safeParse(tupleRange(master, t));
      if (!r.success) throw badRecord(where, r.error.issues[0]!);
      ranges.push(r.data as ShardRange);
    }
    return { kind: 'pair', ranges };
  }
  if (name === 'mod') {
    const m = modSchema.safeParse(json);
    if (!m.success) throw badRecord(where, m.error.issues[0]!);
    return { kind: 'mod', count: m.data.count, ranges: m.data.ranges as ShardRange[] };
  }
  if (name.startsWith('move/')) {
    const m = moveRecordSchema.safeParse(json);
    if (!m.success) throw badRecord(where, m.error.issues[0]!);
    if (m.data.id !== name.slice('move/'.length)) throw new ShardKitError('INVALID_CONFIG', `shard map record ${where} holds move ${m.data.id}`);
    return { kind: 'move', move: m.data as MoveRecord };
  }
  throw new ShardKitError('INVALID_CONFIG', `shard map record ${where}: not a record this version of shardkit knows (pair/, mod, move/)`);
}

const HOST_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/**
 * A pair record's ranges when every tuple is a plain one ([lo, hi, slave|0, -1|0|1], no freeze):
 * checked by hand, what rangeSchema would accept, several times faster than the schema (a watcher
 * decodes the changed pairs' records on every change, #30). Undefined for anything else: the
 * schema then decodes it, or names what is wrong.
 */
function plainPairRanges(master: string, json: unknown): ShardRange[] | undefined {
  if (!Array.isArray(json) || !HOST_NAME.test(master)) return undefined;
  const out: ShardRange[] = new Array(json.length);
  for (let i = 0; i < json.length; i++) {
    const t: unknown = json[i];
    if (!Array.isArray(t) || t.length !== 4) return undefined;
    const [lo, hi, slave, open] = t as unknown[];
    if (!(Number.isSafeInteger(lo) && (lo as number) >= 0 && Number.isSafeInteger(hi) && (hi as number) >= 0)) return undefined;
    if (slave !== 0 && !(typeof slave === 'string' && HOST_NAME.test(slave))) return undefined;
    if (open !== -1 && open !== 0 && open !== 1) return undefined;
    const r: ShardRange = { range: [lo as number, hi as number], master };
    if (slave !== 0) r.slave = slave as string;
    if (open !== -1) r.open = open === 1;
    out[i] = r;
  }
  return out;
}

/**
 * Assembles the map's JSON from its root and decoded records. Checks what no single record can:
 * the record count, one mod record. Overlaps and gaps are found by the ShardMap itself; the
 * store names the records involved (recordsOfRange).
 */
export function assembleMap(root: MapRoot, records: ReadonlyMap<string, DecodedRecord>, where: string): ShardMapJson {
  if (records.size !== root.records) {
    throw new ShardKitError('INVALID_CONFIG', `shard map in ${where}: the root (version ${root.version}) names ${root.records} records, ${records.size} are stored`);
  }
  const moves: MoveRecord[] = [];
  let mod: { count: number; ranges: ShardRange[] } | undefined;
  const ranges: ShardRange[] = [];
  for (const rec of records.values()) if (rec.kind === 'pair') for (const r of rec.ranges) ranges.push(r);
  for (const rec of records.values()) {
    if (rec.kind === 'move') moves.push(rec.move);
    else if (rec.kind === 'mod') mod = rec;
  }
  if (mod === undefined) throw new ShardKitError('INVALID_CONFIG', `shard map in ${where}: no mod record`);
  ranges.sort((a, b) => a.range[0] - b.range[0]);
  const order = new Map((root.moves ?? []).map((id, i) => [id, i]));
  for (const m of moves) if (!order.has(m.id)) throw new ShardKitError('INVALID_CONFIG', `shard map in ${where}: record move/${m.id} is not named by the root`);
  moves.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
  return {
    version: root.version, ranges, modShards: { count: mod.count, ranges: mod.ranges },
    ...(moves.length > 0 ? { moves } : {}),
    ...(root.readOnly !== undefined ? { readOnly: root.readOnly } : {}),
  };
}

/** The pair records holding a range that starts at `lo` (to name them in an overlap error). */
export function recordsOfRange(records: ReadonlyMap<string, DecodedRecord>, lo: number): string[] {
  const out: string[] = [];
  for (const [name, rec] of records) if (rec.kind === 'pair' && rec.ranges.some((r) => r.range[0] <= lo && lo <= r.range[1])) out.push(name);
  return out;
}

function badRecord(where: string, issue: z.ZodIssue): ShardKitError {
  return new ShardKitError('INVALID_CONFIG', `shard map record ${where}: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
}
