import { ShardKitError } from '../errors.js';
import { ShardMap, type MoveRecord, type ShardRange } from './shard-map.js';
import { assembleMap, recordsOfRange, type DecodedRecord, type MapRoot } from './map-records.js';

const inMapRecords: DecodedRecord[] = [];

/**
 * What a pair record of `count` ranges holds when the caller kept only the map (the etcd watcher):
 * its ranges are the map's, and the patch finds them under the record's new ranges (the count
 * tells it that it found them all). One shared object per count: nothing kept per pair.
 */
export function pairRangesInMap(count: number): DecodedRecord {
  return (inMapRecords[count] ??= Object.freeze({ kind: 'pair', ranges: Object.freeze([]) as unknown as ShardRange[], inMap: count }));
}

/**
 * The map after a change, made from the previous one and only the records that changed (`before`:
 * what each held before it): the changed pairs' old ranges out, their new ones in, nothing else
 * copied or checked again. Undefined when only a whole build can say (the mod fleet changed into
 * something the patch refuses, a count or move list that does not add up, any error): mapOf then
 * rebuilds and names the records at fault.
 */
export function patchedMap(previous: ShardMap, root: MapRoot, records: ReadonlyMap<string, { decoded: DecodedRecord }>, before: ReadonlyMap<string, DecodedRecord | undefined>): ShardMap | undefined {
  if (records.size !== root.records) return undefined;
  const removed: ShardRange[] = [];
  const removedMasters: Array<{ master: string; ranges: number }> = [];
  const added: ShardRange[] = [];
  let modShards: { count: number; ranges: ShardRange[] } | undefined;
  for (const [name, old] of before) {
    const now = records.get(name)?.decoded;
    if (old?.kind === 'pair' && old.inMap !== undefined) removedMasters.push({ master: name.slice('pair/'.length), ranges: old.inMap });
    else if (old?.kind === 'pair') for (const r of old.ranges) removed.push(r);
    if (now?.kind === 'pair') for (const r of now.ranges) added.push(r);
    if (name === 'mod') {
      if (now?.kind !== 'mod') return undefined;
      modShards = { count: now.count, ranges: now.ranges };
    }
  }
  const moves: MoveRecord[] = [];
  for (const id of root.moves ?? []) {
    const rec = records.get(`move/${id}`)?.decoded;
    if (rec?.kind !== 'move') return undefined;
    moves.push(rec.move);
  }
  // Every move record is named by the root: records = pairs + mod + moves, and the pairs did not change in number unless a pair record came or went.
  let moveRecords = previous.moves().length;
  for (const [name, old] of before) if (name.startsWith('move/')) moveRecords += (records.has(name) ? 1 : 0) - (old === undefined ? 0 : 1);
  if (moveRecords !== moves.length) return undefined;
  try {
    return ShardMap.patched(previous, {
      version: root.version, removed, removedMasters, added, moves,
      ...(modShards !== undefined ? { modShards } : {}),
      ...(root.readOnly !== undefined ? { readOnly: root.readOnly } : {}),
    });
  } catch (err) {
    if (err instanceof ShardKitError) return undefined;
    throw err;
  }
}

/**
 * The map of a root and all its records, built whole; an overlap or gap is INVALID_CONFIG naming
 * the records involved (`label` turns a record name into where it is kept: a key, a file).
 */
export function mapFromRecords(root: MapRoot, records: ReadonlyMap<string, { decoded: DecodedRecord }>, where: string, label: (name: string) => string): ShardMap {
  const decoded = new Map<string, DecodedRecord>();
  for (const [n, r] of records) decoded.set(n, r.decoded);
  const json = assembleMap(root, decoded, where);
  try {
    // Each record was schema-checked when it was decoded (and only changed ones are decoded).
    return ShardMap.fromCheckedParts(json);
  } catch (err) {
    if (!(err instanceof ShardKitError)) throw err;
    const lo = /range \[(\d+),/.exec(err.message);
    const names = lo === null ? [] : recordsOfRange(decoded, Number(lo[1]));
    const which = names.length > 0 ? ` (records ${names.map(label).join(', ')})` : '';
    throw new ShardKitError(err.code, `shard map in ${where}${which}: ${err.message}`, { cause: err });
  }
}
