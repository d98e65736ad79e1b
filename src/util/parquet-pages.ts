import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';

/**
 * PLAIN data pages of flat columns, encoded straight into Buffers. hyparquet-writer's generic
 * path cost three quarters of an export's time on 400k rows (bench/RESULTS.md, Parquet export):
 * a TextEncoder per string, a BigInt per INT64 value, a dictionary tried on every column,
 * statistics through generic comparisons, and the garbage of all of it. The library still
 * writes what is format: the schema, page headers and the footer (thrift).
 */

/** Column types of the columnar writer (hyparquet-writer's basic types; TIMESTAMP is INT64 milliseconds, UTC). */
export type ParquetColumnType = 'BOOLEAN' | 'INT32' | 'INT64' | 'DOUBLE' | 'STRING' | 'TIMESTAMP' | 'BYTE_ARRAY';

export interface ParquetColumn {
  name: string;
  type: ParquetColumnType;
  /** Default false: every row has a value. */
  nullable?: boolean;
  /** Values that rarely repeat (JSON documents): no min/max statistics (of JSON text they prune nothing). */
  unique?: boolean;
}

/** The parts of hyparquet-writer this module uses (its own thrift, RLE and footer code). */
export interface HyparquetParts {
  ByteWriter: new () => ByteSink;
  writePageHeader(writer: ByteSink, header: unknown): void;
  writeRleBitPackedHybrid(writer: ByteSink, values: number[], bitWidth: number): number;
}

export interface ByteSink {
  offset: number;
  getBytes(): Uint8Array;
}

/** A column chunk's description for the footer, in hyparquet-writer's ColumnChunk shape. */
export interface ChunkMeta {
  meta_data: Record<string, unknown>;
  file_offset: bigint;
}

/** Uncompressed bytes per data page, as hyparquet-writer's default: pages are compressed in parallel. */
const PAGE_BYTES = 1 << 20;

const gzipAsync = promisify(gzipCallback);

/**
 * GZIP level 1 through Node's zlib (native, in libuv's thread pool: the pages of a row group are
 * compressed on other threads while this one reads and encodes the next). Measured a fifth faster
 * than the writer's JavaScript Snappy and 2.4 times smaller files; DuckDB, Spark, Arrow and pandas
 * read it. Output chunks of up to 256 KiB: zlib's default 16 KiB called back into this thread ~25
 * times a page.
 */
const compress = (b: Buffer): Promise<Buffer> => gzipAsync(b, { level: 1, chunkSize: Math.min(Math.max(16_384, b.length + 1024), 1 << 18) });

const TWO32 = 4294967296;
const EMPTY = Buffer.alloc(0);

/**
 * Page buffers given back once their page is compressed and written, taken again for the next
 * pages: a fresh buffer of a MiB or more per page made V8 collect for its external memory (a
 * mark-compact every few pages, a fifth of a PostgreSQL export's time).
 */
const spare: Buffer[] = [];
const SPARE_MAX = 8;
const POOLED_MIN = 64 * 1024;

/** A buffer of at least `min` bytes (its memory its own: Node's small-buffer pool is never used at these sizes). */
export function takeBuffer(min: number): Buffer {
  const size = Math.max(min, POOLED_MIN);
  for (let i = spare.length - 1; i >= 0; i--) if (spare[i]!.length >= size) return spare.splice(i, 1)[0]!;
  return Buffer.allocUnsafe(size);
}

/** Gives back the whole memory `b` views (nothing may read or write it any more). */
function giveBuffer(b: Uint8Array): void {
  if (b.buffer.byteLength < POOLED_MIN || b.buffer instanceof SharedArrayBuffer) return;
  if (spare.length >= SPARE_MAX) spare.shift();
  spare.push(Buffer.from(b.buffer, 0, b.buffer.byteLength));
}

/**
 * A batch's byte-array values already in PLAIN form (a little-endian length before each value's
 * bytes), as a reader that has them side by side fills it: copied in runs, no object per value.
 * `offsets[i]` is where value i's length stands; `length` is the value count, as an array's. A
 * ChunkBuilder may keep `bytes` as a page of its own: fill a fresh one per batch.
 */
export class PlainByteArrays {
  length = 0;
  bytes: Buffer;
  offsets: Uint32Array;
  end = 0;

  constructor(capacity: number, bytes = 1 << 20) {
    this.bytes = takeBuffer(bytes);
    this.offsets = new Uint32Array(capacity);
  }

  /** The next value's length will stand `ahead` bytes past what is appended so far (it comes with a later `append`). */
  mark(ahead: number): void {
    if (this.length === this.offsets.length) {
      const more = new Uint32Array(this.offsets.length * 2 + 16);
      more.set(this.offsets);
      this.offsets = more;
    }
    this.offsets[this.length++] = this.end + ahead;
  }

  /** Appends PLAIN bytes (whole values, marked before). */
  append(plain: Uint8Array): void {
    if (this.end + plain.length > this.bytes.length) {
      const bigger = takeBuffer(Math.max(this.bytes.length * 2, this.end + plain.length));
      this.bytes.copy(bigger, 0, 0, this.end);
      giveBuffer(this.bytes);
      this.bytes = bigger;
    }
    this.bytes.set(plain, this.end);
    this.end += plain.length;
  }

  /** The PLAIN bytes of every value. */
  plain(): Buffer {
    return this.bytes.subarray(0, this.end);
  }

  /** Value i's bytes (a view). */
  value(i: number): Buffer {
    const at = this.offsets[i]!;
    return this.bytes.subarray(at + 4, at + 4 + this.bytes.readUInt32LE(at));
  }
}

/** Unsigned byte order, as Parquet orders BYTE_ARRAY statistics (UTF-8 byte order is code point order). */
function lessBytes(a: unknown, b: unknown): boolean {
  if (a === b) return false;
  const ab = typeof a === 'string' ? Buffer.from(a, 'utf8') : a as Uint8Array;
  const bb = typeof b === 'string' ? Buffer.from(b, 'utf8') : b as Uint8Array;
  return Buffer.compare(ab, bb) < 0;
}

interface Page {
  rows: number;
  nulls: number;
  levels: Uint8Array;
  plainBytes: number;
  body: Promise<Buffer>;
  /** The page's plain bytes' buffer: given back once compressed. */
  memory: Buffer;
}

/** A row group's column, compressing: `write` appends it where the file stands once its pages are done. */
export interface PendingChunk {
  write(sink: (bytes: Uint8Array) => void, offset: () => number): Promise<ChunkMeta>;
}

/**
 * One column of the row group being filled: values are encoded PLAIN into the current page as
 * they arrive (no batch of row objects lives until the row group is complete, which the garbage
 * collector paid for), a full page starts compressing at once, and `finish` hands the row
 * group's chunk on.
 */
export class ChunkBuilder {
  private readonly bytes: boolean;
  // Allocated as values come (a column of booleans never needs a MiB): external memory drives the garbage collector.
  private page: Buffer = EMPTY;
  private at = 0;
  private rows = 0;
  private nulls = 0;
  private defs: number[] = [];
  private bit = 0;
  private byte = 0;
  private pages: Page[] = [];
  private values = 0;
  private allNulls = 0;
  private min: unknown;
  private max: unknown;
  private lastText: string | undefined;
  private lastBytes: Buffer = EMPTY;

  constructor(private readonly hw: HyparquetParts, readonly column: ParquetColumn) {
    this.bytes = column.type === 'STRING' || column.type === 'BYTE_ARRAY';
  }

  /** Room for `n` more bytes in the current page. */
  private room(n: number): void {
    if (this.at + n <= this.page.length) return;
    const bigger = takeBuffer(Math.max(this.page.length * 2, this.at + n));
    this.page.copy(bigger, 0, 0, this.at);
    if (this.page !== EMPTY) giveBuffer(this.page);
    this.page = bigger;
  }

  private stat(v: unknown): void {
    if (this.column.unique === true) return;
    if (this.min === undefined) {
      this.min = v;
      this.max = v;
    } else if (this.bytes) {
      if (v === this.min || v === this.max) return;
      if (lessBytes(v, this.min)) this.min = v;
      if (lessBytes(this.max, v)) this.max = v;
    } else if (!(typeof v === 'number' && Number.isNaN(v))) {
      if ((v as number) < (this.min as number)) this.min = v;
      if ((v as number) > (this.max as number)) this.max = v;
    }
  }

  append(values: ArrayLike<unknown> | PlainByteArrays): void {
    if (values instanceof PlainByteArrays) {
      if (!this.bytes) throw new Error(`parquet: column ${this.column.name} is ${this.column.type}, given byte arrays`);
      const plain = values.plain();
      if (this.at === 0 && plain.length >= PAGE_BYTES / 2 && this.column.nullable !== true) {
        // Big enough to be a page as it is: kept, not copied (the batch was filled for this).
        this.page = plain;
        this.at = plain.length;
      } else {
        this.room(plain.length);
        this.page.set(plain, this.at);
        this.at += plain.length;
      }
      this.rows += values.length;
      if (this.column.nullable === true) for (let i = 0; i < values.length; i++) this.defs.push(1);
      if (this.column.unique !== true) for (let i = 0; i < values.length; i++) this.stat(values.value(i));
      if (this.at >= PAGE_BYTES) this.seal();
      return;
    }
    this.appendFrom(values, this.column.nullable !== true && (this.column.type === 'INT64' || this.column.type === 'TIMESTAMP') ? this.appendInt64s(values) : 0);
  }

  /**
   * Required INT64 values that are numbers in [0, 2^53) (ids, ms), in one tight loop: the generic
   * loop's per-value dispatch was the most of the encoding's own time. Returns where a value
   * outside that range stopped it (the generic loop takes the rest).
   */
  private appendInt64s(values: ArrayLike<unknown>): number {
    this.room(8 * values.length);
    const page = this.page;
    let at = this.at;
    let min = this.min as number | undefined;
    let max = this.max as number | undefined;
    let i = 0;
    for (; i < values.length; i++) {
      const v = values[i];
      if (typeof v !== 'number' || !(v >= 0 && v <= Number.MAX_SAFE_INTEGER) || !Number.isInteger(v)) break;
      const hi = Math.floor(v / TWO32);
      page.writeUInt32LE(v - hi * TWO32, at);
      page.writeUInt32LE(hi, at + 4);
      at += 8;
      if (min === undefined || v < min) min = v;
      if (max === undefined || v > max) max = v;
    }
    // Statistics compare numbers only with numbers here; a bigint later compares with them as well.
    if (i > 0 && this.column.unique !== true) {
      this.min = min;
      this.max = max;
    }
    this.at = at;
    this.rows += i;
    if (this.at >= PAGE_BYTES) this.seal();
    return i;
  }

  private appendFrom(values: ArrayLike<unknown>, from: number): void {
    const { type, nullable } = this.column;
    for (let i = from; i < values.length; i++) {
      const raw = values[i];
      this.rows++;
      if (raw === null || raw === undefined) {
        if (nullable !== true) throw new Error(`parquet: column ${this.column.name} is not nullable, a row has no value`);
        this.nulls++;
        this.defs.push(0);
        continue;
      }
      if (nullable === true) this.defs.push(1);
      const v = raw instanceof Date ? raw.getTime() : raw;
      this.stat(v);
      switch (type) {
        case 'INT64':
        case 'TIMESTAMP':
          this.room(8);
          if (typeof v === 'number' && v >= 0 && v <= Number.MAX_SAFE_INTEGER && Number.isInteger(v)) {
            // Two 32-bit halves: no BigInt per value.
            const lo = v % TWO32;
            this.page.writeUInt32LE(lo, this.at);
            this.page.writeUInt32LE((v - lo) / TWO32, this.at + 4);
          } else {
            this.page.writeBigInt64LE(BigInt.asIntN(64, BigInt(v as number | bigint)), this.at);
          }
          this.at += 8;
          break;
        case 'INT32':
          this.room(4);
          this.at = this.page.writeInt32LE(v as number, this.at);
          break;
        case 'DOUBLE':
          this.room(8);
          this.at = this.page.writeDoubleLE(v as number, this.at);
          break;
        case 'BOOLEAN':
          if (v === true) this.byte |= 1 << this.bit;
          if (++this.bit === 8) {
            this.room(1);
            this.page[this.at++] = this.byte;
            this.bit = 0;
            this.byte = 0;
          }
          break;
        default:
          if (typeof v === 'string' && v === this.lastText) {
            // A repeated value (the type column): its bytes copied, not encoded again.
            const b = this.lastBytes;
            this.room(4 + b.length);
            this.page.writeUInt32LE(b.length, this.at);
            for (let k = 0; k < b.length; k++) this.page[this.at + 4 + k] = b[k]!;
            this.at += 4 + b.length;
          } else if (typeof v === 'string') {
            // At most 3 UTF-8 bytes per UTF-16 unit: room without measuring first.
            this.room(4 + 3 * v.length);
            const n = this.page.write(v, this.at + 4, 'utf8');
            this.page.writeUInt32LE(n, this.at);
            if (n <= 64) {
              this.lastText = v;
              this.lastBytes = Buffer.from(this.page.subarray(this.at + 4, this.at + 4 + n));
            }
            this.at += 4 + n;
          } else {
            const b = v as Uint8Array;
            this.room(4 + b.length);
            this.page.writeUInt32LE(b.length, this.at);
            this.page.set(b, this.at + 4);
            this.at += 4 + b.length;
          }
      }
      if (this.at >= PAGE_BYTES) this.seal();
    }
  }

  /** Closes the current page and starts compressing it on the thread pool. */
  private seal(): void {
    if (this.rows === 0) return;
    if (this.bit > 0) {
      this.room(1);
      this.page[this.at++] = this.byte;
      this.bit = 0;
      this.byte = 0;
    }
    let levels: Uint8Array = new Uint8Array(0);
    if (this.column.nullable === true) {
      const w = new this.hw.ByteWriter();
      this.hw.writeRleBitPackedHybrid(w, this.defs, 1);
      levels = w.getBytes();
    }
    const body = compress(this.page.subarray(0, this.at));
    // A failure surfaces through write(); meanwhile it must not be an unhandled rejection.
    body.catch(() => undefined);
    this.pages.push({ rows: this.rows, nulls: this.nulls, levels, plainBytes: this.at, body, memory: this.page });
    this.values += this.rows;
    this.allNulls += this.nulls;
    this.page = EMPTY;
    this.at = 0;
    this.rows = 0;
    this.nulls = 0;
    this.defs = [];
  }

  /** The row group's chunk (its pages compressing); the builder starts the next row group. */
  finish(): PendingChunk {
    this.seal();
    const { hw, column } = this;
    const pages = this.pages;
    const values = this.values;
    let min = this.min;
    let max = this.max;
    const nulls = this.allNulls;
    this.pages = [];
    this.values = 0;
    this.allNulls = 0;
    this.min = undefined;
    this.max = undefined;
    // Signed zero per the Parquet spec: min -0, max +0.
    if (min === 0) min = -0;
    if (max === 0) max = 0;
    const stats = column.unique === true ? undefined : { min_value: min, max_value: max, null_count: BigInt(nulls) };
    const physical = column.type === 'STRING' ? 'BYTE_ARRAY' : column.type === 'TIMESTAMP' ? 'INT64' : column.type;
    return {
      async write(sink, offset) {
        const start = offset();
        let uncompressed = 0;
        for (const p of pages) {
          const body = await p.body;
          const header = new hw.ByteWriter();
          hw.writePageHeader(header, {
            type: 'DATA_PAGE_V2',
            uncompressed_page_size: p.levels.length + p.plainBytes,
            compressed_page_size: p.levels.length + body.length,
            data_page_header_v2: { num_values: p.rows, num_nulls: p.nulls, num_rows: p.rows, encoding: 'PLAIN', definition_levels_byte_length: p.levels.length, repetition_levels_byte_length: 0, is_compressed: true },
          });
          const h = header.getBytes();
          sink(h);
          if (p.levels.length > 0) sink(p.levels);
          sink(body);
          giveBuffer(p.memory);
          uncompressed += h.length + p.levels.length + p.plainBytes;
        }
        return {
          meta_data: {
            type: physical,
            encodings: ['PLAIN'],
            path_in_schema: [column.name],
            codec: 'GZIP',
            num_values: BigInt(values),
            total_compressed_size: BigInt(offset() - start),
            total_uncompressed_size: BigInt(uncompressed),
            data_page_offset: BigInt(start),
            statistics: stats,
            encoding_stats: [{ page_type: 'DATA_PAGE_V2', encoding: 'PLAIN', count: pages.length }],
          },
          file_offset: BigInt(start),
        };
      },
    };
  }
}
