import { pinterestId, PINTEREST_MAX_LOCAL_ID } from '../../ids/index.js';
import type { ColumnBatch, ParquetColumn, ParquetColumnType } from '../../util/parquet-file.js';
import type { StoredMapping, StoredObject } from './export-sources.js';

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

/** One page of object rows as column arrays. Parses `data` only when fields are declared or it mentions "active" (soft delete). */
export function objectBatch(rows: readonly StoredObject[], shard: number, type: { name: string; id: number }, fields: readonly DeclaredField[]): ColumnBatch {
  const b: ColumnBatch = { id: [], shard: [], local_id: [], type: [], created_at: [], deleted: [], data: [] };
  for (const f of fields) b[f.column] = [];
  // The ID as a number where every ID of the shard is one exactly (shards below 128): the local id
  // is its low 36 bits, so it adds to the shard's first ID. A BigInt per row cost a tenth of the encoding.
  const base = pinterestId.encode({ shard, type: type.id, localId: 0 });
  const exact = base + BigInt(PINTEREST_MAX_LOCAL_ID) <= BigInt(Number.MAX_SAFE_INTEGER);
  const baseN = Number(base);
  for (const r of rows) {
    const id = exact ? baseN + r.localId : pinterestId.encode({ shard, type: type.id, localId: r.localId });
    // Buffer.includes/toString: the driver's bytes are parsed only when needed, never decoded to text otherwise.
    const parsed = fields.length > 0 || r.data.includes('"active"') ? JSON.parse(r.data.toString()) as Record<string, unknown> : undefined;
    b.id!.push(id);
    b.shard!.push(shard);
    b.local_id!.push(r.localId);
    b.type!.push(type.name);
    // Unix ms as they are: the writer takes a number for a TIMESTAMP (no Date per row).
    b.created_at!.push(r.ts);
    b.deleted!.push(parsed?.active === false);
    b.data!.push(r.data);
    for (const f of fields) b[f.column]!.push(fieldValue(parsed?.[f.name], f.type));
  }
  return b;
}

export function mappingBatch(rows: readonly StoredMapping[]): ColumnBatch {
  const b: ColumnBatch = { from_id: [], to_id: [], sequence: [] };
  for (const r of rows) {
    b.from_id!.push(r.fromId);
    b.to_id!.push(r.toId);
    b.sequence!.push(r.sequence);
  }
  return b;
}
