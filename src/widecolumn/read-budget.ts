import { ShardKitError } from '../errors.js';
import type { RowResult } from './types.js';

/** Options of a batch read. */
export interface BatchGetOptions {
  /**
   * Most bytes (column names and cell values) the whole batch may read; past it the read stops
   * and fails with RESPONSE_TOO_LARGE, before the rest of the batch is read (#34: a row was read
   * whole before its size was measured). Unbounded when left out.
   */
  maxBytes?: number;
}

/** Rows of a bounded batch read at once: what is in flight past the budget stays small. */
export const BOUNDED_ROW_PARALLEL = 4;

/** The bytes a batch read has taken so far, against its bound. */
export class ReadBudget {
  private used = 0;

  constructor(readonly maxBytes: number, private readonly rows: number) {}

  /** Counts `bytes` more; throws once the total passes the bound. */
  charge(bytes: number): void {
    this.used += bytes;
    if (this.used > this.maxBytes) {
      throw new ShardKitError('RESPONSE_TOO_LARGE', `the ${this.rows === 1 ? "row" : `${this.rows} rows`} asked for ${this.rows === 1 ? "holds" : "hold"} more than ${this.maxBytes} bytes: ask for fewer rows, columns or versions per request`, { details: { limit: this.maxBytes } });
    }
  }

  /** Bytes left before the bound (0 when it is reached). */
  remaining(): number {
    return Math.max(0, this.maxBytes - this.used);
  }

  chargeColumn(column: { raw: Buffer; cells: ReadonlyArray<{ value: Buffer }> }): void {
    let bytes = column.raw.length;
    for (const c of column.cells) bytes += c.value.length + 8;
    this.charge(bytes);
  }
}

/** The budget of a batch, or undefined when it is unbounded. */
export function budgetOf(options: BatchGetOptions | undefined, rows: number): ReadBudget | undefined {
  const max = options?.maxBytes;
  if (max === undefined) return undefined;
  if (!Number.isSafeInteger(max) || max < 0) throw new ShardKitError('INVALID_ARGUMENT', `maxBytes must be a non-negative integer, got ${String(max)}`);
  return new ReadBudget(max, rows);
}

/** `read` over every item, at most `parallel` at once, results in order; the first failure ends it. */
export async function inGroups<T>(items: readonly T[], parallel: number, read: (item: T) => Promise<RowResult>): Promise<RowResult[]> {
  const out: RowResult[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await read(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, items.length) }, worker));
  return out;
}
