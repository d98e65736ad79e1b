import type { ChunkMismatch } from '../move-engine.js';
import { keyText } from '../move-shared.js';
import { CHUNK_ROWS, keySql, q, type Conn } from './names.js';

/** The columns of `db.table` in order (both sides must have the same, else the caller compares rows). */
export async function columnsOf(c: Conn, db: string, table: string): Promise<string[]> {
  const [rows] = await c.query('SELECT COLUMN_NAME AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION', [db, table]);
  return (rows as Array<{ c: string }>).map((r) => r.c);
}

/**
 * A row's digest, computed by the server: SHA1 over every column's bytes with its length and a NULL
 * flag (so `'a#b','c'` and `'a','b#c'` differ, and NULL differs from ''), its first 64 bits. A
 * chunk's digest is the count of its rows and the XOR of theirs, as pt-table-checksum does: two
 * numbers cross the wire per 1,000 rows. (A cryptographic hash: the XOR of a linear one such as
 * CRC32 does not change when two rows of one length swap the same bytes. SHA1 rather than MD5:
 * 2-3 us a row here against 4-6.)
 */
function rowDigest(columns: readonly string[]): string {
  // As bytes: columns of different collations cannot meet in one CONCAT otherwise.
  const parts = columns.flatMap((col) => [`ISNULL(${q(col)})`, `LENGTH(${q(col)})`, `CAST(${q(col)} AS BINARY)`]);
  return `CAST(CONV(LEFT(SHA1(CONCAT_WS('#', ${parts.join(', ')})), 16), 16, 10) AS UNSIGNED)`;
}

export interface DigestSide {
  c: Conn;
  db: string;
}

interface Chunk {
  n: number;
  d: string;
  /** The chunk's first key (one-column keys: it comes with the digest) and last key (the source's chunks only). */
  lo?: unknown[];
  hi?: unknown[];
}

/**
 * compareTable with the rows hashed where they are (#29: reading 1M rows of each side into the
 * mover and hashing them there took 19-27 s of a move, the mover's CPU the limit). The chunks are
 * the same as the row comparison's: the source's next CHUNK_ROWS keys, `(last, hi]`, and the
 * target's rows in that interval; then the target's rows past the source's last key. The report is
 * the row comparison's, key for key. With a one-column key the source digests its next chunk and
 * finds its bounds in one statement, while the target digests the chunk before (one after the
 * other when `sync` must run between them).
 */
export interface DigestOptions {
  /** Run before each read of the target (a slave: wait until it applied what the master had). */
  sync?: () => Promise<void>;
  /** Run before each read of the source. */
  beforeRead?: () => Promise<void>;
  /** The target's rows past the source's last key that count as differences (default: all of them). */
  extra?: (last: unknown[] | undefined) => Promise<number>;
}

export async function compareByDigest(shard: number, table: string, label: string, keys: readonly string[], columns: readonly string[], a: DigestSide, b: DigestSide, after: unknown[] | undefined, options: DigestOptions = {}): Promise<{ rows: number; chunks: number; mismatches: ChunkMismatch[]; last: unknown[] | undefined }> {
  const out = { rows: 0, chunks: 0, mismatches: [] as ChunkMismatch[], last: after };
  const { sync, beforeRead } = options;
  const { k, tuple, qs } = keySql(keys);
  const h = rowDigest(columns);
  const t = (side: DigestSide) => `${q(side.db)}.${q(table)}`;
  const past = (last: unknown[] | undefined) => (last === undefined ? { where: 'TRUE', params: [] as unknown[] } : { where: `${tuple} > ${qs}`, params: last });
  const query = async (side: DigestSide, sql: string, params: unknown[]): Promise<unknown[] | undefined> => {
    const [r] = await side.c.query({ sql, rowsAsArray: true }, params);
    return (r as unknown[][])[0];
  };
  /** The digest of `side`'s rows in `where`. */
  const digestOf = async (side: DigestSide, where: string, params: unknown[]): Promise<Chunk> => {
    const [n, d] = (await query(side, `SELECT COUNT(*), CAST(BIT_XOR(${h}) AS CHAR) FROM ${t(side)} WHERE ${where}`, params))!;
    return { n: Number(n), d: String(d) };
  };
  /** The source's next chunk after `last`, with its bounds (n = 0 at the end). */
  const nextChunk = async (last: unknown[] | undefined): Promise<Chunk> => {
    const from = past(last);
    if (keys.length === 1) {
      const [n, d, lo, hi] = (await query(a, `SELECT COUNT(*), CAST(BIT_XOR(h) AS CHAR), MIN(k), MAX(k) FROM (SELECT ${k} AS k, ${h} AS h FROM ${t(a)} WHERE ${from.where} ORDER BY ${k} LIMIT ${CHUNK_ROWS}) d`, from.params))!;
      return { n: Number(n), d: String(d), lo: [lo], hi: [hi] };
    }
    // A composite key: its CHUNK_ROWS-th key (or the last one when fewer are left) bounds the chunk.
    const hi = (await query(a, `SELECT ${k} FROM ${t(a)} WHERE ${from.where} ORDER BY ${k} LIMIT 1 OFFSET ${CHUNK_ROWS - 1}`, from.params))
      ?? (await query(a, `SELECT ${k} FROM ${t(a)} WHERE ${from.where} ORDER BY ${keys.map((x) => `${q(x)} DESC`).join(', ')} LIMIT 1`, from.params));
    if (hi === undefined) return { n: 0, d: '' };
    return { ...(await digestOf(a, `${from.where} AND ${tuple} <= ${qs}`, [...from.params, ...hi])), hi };
  };
  const compare = async (src: Chunk, last: unknown[] | undefined): Promise<void> => {
    const from = past(last);
    if (sync !== undefined) await sync();
    const dst = await digestOf(b, `${from.where} AND ${tuple} <= ${qs}`, [...from.params, ...src.hi!]);
    if (src.n !== dst.n || src.d !== dst.d) {
      // A composite key's first key is read only for the report of a chunk that differs.
      const lo = last === undefined ? undefined : src.lo ?? await query(a, `SELECT ${k} FROM ${t(a)} WHERE ${from.where} ORDER BY ${k} LIMIT 1`, from.params);
      out.mismatches.push({ shard, table: label, fromKey: lo === undefined ? '-inf' : keyText(lo), toKey: keyText(src.hi!), sourceRows: src.n, targetRows: dst.n });
    }
  };
  let last = after;
  // The target's digest of the chunk before, running while the source reads the next.
  let pending: Promise<void> | undefined;
  let failed: { error: unknown } | undefined;
  const settle = async () => {
    await pending;
    pending = undefined;
    if (failed !== undefined) throw failed.error;
  };
  try {
    for (;;) {
      await beforeRead?.();
      const src = await nextChunk(last);
      // Mismatches stay in key order: the chunk before is compared before this one.
      await settle();
      if (src.n === 0) break;
      out.chunks++;
      out.rows += src.n;
      if (sync === undefined) {
        pending = compare(src, last).catch((error: unknown) => {
          failed = { error };
        });
      } else await compare(src, last);
      last = src.hi;
      out.last = src.hi;
    }
  } finally {
    await pending;
  }
  await sync?.();
  const from = past(last);
  const extra = options.extra !== undefined ? await options.extra(last) : (await digestOf(b, from.where, from.params)).n;
  if (extra > 0) {
    out.chunks++;
    out.mismatches.push({ shard, table: label, fromKey: last === undefined ? '-inf' : keyText(last), toKey: '+inf', sourceRows: 0, targetRows: extra });
  }
  return out;
}
