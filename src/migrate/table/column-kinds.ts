/**
 * What a source column holds, as far as its conversion to JSON is concerned. Each source maps
 * its driver's type codes to one of these; row-data.ts converts the raw text (or bytes) the
 * source hands over, so MariaDB and PostgreSQL rows become the same JSON.
 */
export type ColumnKind =
  /** Integers that always fit a JSON number (up to 32 bits). */
  | 'int'
  /** 64-bit integers: a JSON string of the decimal, so no digit is lost above 2^53. */
  | 'bigint'
  /** DECIMAL/NUMERIC: a JSON string, exactly as the server prints it. */
  | 'decimal'
  /** FLOAT/DOUBLE/REAL: a JSON number (NaN and ±Infinity, which JSON lacks, as strings). */
  | 'float'
  | 'bool'
  /** DATETIME / timestamp without time zone: ISO 8601 without an offset, fraction as stored. */
  | 'datetime'
  /** TIMESTAMP (MariaDB, read in UTC) / timestamptz: ISO 8601 in UTC with a trailing Z. */
  | 'timestamp'
  | 'date'
  /** Bytes (BLOB, BINARY, bytea, BIT, GEOMETRY): standard base64. */
  | 'binary'
  /** A column the server types as JSON (MySQL JSON, PostgreSQL json/jsonb): nested JSON. */
  | 'json'
  /** Everything else: the server's text form, as a JSON string. */
  | 'text';

export interface SourceColumn {
  name: string;
  kind: ColumnKind;
  /** The driver's name of the type, for messages and the docs' table. */
  typeName: string;
}

/** Column kinds that can serve as the "changed" column (ordered, comparable, read back as given). */
export const CHANGE_KINDS: ReadonlySet<ColumnKind> = new Set(['int', 'bigint', 'datetime', 'timestamp', 'date']);

/** Column kinds an id column may have (their text is the lookup key). */
export const ID_KINDS: ReadonlySet<ColumnKind> = new Set(['int', 'bigint', 'decimal', 'text']);

/** A raw value as a source hands it over: text, bytes (binary kinds), or null. */
export type RawValue = string | Buffer | null;
