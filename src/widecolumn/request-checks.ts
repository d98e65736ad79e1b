import { ShardKitError } from '../errors.js';
import { MAX_VERSIONS_LIMIT, type DatasetConfig } from './dataset-config.js';
import { escapeComponent } from './key-codec.js';
import { checkCount, checkName, checkTimestamp, tooLarge, type WideColumnLimits } from './limits.js';
import { rowContext, type RowContext } from './row-context.js';
import type { ReadQuery } from './row-reader.js';
import type { GetRowRequest, PutRowRequest } from './types.js';

/**
 * The argument checks of the wide-column API, done once above the storage (abstract-level's
 * validate-then-store): a request is refused here, with a typed error and nothing changed, or
 * comes out normalised for the engine to store. Engine-independent: any engine can use it.
 */

const DEFAULT_PAGE = 100;
const MAX_PAGE = 10_000;

export interface PreparedItem {
  column: string;
  colEsc: Buffer;
  value: Buffer;
  /** Explicit, or assigned when the write runs. */
  ts: number | null;
  server: boolean;
}

export interface PreparedRow {
  ctx: RowContext;
  items: PreparedItem[];
  /** Items with an explicit timestamp. */
  explicit: number;
  /** Whether a column appears in more than one item. */
  duplicates: boolean;
}

/** Column strings identify columns exactly: lone surrogates are refused, so UTF-8 is 1:1. */
function hasDuplicateColumns(items: PreparedItem[]): boolean {
  if (items.length <= 16) {
    for (let i = 1; i < items.length; i++) for (let j = 0; j < i; j++) if (items[i]!.column === items[j]!.column) return true;
    return false;
  }
  return new Set(items.map((i) => i.column)).size !== items.length;
}

export class RequestChecks {
  private readonly columnKeys = new Map<string, Buffer>();

  constructor(
    readonly limits: WideColumnLimits,
    private readonly shards: number,
    /** Wall-clock ms, for the future-skew check of explicit timestamps. */
    private readonly clock: () => number,
  ) {}

  /** The validated context of a row key. */
  context(ds: DatasetConfig, row: unknown): RowContext {
    const raw = checkName('row key', row, this.limits.maxRowKeyBytes);
    return rowContext(ds, row as string, raw, this.shards);
  }

  /** A Get Row request, validated and normalised (versions capped at the dataset's maxVersions). */
  read(ds: DatasetConfig, r: GetRowRequest): [RowContext, ReadQuery] {
    if (r === null || typeof r !== 'object') throw new ShardKitError('INVALID_ARGUMENT', 'each request must be an object');
    const ctx = this.context(ds, r.row);
    return [ctx, readQuery(ds, r, this.limits)];
  }

  /** Put Row requests, validated; refused whole (nothing written) on any bad item. */
  puts(ds: DatasetConfig, rows: PutRowRequest[]): PreparedRow[] {
    let bytes = 0;
    const maxTs = this.clock() + this.limits.maxFutureSkewMs;
    const seen = rows.length > 1 ? new Set<string>() : null;
    const out: PreparedRow[] = [];
    for (const r of rows) {
      if (r === null || typeof r !== 'object') throw new ShardKitError('INVALID_ARGUMENT', 'each row must be an object');
      const ctx = this.context(ds, r.row);
      if (seen) {
        if (seen.has(ctx.id)) throw new ShardKitError('INVALID_ARGUMENT', `row ${JSON.stringify(r.row.slice(0, 80))} appears twice in one batch; put its items together`);
        seen.add(ctx.id);
      }
      if (!Array.isArray(r.items) || r.items.length === 0) throw new ShardKitError('INVALID_ARGUMENT', 'a put needs at least one item');
      checkCount('items in one row', r.items.length, this.limits.maxItemsPerRow);
      const items: PreparedItem[] = [];
      let explicit = 0;
      for (const it of r.items) {
        if (it === null || typeof it !== 'object') throw new ShardKitError('INVALID_ARGUMENT', 'each item must be an object');
        const colEsc = this.columnKey(it.column);
        let value: Buffer;
        if (typeof it.value === 'string') {
          if (it.value.length > this.limits.maxValueBytes) throw tooLarge('value', Buffer.byteLength(it.value, 'utf8'), this.limits.maxValueBytes);
          // UTF-8 cannot hold a lone surrogate: it would be stored as U+FFFD, silently changed
          // (issue 15, defect 3). Bytes (or base64 over HTTP) store anything.
          if (!(it.value as string & { isWellFormed(): boolean }).isWellFormed()) {
            throw new ShardKitError('INVALID_ARGUMENT', `value of column ${JSON.stringify(String(it.column).slice(0, 80))} is not well-formed unicode (lone surrogate); send such data as bytes (base64 over HTTP)`);
          }
          value = Buffer.from(it.value, 'utf8');
        } else if (it.value instanceof Uint8Array) {
          value = Buffer.isBuffer(it.value) ? it.value : Buffer.from(it.value.buffer, it.value.byteOffset, it.value.byteLength);
        } else {
          throw new ShardKitError('INVALID_ARGUMENT', 'value must be a string or bytes');
        }
        if (value.length > this.limits.maxValueBytes) throw tooLarge('value', value.length, this.limits.maxValueBytes);
        let ts: number | null = null;
        if (it.timestamp !== undefined && it.timestamp !== null) {
          ts = checkTimestamp('timestamp', it.timestamp);
          if (ts > maxTs) throw new ShardKitError('INVALID_ARGUMENT', `timestamp ${ts} is more than ${this.limits.maxFutureSkewMs} ms in the future`);
          explicit++;
        }
        bytes += 2 * (ctx.cellPrefix.length + colEsc.length + value.length) + 24;
        items.push({ column: it.column, colEsc, value, ts, server: ts === null });
      }
      const duplicates = hasDuplicateColumns(items);
      if (duplicates && explicit > 1) {
        const keys = new Set<string>();
        for (const i of items) {
          if (i.ts === null) continue;
          const k = `${i.ts}\u0000${i.column}`;
          if (keys.has(k)) throw new ShardKitError('INVALID_ARGUMENT', `column ${JSON.stringify(i.column.slice(0, 80))} has two items with timestamp ${i.ts}`);
          keys.add(k);
        }
      }
      out.push({ ctx, items, explicit, duplicates });
    }
    if (bytes > this.limits.maxBatchBytes) throw tooLarge('the write batch', bytes, this.limits.maxBatchBytes);
    return out;
  }

  /**
   * The escaped key component of a column name, validated. Column names repeat a lot (event
   * types), so encodings are remembered; the cache is dropped whole when it fills.
   */
  columnKey(column: unknown): Buffer {
    if (typeof column === 'string') {
      const hit = this.columnKeys.get(column);
      if (hit) return hit;
    }
    const esc = escapeComponent(checkName('column name', column, this.limits.maxColumnBytes));
    if (this.columnKeys.size >= 10_000) this.columnKeys.clear();
    this.columnKeys.set(column as string, esc);
    return esc;
  }
}

/** Column names as raw UTF-8 bytes, sorted bytewise, without repeats. */
export function uniqueSorted(list: Buffer[]): Buffer[] {
  const sorted = [...list].sort(Buffer.compare);
  return sorted.filter((b, i) => i === 0 || !b.equals(sorted[i - 1]!));
}

/**
 * The options of a Get Row request (everything but its row key), validated and normalised:
 * versions capped at the dataset's maxVersions, columns unique and sorted bytewise. Every engine
 * uses it, so the refusals and their messages are the same whatever the engine.
 */
export function readQuery(ds: DatasetConfig, r: GetRowRequest, limits: WideColumnLimits): ReadQuery {
  const versions = r.versions ?? 1;
  if (!Number.isSafeInteger(versions) || versions < 1 || versions > MAX_VERSIONS_LIMIT) {
    throw new ShardKitError('INVALID_ARGUMENT', `versions must be an integer in 1..${MAX_VERSIONS_LIMIT}`);
  }
  const limit = r.limit ?? DEFAULT_PAGE;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE) throw new ShardKitError('INVALID_ARGUMENT', `limit must be an integer in 1..${MAX_PAGE}`);
  const start = r.start === undefined ? 0 : checkTimestamp('start', r.start);
  const end = r.end === undefined ? Infinity : checkTimestamp('end', r.end);
  if (start >= end) throw new ShardKitError('INVALID_ARGUMENT', `the time range [start, end) is empty: start ${start} >= end ${end}`);
  let columns: Buffer[] | null = null;
  if (r.columns !== undefined) {
    if (!Array.isArray(r.columns)) throw new ShardKitError('INVALID_ARGUMENT', 'columns must be an array of column names');
    checkCount('columns in one request', r.columns.length, limits.maxItemsPerRow);
    columns = uniqueSorted(r.columns.map((c) => checkName('column name', c, limits.maxColumnBytes)));
  }
  return { columns, versions: Math.min(versions, ds.maxVersions), start, end, limit, marker: parseMarker(r.marker, limits) };
}

/** A paging marker: base64url of a column's raw bytes, exactly as this store returned it. */
function parseMarker(marker: string | null | undefined, limits: WideColumnLimits): Buffer | null {
  if (marker === undefined || marker === null || marker === '') return null;
  if (typeof marker !== 'string' || !/^[A-Za-z0-9_-]+$/.test(marker)) throw new ShardKitError('INVALID_ARGUMENT', 'marker is not one this store returned');
  const raw = Buffer.from(marker, 'base64url');
  if (raw.toString('base64url') !== marker || raw.length === 0 || raw.length > limits.maxColumnBytes) {
    throw new ShardKitError('INVALID_ARGUMENT', 'marker is not one this store returned');
  }
  return raw;
}
