/**
 * The one in-memory oracle of the wide-column read rules (docs/widecolumn.md: versions, the
 * maxVersions rank counted from the newest stored cell whatever range is asked, TTL, start/end,
 * column order), used by the conformance model test and by the embedded engine's own tests.
 */
import type { GetRowOptions } from '../../src/widecolumn/types.js';

export type Cells = Array<[number, string]>;

/** UTF-8 byte order: the order columns come back in. */
export function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** row -> column -> timestamp -> value. maxVersions and ttlSeconds follow the dataset's settings (tests change them). */
export class WideColumnOracle {
  readonly rows = new Map<string, Map<string, Map<number, string>>>();
  constructor(public maxVersions = 1, public ttlSeconds = 0) {}

  put(row: string, column: string, ts: number, value: string): void {
    let r = this.rows.get(row);
    if (!r) this.rows.set(row, (r = new Map()));
    let c = r.get(column);
    if (!c) r.set(column, (c = new Map()));
    c.set(ts, value);
  }

  /** Delete Row: the named columns, or the whole row. */
  delete(row: string, columns?: string[]): void {
    if (!columns) this.rows.delete(row);
    else for (const c of columns) this.rows.get(row)?.delete(c);
  }

  /** One cell gone (what compaction removes). */
  removeCell(row: string, column: string, ts: number): void {
    this.rows.get(row)?.get(column)?.delete(ts);
  }

  get(row: string, now: number, q: Pick<GetRowOptions, 'columns' | 'versions' | 'start' | 'end'>): Array<[string, Cells]> {
    const r = this.rows.get(row);
    if (!r) return [];
    const versions = Math.min(q.versions ?? 1, this.maxVersions);
    const start = q.start ?? 0;
    const end = q.end ?? Infinity;
    const names = [...r.keys()].filter((c) => !q.columns || q.columns.includes(c)).sort(byteOrder);
    const out: Array<[string, Cells]> = [];
    for (const name of names) {
      // Ranks count from the newest stored cell, whatever range is asked; expired cells are never returned.
      const cells = [...r.get(name)!.entries()].sort((a, b) => b[0] - a[0]).slice(0, this.maxVersions);
      const live = cells.filter(([ts]) => (this.ttlSeconds === 0 || now <= ts + this.ttlSeconds * 1000) && ts >= start && ts < end).slice(0, versions);
      if (live.length > 0) out.push([name, live]);
    }
    return out;
  }
}
