import { ShardKitError } from '../../errors.js';
import type { DatasetConfig } from '../dataset-config.js';
import { checkCount, checkName, checkTimestamp, tooLarge, type WideColumnLimits } from '../limits.js';
import { readQuery, uniqueSorted } from '../request-checks.js';
import type { ReadQuery } from '../row-reader.js';
import type { DeleteRowRequest, GetRowRequest, PutRowRequest } from '../types.js';

/**
 * Validation of Get/Put/Delete Row requests for the MyRocks engine: the same refusals, with the
 * same codes and messages, as the embedded engine (wide-column-store.ts prepareRead/preparePuts).
 * Nothing reaches SQL before these checks pass.
 */

/** A lone UTF-16 surrogate would be stored as U+FFFD: silently changed (limits.ts refuses it in names). */
const LONE_SURROGATE = /\p{Cs}/u;

export interface ValidRead extends ReadQuery {
  row: string;
  rowRaw: Buffer;
}

export interface ValidItem {
  column: string;
  colRaw: Buffer;
  value: Buffer;
  ts: number | null;
}

export interface ValidPut {
  row: string;
  rowRaw: Buffer;
  items: ValidItem[];
}

export interface ValidDelete {
  row: string;
  rowRaw: Buffer;
  columns: Buffer[] | null;
}

export function checkBatch(rows: unknown, limits: WideColumnLimits): void {
  if (!Array.isArray(rows) || rows.length === 0) throw new ShardKitError('INVALID_ARGUMENT', 'a batch needs at least one row');
  checkCount('rows in one batch', rows.length, limits.maxBatchRows);
}

export function validateRead(ds: DatasetConfig, r: GetRowRequest, limits: WideColumnLimits): ValidRead {
  if (r === null || typeof r !== 'object') throw new ShardKitError('INVALID_ARGUMENT', 'each request must be an object');
  const rowRaw = checkName('row key', r.row, limits.maxRowKeyBytes);
  return { row: r.row, rowRaw, ...readQuery(ds, r, limits) };
}

/** Puts of a batch; `maxTs` is the latest explicit timestamp allowed (clock + allowed skew). */
export function validatePuts(rows: PutRowRequest[], limits: WideColumnLimits, maxTs: number): ValidPut[] {
  let bytes = 0;
  const seen = new Set<string>();
  const out: ValidPut[] = [];
  for (const r of rows) {
    if (r === null || typeof r !== 'object') throw new ShardKitError('INVALID_ARGUMENT', 'each row must be an object');
    const rowRaw = checkName('row key', r.row, limits.maxRowKeyBytes);
    if (seen.has(r.row)) throw new ShardKitError('INVALID_ARGUMENT', `row ${JSON.stringify(r.row.slice(0, 80))} appears twice in one batch; put its items together`);
    seen.add(r.row);
    if (!Array.isArray(r.items) || r.items.length === 0) throw new ShardKitError('INVALID_ARGUMENT', 'a put needs at least one item');
    checkCount('items in one row', r.items.length, limits.maxItemsPerRow);
    const items: ValidItem[] = [];
    const explicitKeys = new Set<string>();
    for (const it of r.items) {
      if (it === null || typeof it !== 'object') throw new ShardKitError('INVALID_ARGUMENT', 'each item must be an object');
      const colRaw = checkName('column name', it.column, limits.maxColumnBytes);
      let value: Buffer;
      if (typeof it.value === 'string') {
        if (it.value.length > limits.maxValueBytes) throw tooLarge('value', Buffer.byteLength(it.value, 'utf8'), limits.maxValueBytes);
        if (LONE_SURROGATE.test(it.value)) throw new ShardKitError('INVALID_ARGUMENT', 'value is not well-formed unicode (lone surrogate); send bytes to store arbitrary data');
        value = Buffer.from(it.value, 'utf8');
      } else if (it.value instanceof Uint8Array) {
        value = Buffer.isBuffer(it.value) ? it.value : Buffer.from(it.value.buffer, it.value.byteOffset, it.value.byteLength);
      } else {
        throw new ShardKitError('INVALID_ARGUMENT', 'value must be a string or bytes');
      }
      if (value.length > limits.maxValueBytes) throw tooLarge('value', value.length, limits.maxValueBytes);
      let ts: number | null = null;
      if (it.timestamp !== undefined && it.timestamp !== null) {
        ts = checkTimestamp('timestamp', it.timestamp);
        if (ts > maxTs) throw new ShardKitError('INVALID_ARGUMENT', `timestamp ${ts} is more than ${limits.maxFutureSkewMs} ms in the future`);
        const k = `${ts}\u0000${it.column}`;
        if (explicitKeys.has(k)) throw new ShardKitError('INVALID_ARGUMENT', `column ${JSON.stringify(it.column.slice(0, 80))} has two items with timestamp ${ts}`);
        explicitKeys.add(k);
      }
      bytes += 2 * (rowRaw.length + colRaw.length + value.length) + 24;
      items.push({ column: it.column, colRaw, value, ts });
    }
    out.push({ row: r.row, rowRaw, items });
  }
  if (bytes > limits.maxBatchBytes) throw tooLarge('the write batch', bytes, limits.maxBatchBytes);
  return out;
}

export function validateDeletes(rows: DeleteRowRequest[], limits: WideColumnLimits): ValidDelete[] {
  return rows.map((r) => {
    if (r === null || typeof r !== 'object') throw new ShardKitError('INVALID_ARGUMENT', 'each row must be an object');
    const rowRaw = checkName('row key', r.row, limits.maxRowKeyBytes);
    if (r.columns === undefined || r.columns === null) return { row: r.row, rowRaw, columns: null };
    if (!Array.isArray(r.columns) || r.columns.length === 0) throw new ShardKitError('INVALID_ARGUMENT', 'columns must be a non-empty array (omit it to delete the whole row)');
    checkCount('columns in one request', r.columns.length, limits.maxItemsPerRow);
    return { row: r.row, rowRaw, columns: uniqueSorted(r.columns.map((c) => checkName('column name', c, limits.maxColumnBytes))) };
  });
}
