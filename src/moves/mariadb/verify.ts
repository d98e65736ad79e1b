import { ShardKitError } from '../../errors.js';
import type { ChunkMismatch } from '../move-engine.js';
import { hashRows, keyText } from '../move-shared.js';
import { CHUNK_ROWS, keySql, q, WC_PREFIX, type Conn } from './names.js';
import { columnsOf, compareByDigest } from './chunk-digest.js';

export async function primaryKey(c: Conn, db: string, table: string): Promise<string[]> {
  const [rows] = await c.query(
    "SELECT COLUMN_NAME AS c FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION",
    [db, table],
  );
  const keys = (rows as Array<{ c: string }>).map((r) => r.c);
  if (keys.length === 0) throw new ShardKitError('INTERNAL', `${db}.${table} has no primary key: cannot move it in chunks`);
  return keys;
}

/** Reads a table in primary-key order, CHUNK_ROWS at a time: `after` is the previous chunk's last key. */
export function chunkReader(c: Conn, db: string, table: string, keys: string[]) {
  const { k, tuple, qs } = keySql(keys);
  const t = `${q(db)}.${q(table)}`;
  const rows = async (sql: string, params: unknown[]): Promise<{ fields: string[]; rows: unknown[][] }> => {
    const [r, f] = await c.query({ sql, rowsAsArray: true }, params);
    return { fields: (f ?? []).map((x) => x.name), rows: r as unknown[][] };
  };
  return {
    next: (after: unknown[] | undefined) => rows(after === undefined ? `SELECT * FROM ${t} ORDER BY ${k} LIMIT ${CHUNK_ROWS}` : `SELECT * FROM ${t} WHERE ${tuple} > ${qs} ORDER BY ${k} LIMIT ${CHUNK_ROWS}`, after ?? []),
    upTo: (after: unknown[] | undefined, hi: unknown[]) => rows(after === undefined ? `SELECT * FROM ${t} WHERE ${tuple} <= ${qs} ORDER BY ${k}` : `SELECT * FROM ${t} WHERE ${tuple} > ${qs} AND ${tuple} <= ${qs} ORDER BY ${k}`, [...(after ?? []), ...hi]),
    rest: (after: unknown[] | undefined) => rows(after === undefined ? `SELECT * FROM ${t} ORDER BY ${k}` : `SELECT * FROM ${t} WHERE ${tuple} > ${qs} ORDER BY ${k}`, after ?? []),
  };
}

/** One table verify compares: `a` names it on the source (in `srcDb`), `b` on the target (in `dstDb`); one of them may be missing. */
export interface VerifyPair { shard: number; table: string; label: string; srcDb?: string; dstDb: string; a?: string; b?: string }

/** How verify names a table: the object fleet's by name (as before), a wide-column one with its database (`wc00003.events`). */
export function tableLabel(db: string, table: string): string {
  return db.startsWith(WC_PREFIX) ? `${db}.${table}` : table;
}

/**
 * Compares one table of a shard: the source's primary-key chunks, and for each the target's rows
 * in the same key interval (so rows on one side only are found too); target rows past the
 * source's last key are a chunk of their own.
 */
export async function compareTable(shard: number, table: string, a: { c: Conn; db: string } | undefined, b: { c: Conn; db: string } | undefined, sync?: () => Promise<void>, label = table, beforeRead?: () => Promise<void>, bAhead = false, after?: unknown[]): Promise<{ rows: number; chunks: number; mismatches: ChunkMismatch[]; last: unknown[] | undefined }> {
  // Both sides there, with the same columns: hashed by the servers (chunk-digest.ts); differing
  // columns are compared row by row.
  if (a !== undefined && b !== undefined) {
    const [keys, ca, cb] = await Promise.all([primaryKey(a.c, a.db, table), columnsOf(a.c, a.db, table), columnsOf(b.c, b.db, table)]);
    if (ca.length > 0 && ca.join('\0') === cb.join('\0')) {
      const ahead = bAhead ? (last: unknown[] | undefined) => aheadRows(chunkReader(a.c, a.db, table, keys), chunkReader(b.c, b.db, table, keys), last) : undefined;
      return compareByDigest(shard, table, label, keys, ca, a, b, after, { ...(sync !== undefined ? { sync } : {}), ...(beforeRead !== undefined ? { beforeRead } : {}), ...(ahead !== undefined ? { extra: ahead } : {}) });
    }
  }
  return compareRows(shard, table, a, b, sync, label, beforeRead, bAhead, after);
}

/**
 * A slave keeps applying after the position it was compared at: of its rows past the last chunk,
 * those the master holds too (read now, after the slave's) are newer writes, not differences.
 * Returns the rest.
 */
async function aheadRows(ra: ReturnType<typeof chunkReader>, rb: ReturnType<typeof chunkReader>, last: unknown[] | undefined): Promise<number> {
  const extra = (await rb.rest(last)).rows;
  if (extra.length === 0) return 0;
  const now = new Set((await ra.rest(last)).rows.map((r) => JSON.stringify(r)));
  return extra.filter((r) => !now.has(JSON.stringify(r))).length;
}

/** compareTable reading the rows of both sides into this process (a side missing, or differing columns). Exported for the tests' comparison of both ways. */
export async function compareRows(shard: number, table: string, a: { c: Conn; db: string } | undefined, b: { c: Conn; db: string } | undefined, sync?: () => Promise<void>, label = table, beforeRead?: () => Promise<void>, bAhead = false, after?: unknown[]): Promise<{ rows: number; chunks: number; mismatches: ChunkMismatch[]; last: unknown[] | undefined }> {
  const out = { rows: 0, chunks: 0, mismatches: [] as ChunkMismatch[], last: after };
  const keys = await primaryKey((a ?? b)!.c, (a ?? b)!.db, table);
  const ra = a === undefined ? undefined : chunkReader(a.c, a.db, table, keys);
  const rb = b === undefined ? undefined : chunkReader(b.c, b.db, table, keys);
  // `after`: only the keys past it are compared (the tail written since an earlier comparison).
  let last: unknown[] | undefined = after;
  if (ra === undefined) await sync?.();
  for (;;) {
    if (ra !== undefined) await beforeRead?.();
    const chunk = ra === undefined ? { fields: [], rows: [] as unknown[][] } : await ra.next(last);
    if (chunk.rows.length === 0) break;
    const idx = keys.map((k) => chunk.fields.indexOf(k));
    const hi = idx.map((i) => chunk.rows[chunk.rows.length - 1]![i]);
    const lo = idx.map((i) => chunk.rows[0]![i]);
    await sync?.();
    const other = rb === undefined ? [] : (await rb.upTo(last, hi)).rows;
    out.chunks++;
    out.rows += chunk.rows.length;
    if (hashRows(chunk.rows) !== hashRows(other)) {
      out.mismatches.push({ shard, table: label, fromKey: last === undefined ? '-inf' : keyText(lo), toKey: keyText(hi), sourceRows: chunk.rows.length, targetRows: other.length });
    }
    last = hi;
    out.last = hi;
  }
  if (ra !== undefined) await sync?.();
  const extra = rb === undefined ? 0 : ra !== undefined && bAhead ? await aheadRows(ra, rb, last) : (await rb.rest(last)).rows.length;
  if (extra > 0) {
    out.chunks++;
    out.mismatches.push({ shard, table: label, fromKey: last === undefined ? '-inf' : keyText(last), toKey: '+inf', sourceRows: 0, targetRows: extra });
  }
  return out;
}

/** Tables named in one counting or checksum statement: its size must not grow with the move (512 shards per pair in the seed's layout). */
export const STATEMENT_TABLES = 100;

export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
