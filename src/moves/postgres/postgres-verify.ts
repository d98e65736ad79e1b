import pg from 'pg';
import { ShardKitError } from '../../errors.js';
import type { ChunkMismatch } from '../move-engine.js';
import { keyText } from '../move-shared.js';

/** Rows per primary-key chunk when a table's totals differ and verify looks for where. */
export const CHUNK_ROWS = 1000;

/** One side of a comparison: a connection and a schema-qualified, quoted table name. */
export interface TableSide {
  c: pg.Client;
  table: string;
}

export interface Aggregate {
  rows: number;
  hash: string;
}

const qi = (s: string): string => pg.escapeIdentifier(s);

/**
 * The hash aggregate of a set of rows: their count and the sum of a 64-bit hash of each row's
 * text (order-independent, so no sort and no big string; bigint, text and bytea print the same on
 * every server with default settings). sum(bigint) is exact (a numeric result, added in 128-bit
 * integers), as the backups' sums are: a cast of each hash to numeric first gave the same sum
 * for ~10% more of the read (1M rows by hand: 1.57-1.78 s against 1.46-1.49 s).
 */
export const AGGREGATE = "count(*)::text AS n, coalesce(sum(hashtextextended(x::text, 0)), 0)::text AS h";

async function primaryKey(c: pg.Client, table: string): Promise<string[]> {
  const { rows } = await c.query<{ col: string }>(
    `SELECT a.attname AS col FROM pg_index i JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON true
     JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
     WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY k.ord`, [table]);
  if (rows.length === 0) throw new ShardKitError('INTERNAL', `${table} has no primary key: cannot verify it in chunks`);
  return rows.map((r) => r.col);
}

/** ` WHERE` clause (or '') and parameters for keys in (after, hi], either bound open when undefined. */
function keyRange(keys: string[], after: string[] | undefined, hi: string[] | undefined): { where: string; params: string[] } {
  const tuple = `(${keys.map(qi).join(', ')})`;
  const params: string[] = [];
  const bound = (vals: string[]) => `(${vals.map((v) => { params.push(v); return `$${params.length}`; }).join(', ')})`;
  const where: string[] = [];
  if (after !== undefined) where.push(`${tuple} > ${bound(after)}`);
  if (hi !== undefined) where.push(`${tuple} <= ${bound(hi)}`);
  return { where: where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '', params };
}

/** Rows of `side` with key in (after, hi] (either bound open when undefined). */
async function aggregate(side: TableSide | undefined, keys: string[], after: string[] | undefined, hi: string[] | undefined): Promise<Aggregate> {
  if (side === undefined) return { rows: 0, hash: '0' };
  const { where, params } = keyRange(keys, after, hi);
  const { rows: [r] } = await side.c.query<{ n: string; h: string }>(`SELECT ${AGGREGATE} FROM ${side.table} x${where}`, params);
  return { rows: Number(r!.n), hash: r!.h };
}

/** The key of the CHUNK_ROWS-th row after `after` on `side`, or undefined when fewer rows remain. */
async function chunkEnd(side: TableSide, keys: string[], after: string[] | undefined): Promise<string[] | undefined> {
  const tuple = `(${keys.map((k) => `x.${qi(k)}`).join(', ')})`;
  // Aliases that are not the columns' names: ORDER BY a text alias named like the column would
  // sort the keys as text ('10' before '9'), and the chunks would not be CHUNK_ROWS rows.
  const cols = keys.map((k, i) => `x.${qi(k)}::text AS k${i}`).join(', ');
  const { rows } = await side.c.query<Record<string, string>>(
    `SELECT ${cols} FROM ${side.table} x${after !== undefined ? ` WHERE ${tuple} > (${after.map((_, i) => `$${i + 1}`).join(', ')})` : ''} ORDER BY ${keys.map((k) => `x.${qi(k)}`).join(', ')} OFFSET ${CHUNK_ROWS - 1} LIMIT 1`,
    after ?? []);
  return rows.length === 0 ? undefined : keys.map((_, i) => rows[0]![`k${i}`]!);
}

/** Per-row hashes of the rows in (after, hi], keyed by the key's text. */
async function rowHashes(side: TableSide | undefined, keys: string[], after: string[] | undefined, hi: string[] | undefined): Promise<Map<string, { key: string[]; hash: string }>> {
  const out = new Map<string, { key: string[]; hash: string }>();
  if (side === undefined) return out;
  const { where, params } = keyRange(keys, after, hi);
  const cols = keys.map((k, i) => `${qi(k)}::text AS k${i}`).join(', ');
  const { rows } = await side.c.query<Record<string, string>>(`SELECT ${cols}, hashtextextended(x::text, 0)::text AS h FROM ${side.table} x${where} ORDER BY ${keys.map(qi).join(', ')}`, params);
  for (const r of rows) {
    const key = keys.map((_, i) => r[`k${i}`]!);
    out.set(JSON.stringify(key), { key, hash: r.h! });
  }
  return out;
}

/** The first and last of some primary keys, compared as integers when they all are (every table the schema makes). */
function firstAndLast(keys: string[][]): [string[], string[]] {
  const cmp = (x: string[], y: string[]): number => {
    for (let i = 0; i < x.length; i++) {
      const d = BigInt(x[i]!) - BigInt(y[i]!);
      if (d !== 0n) return d < 0n ? -1 : 1;
    }
    return 0;
  };
  const numeric = keys.every((k) => k.every((v) => /^-?[0-9]+$/.test(v)));
  const sorted = [...keys].sort(numeric ? cmp : (x, y) => (JSON.stringify(x) < JSON.stringify(y) ? -1 : 1));
  return [sorted[0]!, sorted[sorted.length - 1]!];
}

/**
 * The first and last key that differ between two chunks (a row changed, or on one side only).
 * The other side's rows are read after `sync`, at the first side's position.
 */
async function differingKeys(a: TableSide | undefined, b: TableSide | undefined, keys: string[], after: string[] | undefined, hi: string[] | undefined, sync?: () => Promise<void>): Promise<[string[], string[]] | undefined> {
  const ra = await rowHashes(a, keys, after, hi);
  await sync?.();
  const rb = await rowHashes(b, keys, after, hi);
  const diff: string[][] = [];
  for (const [k, v] of ra) if (rb.get(k)?.hash !== v.hash) diff.push(v.key);
  for (const [k, v] of rb) if (!ra.has(k)) diff.push(v.key);
  return diff.length === 0 ? undefined : firstAndLast(diff);
}

/**
 * While the source is still written and the target applies its changes, no single point shows
 * both sides alike: the target may be caught between two writes of a row that the source's
 * reads on either side of it do not see (a pin added and removed again), so one differing read
 * proves nothing (a CI run aborted a move on such a read: "484 vs 485 rows"). A row is taken as
 * differing only when it does so in `rounds` reads in a row, each with the source's row the same
 * before and after the target's read and the target's row the same in every round. (A row
 * flipped back and forth around every one of those reads could still pass: the move then aborts,
 * safely, and is run again.) The keys that did, or undefined when none did (what is left is
 * compared exactly, under the freeze).
 */
async function persistentDifference(a: TableSide | undefined, b: TableSide | undefined, keys: string[], after: string[] | undefined, hi: string[] | undefined, sync: (() => Promise<void>) | undefined, rounds: number): Promise<[string[], string[]] | undefined> {
  let kept: Map<string, { key: string[]; target: string | undefined }> | undefined;
  for (let round = 0; round < rounds; round++) {
    const before = await rowHashes(a, keys, after, hi);
    await sync?.();
    const target = await rowHashes(b, keys, after, hi);
    const now = await rowHashes(a, keys, after, hi);
    const found = new Map<string, { key: string[]; target: string | undefined }>();
    for (const k of new Set([...before.keys(), ...target.keys()])) {
      const source = before.get(k)?.hash;
      if (source !== now.get(k)?.hash) continue; // written meanwhile: no verdict on this read
      const t = target.get(k)?.hash;
      if (t === source) continue;
      if (kept !== undefined && (!kept.has(k) || kept.get(k)!.target !== t)) continue;
      found.set(k, { key: (before.get(k) ?? target.get(k))!.key, target: t });
    }
    if (found.size === 0) return undefined;
    kept = found;
  }
  return firstAndLast([...kept!.values()].map((v) => v.key));
}

/**
 * A standby replays on after the position it was compared at, so a chunk the master writes to
 * (the hot end of a table) may never compare equal at one point. It is consistent when each of
 * its rows is as the master had it before or after the standby's read: read the master, wait
 * for the standby, read it, read the master again; every row the standby or the first read
 * holds must equal (or be absent like) the master's row in one of the two reads.
 */
async function replicaBetween(a: TableSide | undefined, b: TableSide | undefined, keys: string[], after: string[] | undefined, hi: string[] | undefined, sync?: () => Promise<void>): Promise<boolean> {
  const before = await rowHashes(a, keys, after, hi);
  await sync?.();
  const standby = await rowHashes(b, keys, after, hi);
  const now = await rowHashes(a, keys, after, hi);
  for (const k of new Set([...before.keys(), ...standby.keys()])) {
    const h = standby.get(k)?.hash;
    if (h !== before.get(k)?.hash && h !== now.get(k)?.hash) return false;
  }
  return true;
}

const same = (a: Aggregate, b: Aggregate): boolean => a.rows === b.rows && a.hash === b.hash;

/**
 * The replica's read and the source's second read of a settle round, at once rather than one
 * after the other (a third less time a round: each reads whole tables). The source's read must
 * come after the replica's point, so that the two source reads bracket it: the replica's read
 * runs in a repeatable-read transaction whose snapshot is taken (its first statement) before the
 * source's read is sent.
 */
export async function replicaThenSource<T>(b: pg.Client, a: pg.Client, readB: () => Promise<T>, readA: () => Promise<T>): Promise<[T, T]> {
  await b.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  try {
    await b.query('SELECT 1');
    const both = await Promise.all([readB(), readA()]);
    await b.query('COMMIT');
    return both;
  } catch (err) {
    await b.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/**
 * The hash aggregate of whole tables, all in one statement (one round trip for a shard: verify
 * runs while services hold writes).
 */
export async function tableAggregates(c: pg.Client, tables: Array<{ name: string; table: string }>): Promise<Map<string, Aggregate>> {
  const out = new Map<string, Aggregate>();
  if (tables.length === 0) return out;
  const sql = tables.map((t, i) => `SELECT ${i} AS i, ${AGGREGATE} FROM ${t.table} x`).join(' UNION ALL ');
  const { rows } = await c.query<{ i: number; n: string; h: string }>(sql);
  for (const r of rows) out.set(tables[r.i]!.name, { rows: Number(r.n), hash: r.h });
  return out;
}

export const sameAggregate = (a: Aggregate | undefined, b: Aggregate | undefined): boolean =>
  same(a ?? { rows: 0, hash: '0' }, b ?? { rows: 0, hash: '0' });

/**
 * Compares one table of a shard between `a` (the source, or a master) and `b` (the target, or a
 * standby), in primary-key chunks of `a` (CHUNK_ROWS rows, the last one open-ended so rows only on
 * `b` are found too), each with the hash aggregate. Each chunk is compared at a consistent
 * point: `a`'s chunk is read, then `sync` (when given) waits until `b` has applied everything `a`
 * had when its chunk was read (a move's marker, a standby's replay LSN), and only then is `b`'s
 * chunk read. A differing chunk is compared once more the same way (a write between the two
 * reads can make a live chunk differ once), and if it still differs, row by row: the report
 * names the first and last key that differ. A `sync` that cannot get there throws: a copy that
 * lags is an error, never a silent comparison with stale rows. With `confirm` (the source still
 * written), a chunk is a mismatch only when persistentDifference holds over that many reads;
 * otherwise it counts as `unconfirmed`, for the caller to compare again where writes are held.
 */
export async function compareChunks(shard: number, table: string, a: TableSide | undefined, b: TableSide | undefined, sync?: () => Promise<void>, options: { replica?: boolean; confirm?: number } = {}): Promise<{ rows: number; chunks: number; mismatches: ChunkMismatch[]; unconfirmed: number }> {
  const keys = await primaryKey((a ?? b)!.c, (a ?? b)!.table);
  const out = { rows: 0, chunks: 0, mismatches: [] as ChunkMismatch[], unconfirmed: 0 };
  const atOnePoint = async (after: string[] | undefined, hi: string[] | undefined): Promise<[Aggregate, Aggregate]> => {
    const ca = await aggregate(a, keys, after, hi);
    await sync?.();
    return [ca, await aggregate(b, keys, after, hi)];
  };
  let after: string[] | undefined;
  for (;;) {
    const hi = a === undefined ? undefined : await chunkEnd(a, keys, after);
    let [ca, cb] = await atOnePoint(after, hi);
    if (!same(ca, cb)) [ca, cb] = await atOnePoint(after, hi);
    if (!same(ca, cb) && options.replica && (await replicaBetween(a, b, keys, after, hi, sync))) cb = ca;
    out.chunks++;
    out.rows += ca.rows;
    if (!same(ca, cb) && options.confirm !== undefined) {
      const held = await persistentDifference(a, b, keys, after, hi, sync, options.confirm);
      if (held === undefined) out.unconfirmed++;
      else out.mismatches.push({ shard, table, fromKey: keyText(held[0]), toKey: keyText(held[1]), sourceRows: ca.rows, targetRows: cb.rows });
    } else if (!same(ca, cb)) {
      // Name the rows: the first and last key that differ inside the chunk.
      const keysDiffer = await differingKeys(a, b, keys, after, hi, sync);
      out.mismatches.push({
        shard, table,
        fromKey: keysDiffer !== undefined ? keyText(keysDiffer[0]) : after === undefined ? '-inf' : keyText(after),
        toKey: keysDiffer !== undefined ? keyText(keysDiffer[1]) : hi === undefined ? '+inf' : keyText(hi),
        sourceRows: ca.rows, targetRows: cb.rows,
      });
    }
    if (hi === undefined) break;
    after = hi;
  }
  return out;
}

/** A table of both sides for settleTables: its name in the report, and its qualified name on each side (undefined: missing there). */
export interface TablePair {
  name: string;
  a?: string;
  b?: string;
}

export interface SettleResult {
  /** Equal at a consistent point: the aggregate both sides had then. */
  equal: Map<string, Aggregate>;
  /** The source held still across the comparison and the target differed: a real difference, to be named chunk by chunk. */
  differ: string[];
  /** Written throughout every round: never compared at a consistent point. */
  unsettled: string[];
}

/**
 * Compares whole tables between `a` (the source, written on) and `b` (its replica), while both
 * still change. One round: `a`'s aggregates (one statement, one snapshot), then `sync` (the
 * replica has applied at least that much), then `b`'s, then `a`'s again (the last two at once:
 * replicaThenSource). A table whose `a`
 * aggregates are the same before and after did not change in between, so `b` (at some point in
 * between) must hold the same rows: equal, or a real difference. A table written in between
 * takes part in the next round, up to `rounds`; each round is shorter, as fewer tables remain.
 * The rounds stop when one settles nothing, as settleChunks' do: the tables left are written
 * throughout, and another round would read them whole again for nothing (1M rows in 32 tables,
 * one writer on each: six rounds read 6 GB and took 24 s of a 50 s move; the chunk settle that
 * follows takes such tables on). Tables named in `written` (written lately: table-writes.ts) are
 * not read whole at all but left unsettled at once: the first round would read them three times
 * to find them written again (8 of a 33 s move of 1M rows, every table under a writer).
 */
export async function settleTables(a: pg.Client, b: pg.Client, tables: TablePair[], sync: () => Promise<void>, rounds: number, onSettled?: (done: number, total: number) => void, written: ReadonlySet<string> = new Set()): Promise<SettleResult> {
  const out: SettleResult = { equal: new Map(), differ: [], unsettled: [] };
  const read = (c: pg.Client, side: 'a' | 'b', of: TablePair[]) => tableAggregates(c, of.flatMap((t) => (t[side] === undefined ? [] : [{ name: t.name, table: t[side]! }])));
  const skipped = tables.filter((t) => written.has(t.name));
  let pending = tables.filter((t) => !written.has(t.name));
  for (let round = 0; round < rounds && pending.length > 0; round++) {
    const before = await read(a, 'a', pending);
    await sync();
    const [replica, after] = await replicaThenSource(b, a, () => read(b, 'b', pending), () => read(a, 'a', pending));
    const next: TablePair[] = [];
    for (const t of pending) {
      if (!sameAggregate(before.get(t.name), after.get(t.name))) next.push(t);
      else if (sameAggregate(before.get(t.name), replica.get(t.name))) out.equal.set(t.name, before.get(t.name) ?? { rows: 0, hash: '0' });
      else out.differ.push(t.name);
    }
    const settled = pending.length - next.length;
    pending = next;
    // Tables settled (equal or differing at a consistent point) so far, of all: the rest go round again.
    onSettled?.(tables.length - skipped.length - pending.length, tables.length);
    if (settled === 0) break;
  }
  out.unsettled = [...skipped, ...pending].map((t) => t.name);
  return out;
}
