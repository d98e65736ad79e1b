/**
 * The RocksDB key format of the wide-column store (documented in docs/widecolumn.md).
 *
 *   cell  = shard:u16 | 0x01 | dataset:u32 | esc(row) 00 01 | esc(column) 00 01 | ~timestamp:u64
 *   head  = shard:u16 | 0x02 | dataset:u32 | esc(row) 00 01 | esc(column) 00 01      -> 01 | timestamp:u64 | flags | n | n x timestamp:u64 | value
 *                                                                                  (or, written before the lists: timestamp:u64 | value)
 *   log   = shard:u16 | 0x02 | dataset:u32 | esc(row) 00 01 | 00 00 | ~seq:u64       -> (column, timestamp) of each cell of one put
 *   meta  = ff ff | kind:u8 | ...
 *
 * esc() doubles nothing but 0x00, which becomes 00 ff; the terminator 00 01 sorts below every
 * escaped byte, so plain bytewise order gives rows in key order, columns in name order, and no
 * row key or column name can be a prefix of, or collide with, another. The timestamp is stored
 * inverted (2^64-1-ts, big-endian) so the newest version of a column comes first.
 */

export const CELL_TAG = 0x01;
export const HEAD_TAG = 0x02;
export const META_PREFIX = Buffer.from([0xff, 0xff]);
export const META_DATASET = 0x44; // 'D'
export const META_FLOOR = 0x46; // 'F'
export const META_STORE = 0x53; // 'S'

const TERMINATOR_LOW = 0x01;
const TS_BYTES = 8;
/**
 * Marks a write-log record in a row's head region: an escaped column never starts with 00 00
 * (a zero byte escapes to 00 ff, the terminator is 00 01), so the log sorts before every head.
 */
const LOG_MARK = Buffer.from([0x00, 0x00]);

/** Escapes raw bytes and appends the 00 01 terminator. */
export function escapeComponent(raw: Uint8Array): Buffer {
  let zeros = 0;
  for (let i = 0; i < raw.length; i++) if (raw[i] === 0) zeros++;
  const out = Buffer.allocUnsafe(raw.length + zeros + 2);
  if (zeros === 0) {
    out.set(raw, 0);
  } else {
    let j = 0;
    for (let i = 0; i < raw.length; i++) {
      const b = raw[i]!;
      out[j++] = b;
      if (b === 0) out[j++] = 0xff;
    }
  }
  out[out.length - 2] = 0x00;
  out[out.length - 1] = TERMINATOR_LOW;
  return out;
}

/**
 * Reads one escaped component starting at `offset`; returns the raw bytes and the offset just
 * after its terminator. Throws on a malformed key (never produced by this codec).
 */
export function unescapeComponent(key: Uint8Array, offset: number): { raw: Buffer; next: number } {
  let zeros = 0;
  let end = offset;
  for (;;) {
    if (end + 1 >= key.length) throw new Error('malformed wide-column key: unterminated component');
    if (key[end] === 0) {
      const n = key[end + 1];
      if (n === TERMINATOR_LOW) break;
      if (n !== 0xff) throw new Error('malformed wide-column key: bad escape');
      zeros++;
      end += 2;
    } else {
      end++;
    }
  }
  const slice = key.subarray(offset, end);
  let raw: Buffer;
  if (zeros === 0) {
    raw = Buffer.from(slice);
  } else {
    raw = Buffer.allocUnsafe(slice.length - zeros);
    let j = 0;
    for (let i = 0; i < slice.length; i++) {
      raw[j++] = slice[i]!;
      if (slice[i] === 0) i++;
    }
  }
  return { raw, next: end + 2 };
}

/** 2^64-1-ts as 8 big-endian bytes; ts is a safe integer >= 0, so two 32-bit halves suffice. */
export function writeInvertedTimestamp(out: Buffer, offset: number, ts: number): void {
  const hi = Math.floor(ts / 0x1_0000_0000);
  const lo = ts - hi * 0x1_0000_0000;
  out.writeUInt32BE(0xffffffff - hi, offset);
  out.writeUInt32BE(0xffffffff - lo, offset + 4);
}

export function readInvertedTimestamp(buf: Uint8Array, offset: number): number {
  const b = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const hi = 0xffffffff - b.readUInt32BE(offset);
  const lo = 0xffffffff - b.readUInt32BE(offset + 4);
  return hi * 0x1_0000_0000 + lo;
}

export function writeTimestamp(out: Buffer, offset: number, ts: number): void {
  const hi = Math.floor(ts / 0x1_0000_0000);
  out.writeUInt32BE(hi, offset);
  out.writeUInt32BE(ts - hi * 0x1_0000_0000, offset + 4);
}

export function readTimestamp(buf: Buffer, offset: number): number {
  return buf.readUInt32BE(offset) * 0x1_0000_0000 + buf.readUInt32BE(offset + 4);
}

/** shard | tag | dataset | esc(row): everything of one row in one keyspace starts with this. */
export function rowPrefix(tag: number, shard: number, datasetId: number, rowEsc: Buffer): Buffer {
  const out = Buffer.allocUnsafe(7 + rowEsc.length);
  out.writeUInt16BE(shard, 0);
  out[2] = tag;
  out.writeUInt32BE(datasetId, 3);
  rowEsc.copy(out, 7);
  return out;
}

/** The smallest key greater than every key starting with `prefix` (prefix ends in 00 01). */
export function prefixEnd(prefix: Buffer): Buffer {
  const out = Buffer.from(prefix);
  out[out.length - 1]! += 1;
  return out;
}

/** Start of the keys of one shard/tag/dataset, and the end of that range. */
export function datasetShardRange(tag: number, shard: number, datasetId: number): { gte: Buffer; lt: Buffer } {
  const gte = Buffer.allocUnsafe(7);
  gte.writeUInt16BE(shard, 0);
  gte[2] = tag;
  gte.writeUInt32BE(datasetId, 3);
  const lt = Buffer.from(gte);
  // datasetId < 2^32-1 always (ids are allocated from 1 upwards), so +1 does not overflow.
  lt.writeUInt32BE(datasetId + 1, 3);
  return { gte, lt };
}

export function shardRange(shard: number): { gte: Buffer; lt: Buffer } {
  const gte = Buffer.alloc(2);
  gte.writeUInt16BE(shard, 0);
  const lt = Buffer.alloc(2);
  lt.writeUInt16BE(shard + 1, 0);
  return { gte, lt };
}

export function cellKey(rowCellPrefix: Buffer, colEsc: Buffer, ts: number): Buffer {
  const out = Buffer.allocUnsafe(rowCellPrefix.length + colEsc.length + TS_BYTES);
  rowCellPrefix.copy(out, 0);
  colEsc.copy(out, rowCellPrefix.length);
  writeInvertedTimestamp(out, rowCellPrefix.length + colEsc.length, ts);
  return out;
}

export function concat(a: Buffer, b: Buffer): Buffer {
  const out = Buffer.allocUnsafe(a.length + b.length);
  a.copy(out, 0);
  b.copy(out, a.length);
  return out;
}

/**
 * A head value of the first format: timestamp:u64 | value (no list of older timestamps). The fold
 * no longer writes it; heads written before the lists existed stay readable (decodeHeadValue).
 * Its first byte is always 00: timestamps are below 2^53, so the top byte of the u64 is zero.
 */
export function headValue(ts: number, value: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(TS_BYTES + value.length);
  writeTimestamp(out, 0, ts);
  out.set(value, TS_BYTES);
  return out;
}

/** First byte of a head value with a list of the column's newest timestamps (format 1). */
export const HEAD_FORMAT_TOPS = 0x01;
/** Flag of a format-1 head: its list held every cell of the column when the fold wrote it. */
const TOPS_COMPLETE = 0x01;

/**
 * A decoded head: the column's newest cell and, for format 1, `tops`: the newest timestamps of
 * the column, newest first (tops[0] === ts), exact down to its last entry when the fold wrote it
 * (every cell of the column at that moment with a timestamp >= the last entry is listed), and
 * every cell when `complete`. Later puts are named by the write log, not here.
 */
export interface Head {
  ts: number;
  value: Buffer;
  tops: number[] | null;
  complete: boolean;
}

/** 01 | timestamp:u64 | flags:u8 | n:u8 | n x older timestamp:u64 (newest first) | value. */
export function encodeHead(tops: readonly number[], complete: boolean, value: Uint8Array): Buffer {
  if (tops.length === 0 || tops.length > 256) throw new Error('a head lists 1..256 timestamps');
  const older = tops.length - 1;
  const off = 1 + TS_BYTES + 2 + older * TS_BYTES;
  const out = Buffer.allocUnsafe(off + value.length);
  out[0] = HEAD_FORMAT_TOPS;
  writeTimestamp(out, 1, tops[0]!);
  out[1 + TS_BYTES] = complete ? TOPS_COMPLETE : 0;
  out[2 + TS_BYTES] = older;
  for (let i = 1; i < tops.length; i++) writeTimestamp(out, 3 + TS_BYTES + (i - 1) * TS_BYTES, tops[i]!);
  out.set(value, off);
  return out;
}

/** Reads a head value of either format (the first byte tells them apart, see headValue). */
export function decodeHead(v: Buffer): Head {
  if (v.length > 0 && v[0] === HEAD_FORMAT_TOPS) {
    if (v.length < 3 + TS_BYTES) throw new Error('malformed wide-column head record');
    const ts = readTimestamp(v, 1);
    const complete = (v[1 + TS_BYTES]! & TOPS_COMPLETE) !== 0;
    const older = v[2 + TS_BYTES]!;
    const off = 3 + TS_BYTES + older * TS_BYTES;
    if (v.length < off) throw new Error('malformed wide-column head record');
    const tops: number[] = new Array(older + 1);
    tops[0] = ts;
    for (let i = 0; i < older; i++) tops[i + 1] = readTimestamp(v, 3 + TS_BYTES + i * TS_BYTES);
    return { ts, value: v.subarray(off), tops, complete };
  }
  if (v.length < TS_BYTES) throw new Error('malformed wide-column head record');
  return { ts: readTimestamp(v, 0), value: v.subarray(TS_BYTES), tops: null, complete: false };
}

export function decodeHeadValue(v: Buffer): { ts: number; value: Buffer } {
  return decodeHead(v);
}

/** Splits a cell key of a known row (prefix length) into the escaped column and timestamp. */
export function splitCellKey(key: Buffer, rowPrefixLength: number): { colEsc: Buffer; ts: number } {
  return {
    colEsc: key.subarray(rowPrefixLength, key.length - TS_BYTES),
    ts: readInvertedTimestamp(key, key.length - TS_BYTES),
  };
}

/** Parses any cell key (used by full scans: compaction, export, backup checks). */
export function parseCellKey(key: Buffer): { shard: number; datasetId: number; rowEsc: Buffer; colEsc: Buffer; ts: number } {
  const shard = key.readUInt16BE(0);
  const datasetId = key.readUInt32BE(3);
  const row = unescapeComponent(key, 7);
  return {
    shard,
    datasetId,
    rowEsc: key.subarray(7, row.next),
    colEsc: key.subarray(row.next, key.length - TS_BYTES),
    ts: readInvertedTimestamp(key, key.length - TS_BYTES),
  };
}

export function decodeEscaped(esc: Buffer): Buffer {
  return unescapeComponent(esc, 0).raw;
}

export function metaKey(kind: number, rest: Uint8Array = Buffer.alloc(0)): Buffer {
  const out = Buffer.allocUnsafe(3 + rest.length);
  META_PREFIX.copy(out, 0);
  out[2] = kind;
  out.set(rest, 3);
  return out;
}

export function metaRange(kind: number): { gte: Buffer; lt: Buffer } {
  return { gte: metaKey(kind), lt: Buffer.from([0xff, 0xff, kind + 1]) };
}

export function floorKey(ts: number): Buffer {
  const out = metaKey(META_FLOOR, Buffer.alloc(TS_BYTES));
  writeInvertedTimestamp(out, 3, ts);
  return out;
}

/** The write-log record of one put in a row's head region; `seq` is unique per row. */
export function logKey(headPrefix: Buffer, seq: number): Buffer {
  const out = Buffer.allocUnsafe(headPrefix.length + LOG_MARK.length + TS_BYTES);
  headPrefix.copy(out, 0);
  LOG_MARK.copy(out, headPrefix.length);
  writeInvertedTimestamp(out, headPrefix.length + LOG_MARK.length, seq);
  return out;
}

/** The range of a row's write-log records (they sort before its heads). */
export function logRange(headPrefix: Buffer): { gte: Buffer; lt: Buffer } {
  const gte = concat(headPrefix, LOG_MARK);
  const lt = Buffer.from(gte);
  lt[lt.length - 1] = 0x01;
  return { gte, lt };
}

/** Whether a key of a row's head region (prefix length `plen`) is a write-log record. */
export function isLogKey(key: Uint8Array, plen: number): boolean {
  return key[plen] === 0x00 && key[plen + 1] === 0x00;
}

/** A cell as a write-log record names it: escaped column and timestamp (the value stays in the cell). */
export interface LoggedCell {
  colEsc: Buffer;
  ts: number;
}

/** count:u32 | per cell: colLen:u32 | esc(column) | ts:u64. Built on every put: one DataView, no per-field checks. */
export function encodeLog(cells: ReadonlyArray<{ colEsc: Buffer; ts: number }>): Buffer {
  let size = 4;
  for (let i = 0; i < cells.length; i++) size += 12 + cells[i]!.colEsc.length;
  const out = Buffer.allocUnsafe(size);
  const dv = new DataView(out.buffer, out.byteOffset, size);
  dv.setUint32(0, cells.length);
  let o = 4;
  for (let i = 0; i < cells.length; i++) {
    const c = cells[i]!;
    dv.setUint32(o, c.colEsc.length);
    out.set(c.colEsc, o + 4);
    o += 4 + c.colEsc.length;
    const hi = Math.floor(c.ts / 0x1_0000_0000);
    dv.setUint32(o, hi);
    dv.setUint32(o + 4, c.ts - hi * 0x1_0000_0000);
    o += 8;
  }
  return out;
}

/** The cells a write-log record names; column buffers share the record's memory. */
export function decodeLog(v: Buffer): LoggedCell[] {
  if (v.length < 4) throw new Error('malformed wide-column log record');
  const n = v.readUInt32BE(0);
  const out: LoggedCell[] = new Array(n);
  let o = 4;
  for (let i = 0; i < n; i++) {
    if (o + 4 > v.length) throw new Error('malformed wide-column log record');
    const colLen = v.readUInt32BE(o);
    if (o + 12 + colLen > v.length) throw new Error('malformed wide-column log record');
    const colEsc = v.subarray(o + 4, o + 4 + colLen);
    o += 4 + colLen;
    out[i] = { colEsc, ts: readTimestamp(v, o) };
    o += 8;
  }
  return out;
}
