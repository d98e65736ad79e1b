import { pinterestId, PINTEREST_MAX_LOCAL_ID } from '../../ids/index.js';
import type { ColumnBatch, ParquetColumn, ParquetColumnType } from '../../util/parquet-file.js';
import type { ObjectPage, StoredMapping, StoredObject } from './export-sources.js';

/** A declared field of a type (its dataSchema's top-level scalar properties), flattened into a column `data_<name>`. */
export interface DeclaredField {
  name: string;
  column: string;
  type: 'STRING' | 'INT64' | 'DOUBLE' | 'BOOLEAN';
}

const JSON_TYPES: Record<string, DeclaredField['type']> = { string: 'STRING', integer: 'INT64', number: 'DOUBLE', boolean: 'BOOLEAN' };
const COLUMN_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * The fields a type's JSON Schema declares at its top level with one scalar type (`"type":
 * "string"`, or `["integer", "null"]`): analytics engines read them as typed columns without
 * parsing `data`. Other properties (objects, arrays, unions of types) stay in `data` only.
 */
export function declaredFields(dataSchema: Record<string, unknown> | undefined): DeclaredField[] {
  const props = dataSchema?.properties;
  if (props === null || typeof props !== 'object') return [];
  const out: DeclaredField[] = [];
  for (const [name, spec] of Object.entries(props as Record<string, unknown>)) {
    if (!COLUMN_NAME.test(name) || spec === null || typeof spec !== 'object') continue;
    const declared = (spec as { type?: unknown }).type;
    const types = (Array.isArray(declared) ? declared : [declared]).filter((t) => t !== 'null');
    const type = types.length === 1 ? JSON_TYPES[String(types[0])] : undefined;
    if (type !== undefined) out.push({ name, column: `data_${name}`, type });
  }
  return out;
}

/**
 * Columns of an object export: the ID, where it lives, its creation time and data. The ID is INT64
 * only: IDs stay below 2^62 (SPEC §2), which every engine reads exactly; a decimal string copy
 * cost a fifth of the export's time for nothing a reader needs.
 */
export function objectColumns(fields: readonly DeclaredField[]): ParquetColumn[] {
  return [
    { name: 'id', type: 'INT64' },
    { name: 'shard', type: 'INT32' },
    { name: 'local_id', type: 'INT64' },
    { name: 'type', type: 'STRING' },
    { name: 'created_at', type: 'TIMESTAMP' },
    { name: 'deleted', type: 'BOOLEAN' },
    { name: 'data', type: 'STRING', unique: true },
    ...fields.map((f) => ({ name: f.column, type: f.type as ParquetColumnType, nullable: true })),
  ];
}

export const MAPPING_COLUMNS: ParquetColumn[] = [
  { name: 'from_id', type: 'INT64' },
  { name: 'to_id', type: 'INT64' },
  { name: 'sequence', type: 'INT64' },
];

/** A value of a declared field as its column takes it; null when the stored data does not match the declaration (data written before it). */
function fieldValue(v: unknown, type: DeclaredField['type']): unknown {
  switch (type) {
    case 'STRING': return typeof v === 'string' ? v : null;
    case 'BOOLEAN': return typeof v === 'boolean' ? v : null;
    case 'DOUBLE': return typeof v === 'number' ? v : null;
    case 'INT64': return typeof v === 'number' && Number.isSafeInteger(v) ? BigInt(v) : null;
  }
}

const ACTIVE_TEXT = '"active"';
const ACTIVE_BYTES = Buffer.from(ACTIVE_TEXT);
const ACTIVE_OPEN = Buffer.from('"active');

/** Rows of an ObjectPage whose data mentions "active": one search over the page's bytes, not one per row. */
function mentionsActive(page: ObjectPage): Uint8Array {
  const hit = new Uint8Array(page.count);
  const bytes = page.data.plain();
  const offsets = page.data.offsets;
  // Without the closing quote: searched 3.5 times faster (its last byte is rarer in JSON); a
  // longer key that starts so ("actives") is only a candidate parsed for nothing.
  for (let at = bytes.indexOf(ACTIVE_OPEN); at >= 0; at = bytes.indexOf(ACTIVE_OPEN, at + 1)) {
    // The last value starting at or before the hit. A match across a value's end and the next
    // length prefix only costs a parse: candidates are parsed, never taken as deleted.
    let lo = 0;
    let hi = page.count - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (offsets[mid]! <= at) lo = mid;
      else hi = mid - 1;
    }
    hit[lo] = 1;
  }
  return hit;
}

/**
 * One page of object rows as column arrays. Parses `data` only when fields are declared or it
 * mentions "active" (soft delete). A page of rows keeps each data as it came (text or bytes); an
 * ObjectPage's data stays in its PLAIN buffer.
 */
export function objectBatch(page: readonly StoredObject[] | ObjectPage, shard: number, type: { name: string; id: number }, fields: readonly DeclaredField[]): ColumnBatch {
  const rows = Array.isArray(page) ? page as readonly StoredObject[] : undefined;
  const cols = rows === undefined ? page as ObjectPage : undefined;
  const n = rows?.length ?? cols!.count;
  // Numbers in typed arrays (the binary COPY's columns as they are): no array of n values for the collector.
  const base = pinterestId.encode({ shard, type: type.id, localId: 0 });
  const exact = base + BigInt(PINTEREST_MAX_LOCAL_ID) <= BigInt(Number.MAX_SAFE_INTEGER);
  const id: unknown[] | Float64Array = exact ? new Float64Array(n) : new Array(n);
  const deleted: boolean[] = new Array(n);
  const localIds = cols !== undefined ? cols.localId.subarray(0, n) : new Float64Array(n);
  const created = cols !== undefined ? cols.ts.subarray(0, n) : new Float64Array(n);
  const declared: unknown[][] = fields.map(() => new Array(n));
  // The ID as a number where every ID of the shard is one exactly (shards below 128): the local id
  // is its low 36 bits, so it adds to the shard's first ID. A BigInt per row cost a tenth of the encoding.
  const baseN = Number(base);
  const active = cols !== undefined && fields.length === 0 ? mentionsActive(cols) : undefined;
  for (let i = 0; i < n; i++) {
    const r = rows?.[i];
    const localId = r !== undefined ? r.localId : cols!.localId[i]!;
    id[i] = exact ? baseN + localId : pinterestId.encode({ shard, type: type.id, localId });
    if (r !== undefined) {
      localIds[i] = localId;
      // Unix ms as they are: the writer takes a number for a TIMESTAMP (no Date per row).
      created[i] = r.ts;
    }
    // The driver's bytes are parsed only when needed, never decoded to text otherwise.
    const parse = fields.length > 0 || (r !== undefined ? (typeof r.data === 'string' ? r.data.includes(ACTIVE_TEXT) : r.data.includes(ACTIVE_BYTES)) : active![i] === 1);
    const parsed = parse ? JSON.parse((r !== undefined ? r.data : cols!.data.value(i)).toString()) as Record<string, unknown> : undefined;
    deleted[i] = parsed?.active === false;
    for (const [k, f] of fields.entries()) declared[k]![i] = fieldValue(parsed?.[f.name], f.type);
  }
  const b: ColumnBatch = {
    id,
    shard: new Array<number>(n).fill(shard),
    local_id: localIds,
    type: new Array<string>(n).fill(type.name),
    created_at: created,
    deleted,
    data: rows !== undefined ? rows.map((r) => r.data) : cols!.data,
  };
  for (const [k, f] of fields.entries()) b[f.column] = declared[k]!;
  return b;
}

export function mappingBatch(rows: readonly StoredMapping[]): ColumnBatch {
  return { from_id: rows.map((r) => r.fromId), to_id: rows.map((r) => r.toId), sequence: rows.map((r) => r.sequence) };
}
