import { byteCompare } from './helpers.js';

/** A plain in-memory model of what Get Row must return. */
export class WideColumnModel {
  // row -> column -> ts -> value
  readonly rows = new Map<string, Map<string, Map<number, string>>>();
  maxVersions = 1;
  ttlSeconds = 0;

  put(row: string, column: string, ts: number, value: string): void {
    let r = this.rows.get(row);
    if (!r) this.rows.set(row, (r = new Map()));
    let c = r.get(column);
    if (!c) r.set(column, (c = new Map()));
    c.set(ts, value);
  }

  deleteRow(row: string, columns?: string[]): void {
    if (!columns) this.rows.delete(row);
    else for (const c of columns) this.rows.get(row)?.delete(c);
  }

  get(row: string, now: number, q: { columns?: string[]; versions?: number; start?: number; end?: number }): Array<[string, Array<[number, string]>]> {
    const r = this.rows.get(row);
    if (!r) return [];
    const versions = Math.min(q.versions ?? 1, this.maxVersions);
    const start = q.start ?? 0;
    const end = q.end ?? Infinity;
    const names = [...r.keys()].filter((c) => !q.columns || q.columns.includes(c)).sort(byteCompare);
    const out: Array<[string, Array<[number, string]>]> = [];
    for (const name of names) {
      const cells = [...r.get(name)!.entries()].sort((a, b) => b[0] - a[0]).slice(0, this.maxVersions);
      const live = cells
        .filter(([ts]) => this.ttlSeconds === 0 || now <= ts + this.ttlSeconds * 1000)
        .filter(([ts]) => ts >= start && ts < end)
        .slice(0, versions);
      if (live.length > 0) out.push([name, live]);
    }
    return out;
  }
}
