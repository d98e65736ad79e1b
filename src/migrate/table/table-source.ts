import type { RawValue, SourceColumn } from './column-kinds.js';
import type { SourceEngine } from './source-url.js';

/** Where a read resumes: after this (changed, id) in (changed, id) order. */
export interface SourcePosition {
  changed: string;
  id: string;
}

export interface SourceRead {
  /** Only rows whose changed column is >= this (the high-water mark minus the overlap). */
  from?: string;
  after?: SourcePosition;
  limit: number;
}

/** Rows the migration cannot track: a NULL id or a NULL changed column. */
export interface UntrackedRows {
  count: number;
  /** Up to 20 of them, as "id=…, changed=…" text. */
  examples: string[];
}

/**
 * The old database a table migration reads: the operator's query, wrapped as a derived table
 * and read in (changed, id) order with keyset pages. The query is operator input (like a
 * config) and runs as given; the values of every page are parameters.
 */
export interface TableSource {
  readonly engine: SourceEngine;
  /** The query's columns (runs it with LIMIT 0); INVALID_ARGUMENT when it fails on the server. */
  describe(): Promise<SourceColumn[]>;
  /** Binds the id and changed columns (names checked by describe's result). */
  bind(idColumn: string, changedColumn: string): void;
  /** One page, in (changed, id) order, rows as arrays in the order of describe(). */
  read(request: SourceRead): Promise<RawValue[][]>;
  /** How many rows a pass from `from` will read (for the progress bar). */
  count(from?: string): Promise<number>;
  untracked(): Promise<UntrackedRows>;
  /** Whether the source refuses writes now (for --final), and how that was decided. */
  readOnly(): Promise<{ readOnly: boolean; how: string }>;
  close(): Promise<void>;
}

/** The query without trailing semicolons and whitespace (it becomes a derived table). */
export function cleanQuery(query: string): string {
  return query.trim().replace(/[;\s]+$/, '');
}
