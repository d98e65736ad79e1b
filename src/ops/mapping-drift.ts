import { isShardKitError, ShardKitError } from '../errors.js';
import { pinterestId } from '../ids/pinterest-id.js';
import { MAX_PAIRS_PER_CALL, type MappingDef, type MappingRow, type ShardRef } from '../storage/shard-backend.js';
import type { ShardKit } from '../kit/shard-kit.js';
import type { ShardMap } from '../topology/shard-map.js';

export interface DriftOptions {
  /** The mapping taken as the truth (`board_has_pins`). */
  mapping: string;
  /** Its reverse (`pin_owned_by_board`): from the mapping's `to` type to its `from` type. */
  reverse: string;
  /**
   * Make `reverse` agree with `mapping`: add the reverse pairs it lacks (with the mapping's
   * sequence) and remove the ones whose mapping pair is gone. Never writes to `mapping`.
   */
  repair?: boolean;
  /** Rows per scan page (default 500). */
  pageSize?: number;
  /** Pairs kept as examples of each kind in the report (default 20). */
  examples?: number;
  /** After each shard of each side. */
  onProgress?: (p: DriftProgress) => void;
}

export interface DriftProgress {
  /** Shards done over both passes (each shard is scanned once per side). */
  done: number;
  total: number;
  side: 'mapping' | 'reverse';
  missing: number;
  orphans: number;
}

export interface DriftPair {
  from: string;
  to: string;
}

export interface DriftReport {
  mapping: string;
  reverse: string;
  shards: number;
  /** Rows read from each side. */
  scanned: { mapping: number; reverse: number };
  /** Pairs of `mapping` (a → b) whose reverse (b → a) is absent. */
  missing: number;
  /** Pairs of `reverse` (b → a) whose mapping pair (a → b) is absent. */
  orphans: number;
  /**
   * Rows stored on a shard their from ID does not name (written by hand or by another tool): the
   * API never reads them there, and no repair can make them agree, so they are counted here, left
   * out of `missing` / `orphans`, and never repaired: move or delete them by hand.
   */
  misplaced: { mapping: number; reverse: number };
  /** With `repair`: reverse pairs added and removed; pairs that could not be (an ID that names no shard of the map). */
  repaired?: { added: number; removed: number; skipped: number };
  examples: { missing: DriftPair[]; orphans: DriftPair[]; misplaced: Array<DriftPair & { table: string; shard: number }> };
  elapsedMs: number;
}

/**
 * Finds (and with `repair`, mends) drift between a mapping and its reverse (SPEC §3: the two are
 * written separately, so a failed second write leaves one without the other). Every object shard
 * of the map is scanned on both sides, a page at a time in primary-key order; each page's pairs
 * are checked on the other side's shards with one getMappings call per shard. Memory stays at one
 * page whatever the table sizes. Writes made while it runs can show as drift that a second run no
 * longer finds; repairs use the same calls as the API (mappings.add / remove), so caches are
 * invalidated as for any write.
 */
export async function checkMappingDrift(kit: ShardKit, options: DriftOptions): Promise<DriftReport> {
  const started = Date.now();
  const mapping = mappingDef(kit, options.mapping, 'mapping');
  const reverse = mappingDef(kit, options.reverse, 'reverse');
  if (mapping.from !== reverse.to || mapping.to !== reverse.from) {
    throw new ShardKitError('INVALID_ARGUMENT', `${reverse.name} (${reverse.from} → ${reverse.to}) is not the reverse of ${mapping.name} (${mapping.from} → ${mapping.to})`);
  }
  if (options.repair && mapping.name === reverse.name) {
    // Adding the missing half of each one-sided pair is a union repair: it would bring back the
    // half of every pair whose removal half-failed (and make every one-way follow mutual).
    throw new ShardKitError('INVALID_ARGUMENT', `${mapping.name} checked against itself can be reported, not repaired: no side of it is the truth`);
  }
  const pageSize = options.pageSize ?? 500;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAIRS_PER_CALL) throw new ShardKitError('INVALID_ARGUMENT', `pageSize must be an integer in 1..${MAX_PAIRS_PER_CALL}`);
  const keep = options.examples ?? 20;
  const map = await kit.shardMap();
  const shards = map.objectRanges().flatMap((r) => Array.from({ length: r.range[1] - r.range[0] + 1 }, (_, i) => r.range[0] + i));
  const report: DriftReport = {
    mapping: mapping.name, reverse: reverse.name, shards: shards.length, scanned: { mapping: 0, reverse: 0 }, missing: 0, orphans: 0, misplaced: { mapping: 0, reverse: 0 },
    ...(options.repair ? { repaired: { added: 0, removed: 0, skipped: 0 } } : {}), examples: { missing: [], orphans: [], misplaced: [] }, elapsedMs: 0,
  };
  let done = 0;
  const progress = (side: 'mapping' | 'reverse') => options.onProgress?.({ done: ++done, total: shards.length * 2, side, missing: report.missing, orphans: report.orphans });

  const example = (list: DriftPair[], row: MappingRow) => {
    if (list.length < keep) list.push({ from: row.fromId.toString(), to: row.toId.toString() });
  };
  const misplaced = (side: 'mapping' | 'reverse', table: string) => (row: MappingRow, shard: number) => {
    report.misplaced[side]++;
    if (report.examples.misplaced.length < keep) report.examples.misplaced.push({ table, shard, from: row.fromId.toString(), to: row.toId.toString() });
  };
  // Pass 1: every a → b of the mapping must have b → a in the reverse.
  report.scanned.mapping = await unmatched(kit, map, shards, mapping.table, reverse.table, pageSize, misplaced('mapping', mapping.table), async (row, resolvable) => {
    report.missing++;
    example(report.examples.missing, row);
    if (!options.repair) return;
    if (!resolvable) {
      report.repaired!.skipped++;
      return;
    }
    // Read both halves again just before writing: a pair written or removed since the scan is left alone.
    const [forward, back] = await Promise.all([exists(kit, map, mapping.table, row.fromId, row.toId), exists(kit, map, reverse.table, row.toId, row.fromId)]);
    if (!forward || back) return;
    if (await repairable(() => kit.mappings.add(reverse.name, row.toId, row.fromId, { sequence: row.sequence }))) report.repaired!.added++;
    else report.repaired!.skipped++;
  }, () => progress('mapping'));
  // Pass 2: every b → a of the reverse must have a → b in the mapping (after pass 1's repairs).
  report.scanned.reverse = await unmatched(kit, map, shards, reverse.table, mapping.table, pageSize, misplaced('reverse', reverse.table), async (row) => {
    report.orphans++;
    example(report.examples.orphans, row);
    if (!options.repair) return;
    // Read the mapping again just before removing: a pair written since the scan keeps its reverse.
    if (await exists(kit, map, mapping.table, row.toId, row.fromId)) return;
    // Through the API (cache invalidation included): the row is on its from ID's shard (misplaced
    // rows never get here), where the API finds it.
    let removed = false;
    // Gone meanwhile (a concurrent removal): nothing to count.
    if (!(await repairable(async () => (removed = await kit.mappings.remove(reverse.name, row.fromId, row.toId))))) report.repaired!.skipped++;
    else if (removed) report.repaired!.removed++;
  }, () => progress('reverse'));
  report.elapsedMs = Date.now() - started;
  return report;
}

/**
 * Walks every row of `table` over `shards` and calls `each` for those whose reverse pair is absent
 * from `otherTable` (`resolvable` false when the pair's IDs name no shard of the map); `shardDone`
 * after each shard. Returns the rows read.
 */
async function unmatched(
  kit: ShardKit, map: ShardMap, shards: number[], table: string, otherTable: string, pageSize: number,
  misplaced: (row: MappingRow, shard: number) => void,
  each: (row: MappingRow, resolvable: boolean) => Promise<void>, shardDone: () => void,
): Promise<number> {
  let rows = 0;
  for (const shard of shards) {
    for await (const page of scan(kit, map, shard, table, pageSize)) {
      rows += page.length;
      const placed = page.filter((row) => {
        if (shardOf(row.fromId) === shard) return true;
        misplaced(row, shard);
        return false;
      });
      const found = await lookUp(kit, map, otherTable, placed.map((r) => ({ fromId: r.toId, toId: r.fromId })));
      for (const [i, row] of placed.entries()) if (found[i] === undefined || found[i] === null) await each(row, found[i] !== null);
    }
    shardDone();
  }
  return rows;
}

/** The shard a Pinterest ID names, or undefined for an ID that is not one. */
function shardOf(id: bigint): number | undefined {
  try {
    return pinterestId.decode(id).shard;
  } catch {
    return undefined;
  }
}

/** Runs a repair write; false when its IDs are not valid for the mapping (such a pair is skipped). */
async function repairable(write: () => Promise<unknown>): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (err) {
    if (isShardKitError(err) && ['INVALID_ID', 'INVALID_ARGUMENT', 'UNKNOWN_TYPE', 'UNKNOWN_SHARD'].includes(err.code)) return false;
    throw err;
  }
}

function mappingDef(kit: ShardKit, name: unknown, what: string): MappingDef {
  const def = kit.schema.mappings.find((m) => m.name === name);
  if (def === undefined) throw new ShardKitError('UNKNOWN_MAPPING', `${what}: no mapping ${JSON.stringify(name)} in the schema (${kit.schema.mappings.map((m) => m.name).join(', ')})`);
  return def;
}

function objectRef(map: ShardMap, shard: number): ShardRef {
  return { host: map.locate(shard).master, shard, fleet: 'objects' };
}

/** The pages of one shard's table in primary-key order. */
async function* scan(kit: ShardKit, map: ShardMap, shard: number, table: string, limit: number): AsyncGenerator<MappingRow[]> {
  const ref = objectRef(map, shard);
  let after: { fromId: bigint; toId: bigint } | undefined;
  for (;;) {
    const page = await kit.backend.scanMappings(ref, table, { limit, ...(after ? { after } : {}) });
    if (page.length > 0) yield page;
    if (page.length < limit) return;
    const last = page[page.length - 1]!;
    after = { fromId: last.fromId, toId: last.toId };
  }
}

/**
 * The sequence of each pair on the shard of its `fromId` (one getMappings call per shard), or
 * undefined where absent; null where `fromId` names no shard of the map (a stored ID that is not a
 * Pinterest ID of this map cannot have its pair anywhere, and cannot be repaired).
 */
async function lookUp(kit: ShardKit, map: ShardMap, table: string, pairs: Array<{ fromId: bigint; toId: bigint }>): Promise<(number | undefined | null)[]> {
  const out: (number | undefined | null)[] = new Array(pairs.length).fill(undefined);
  const byShard = new Map<number, number[]>();
  pairs.forEach((p, i) => {
    const shard = shardOf(p.fromId);
    if (shard === undefined || map.objectRanges().every((r) => shard < r.range[0] || shard > r.range[1])) {
      out[i] = null;
      return;
    }
    const list = byShard.get(shard);
    if (list) list.push(i);
    else byShard.set(shard, [i]);
  });
  // The shards of one page in parallel (the hosts' pools bound how many run at once).
  await Promise.all([...byShard].map(async ([shard, idx]) => {
    const found = await kit.backend.getMappings(objectRef(map, shard), table, idx.map((i) => pairs[i]!));
    idx.forEach((i, k) => (out[i] = found[k]));
  }));
  return out;
}

/** Whether one pair is in `table` now (on its from ID's shard). */
async function exists(kit: ShardKit, map: ShardMap, table: string, fromId: bigint, toId: bigint): Promise<boolean> {
  const [found] = await lookUp(kit, map, table, [{ fromId, toId }]);
  return found !== undefined && found !== null;
}
