import type { JsonObject, JsonValue } from '../../kit/types.js';
import type { ColumnKind, RawValue, SourceColumn } from './column-kinds.js';

/** Why a value cannot become JSON (the row is skipped with this reason). */
export class RowSkip {
  constructor(readonly reason: string) {}
}

/**
 * Converts one raw column value to JSON (docs/migrate.md "From a table" has the table):
 * exact for every kind, so a migrated object holds the row byte for byte in its data.
 */
export function toJson(column: SourceColumn, raw: RawValue, parseJson: boolean): JsonValue {
  if (raw === null) return null;
  if (Buffer.isBuffer(raw)) {
    if (parseJson) return parseJsonText(column, raw.toString('utf8'));
    return raw.toString('base64');
  }
  if (parseJson) return parseJsonText(column, raw);
  return convertText(column.kind, raw);
}

function convertText(kind: ColumnKind, text: string): JsonValue {
  switch (kind) {
    case 'int':
      return Number(text);
    case 'float': {
      const n = Number(text);
      return Number.isFinite(n) ? n : text;
    }
    case 'bool':
      return text === 't' || text === 'true' || text === '1';
    case 'datetime':
      return text.replace(' ', 'T');
    case 'timestamp':
      // Sources read these in UTC: MariaDB '2026-11-25 09:10:07.5', PostgreSQL '...07.5+00'.
      return `${text.replace(' ', 'T').replace(/\+00(:00)?$/, '')}Z`;
    case 'binary':
      // PostgreSQL bytea in its hex text form (\x0a0b...).
      return text.startsWith('\\x') ? Buffer.from(text.slice(2), 'hex').toString('base64') : Buffer.from(text, 'latin1').toString('base64');
    case 'json':
      return JSON.parse(text) as JsonValue;
    default:
      return text;
  }
}

function parseJsonText(column: SourceColumn, text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch (err) {
    throw new RowSkip(`malformed JSON in column ${column.name}: ${(err as Error).message}`);
  }
}

export interface RowShape {
  columns: SourceColumn[];
  /** Index of the id column. */
  id: number;
  /** Index of the changed column. */
  changed: number;
  /** Columns whose text is parsed as JSON (--json). */
  json: ReadonlySet<string>;
  /** When set: the object's data is this column's JSON object (--data-column), not the row. */
  dataColumn?: number;
}

/**
 * The object data of a row: every column but the id (the id lives in the lookup keyspace), in
 * query order; or, with --data-column, that column's JSON object alone.
 */
export function rowData(shape: RowShape, raw: readonly RawValue[]): JsonObject {
  if (shape.dataColumn !== undefined) {
    const column = shape.columns[shape.dataColumn]!;
    const value = raw[shape.dataColumn] ?? null;
    if (value === null) throw new RowSkip(`column ${column.name} (--data-column) is NULL`);
    const parsed = toJson(column, value, true);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new RowSkip(`column ${column.name} (--data-column) holds JSON that is not an object`);
    return parsed;
  }
  const data: JsonObject = {};
  shape.columns.forEach((column, i) => {
    if (i === shape.id) return;
    data[column.name] = toJson(column, raw[i] ?? null, shape.json.has(column.name));
  });
  return data;
}

/** The lookup key of a row's id: its text (integers in decimal), or a skip for NULL/empty. */
export function rowKey(shape: RowShape, raw: readonly RawValue[]): string {
  const value = raw[shape.id] ?? null;
  if (value === null) throw new RowSkip(`NULL id (column ${shape.columns[shape.id]!.name})`);
  const key = Buffer.isBuffer(value) ? value.toString('utf8') : value;
  if (key === '') throw new RowSkip(`empty id (column ${shape.columns[shape.id]!.name})`);
  return key;
}
