/** Public shapes of the wide-column API (library form; HTTP maps them to JSON). */

export interface PutItem {
  column: string;
  /** A string is stored as its UTF-8 bytes. */
  value: string | Uint8Array;
  /** Milliseconds; absent = server time. Older values are allowed (backfills). */
  timestamp?: number;
}

export interface PutRowRequest {
  row: string;
  items: PutItem[];
}

export interface PutRowResult {
  row: string;
  /** The server timestamp given to items without one (null when every item had one). */
  timestamp: number | null;
}

export interface GetRowOptions {
  /** Only these columns (default: all columns of the row). */
  columns?: string[];
  /** Versions per column, newest first (default 1; never more than the dataset's maxVersions). */
  versions?: number;
  /** Time range [start, end) in ms. */
  start?: number;
  end?: number;
  /** Columns per page (default 100). */
  limit?: number;
  /** From a previous page: resume right after the column it names. */
  marker?: string | null;
}

export interface GetRowRequest extends GetRowOptions {
  row: string;
}

export interface Cell {
  timestamp: number;
  value: Buffer;
}

export interface ColumnCells {
  column: string;
  cells: Cell[];
}

export interface RowResult {
  row: string;
  /** In column-name (UTF-8 byte) order. */
  columns: ColumnCells[];
  /** Null when this page is the last. */
  marker: string | null;
}

export interface DeleteRowRequest {
  row: string;
  /** Only these columns (default: the whole row). */
  columns?: string[];
}

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface ProgressEvent {
  phase: string;
  done: number;
  total: number;
}

/** A returned promise is awaited: the job pauses until it settles (a caller may throttle it). */
export type ProgressFn = (event: ProgressEvent) => void | Promise<void>;
