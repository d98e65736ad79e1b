import { movingError } from '../../topology/freeze-hold.js';
import { isFenceError } from '../../storage/fence-error.js';
import type { DatasetConfig } from '../dataset-config.js';
import type { GetRowOptions, GetRowRequest, RowResult } from '../types.js';
import { datasetTable } from './myrocks-ddl.js';
import { boundedPage, buildPageStatement, collectDirectory, collectLatest, collectPage, directoryStatement, latestStatement, liveFromTtl, needsDirectory, toColumnCells, type LatestRow, type PageRow, type RowFound, type RowRead } from './myrocks-reads.js';
import { checkBatch, validateRead, type ValidRead } from './myrocks-requests.js';
import { budgetOf, type BatchGetOptions, type ReadBudget } from '../read-budget.js';
import { cellKey, EMPTY, headKey, MyrocksRouting } from './myrocks-routing.js';

/** Get Row and its batches: one statement per page, one per host for a batch (myrocks-reads.ts builds them). */
export class MyrocksRowReads extends MyrocksRouting {
  getRow(dataset: string, row: string, options: GetRowOptions = {}): Promise<RowResult> {
    return this.track(async () => {
      const ds = await this.catalog.get(dataset);
      const v = validateRead(ds, { ...options, row }, this.limits);
      if (v.columns === null && v.versions === 1 && v.start === 0 && v.end === Infinity) return this.readLatest(ds, v, this.clock());
      return (await this.readPages(ds, [v], this.clock()))[0]!;
    });
  }

  /** One statement per host for the first page of every row; rows on one host share its snapshot. */
  batchGetRows(dataset: string, requests: GetRowRequest[], options?: BatchGetOptions): Promise<RowResult[]> {
    return this.track(async () => {
      const ds = await this.catalog.get(dataset);
      checkBatch(requests, this.limits);
      const valid = requests.map((r) => validateRead(ds, r, this.limits));
      return this.readPages(ds, valid, this.clock(), budgetOf(options, requests.length));
    });
  }

  /** The newest cell of every column of one row (page after `marker`): one statement, decoded directly. */
  protected async readLatest(ds: DatasetConfig, v: ValidRead, now: number): Promise<RowResult> {
    const shard = this.shardOf(v.row);
    const { sql, values } = latestStatement(datasetTable(shard, ds.name), headKey(v.rowRaw), v.marker, liveFromTtl(ds.ttlSeconds, now), v.limit + 1);
    return collectLatest(v.row, await this.onShard<LatestRow[]>(shard, sql, values), v.limit);
  }

  protected async readPages(ds: DatasetConfig, reads: ValidRead[], now: number, budget?: ReadBudget): Promise<RowResult[]> {
    interface State {
      v: ValidRead;
      shard: number;
      rh: Buffer;
      hh: Buffer;
      /** Named columns not looked at yet. */
      named: Buffer[] | null;
      after: Buffer | null;
      columns: Array<{ raw: Buffer; cells: import('../types.js').Cell[] }>;
      result: RowResult | null;
      /** Already read again once after meeting a fence. */
      fenceRetried: boolean;
    }
    const states: State[] = reads.map((v) => ({
      v,
      shard: this.shardOf(v.row),
      // Newest-only reads of all columns need only the head key.
      rh: v.columns === null && v.versions === 1 && v.start === 0 && v.end === Infinity ? EMPTY : cellKey(v.rowRaw),
      hh: headKey(v.rowRaw),
      named: v.columns ? (v.marker ? v.columns.filter((c) => Buffer.compare(c, v.marker!) > 0) : v.columns) : null,
      after: v.columns ? null : v.marker,
      columns: [],
      result: null,
      fenceRetried: false,
    }));
    // Rounds: the first reads every row's page; a row whose candidate columns turned out empty
    // (expired, outside the time range) while more follow needs another (rare).
    for (let round = 0; ; round++) {
      const pending = states.filter((s) => s.result === null);
      if (pending.length === 0) break;
      const byHost = new Map<string, State[]>();
      for (const s of pending) {
        const h = this.hostOf(s.shard);
        let list = byHost.get(h);
        if (!list) byHost.set(h, (list = []));
        list.push(s);
      }
      await Promise.all([...byHost].map(async ([host, list]) => {
        const rr: RowRead[] = list.map((s) => {
          // Later rounds look further ahead: their candidates were empty so far.
          const want = Math.max(s.v.limit + 1 - s.columns.length, round === 0 ? 1 : Math.min(s.v.limit + 1, 64));
          return {
            table: datasetTable(s.shard, ds.name),
            rh: s.rh,
            hh: s.hh,
            columns: s.named ? s.named.slice(0, want) : null,
            after: s.after,
            versions: s.v.versions,
            maxVersions: ds.maxVersions,
            ttlSeconds: ds.ttlSeconds,
            start: s.v.start,
            end: s.v.end,
            candidates: want,
            now,
          };
        });
        const shard = list.length === 1 ? list[0]!.shard : undefined;
        let found: RowFound[];
        try {
          found = await this.readRound(host, shard, rr, budget?.remaining());
        } catch (err) {
          // The statement met a move's fence (a carried wcNNNNN table renamed away): like a
          // single-row write, the map is re-read and the freeze waited out, and these rows are
          // read again in the next round, grouped by the new map. A read changes nothing, so
          // running it again is always safe; once per row, then SHARD_MOVING.
          if (!isFenceError(err)) throw err;
          const again = list.find((s) => s.fenceRetried);
          if (again !== undefined) throw movingError(again.shard, undefined, 0, err);
          await this.afterFence([...new Set(list.map((s) => s.shard))], host, err);
          for (const s of list) s.fenceRetried = true;
          return;
        }
        // The statement sent at most the first cell past what was left (boundedPage); counted
        // as the server counted it (the name with every cell), so a cut answer always fails here.
        if (budget !== undefined) for (const f of found) for (const c of f.columns) budget.charge(c.cells.reduce((n, cell) => n + c.raw.length + cell.value.length + 8, 0));
        list.forEach((s, i) => this.advance(s, rr[i]!, found[i]!));
      }));
    }
    return states.map((s) => s.result!);
  }

  /** One round of reads on one host: one statement, or, when columns must be listed first, two in one transaction. */
  protected async readRound(host: string, shard: number | undefined, rr: RowRead[], maxBytes?: number): Promise<RowFound[]> {
    const pageOf = (reads: RowRead[]) => (maxBytes === undefined ? buildPageStatement(reads) : boundedPage(buildPageStatement(reads), maxBytes));
    const listing = rr.filter(needsDirectory);
    if (listing.length === 0) {
      const { sql, values } = pageOf(rr);
      return collectPage(rr, await this.onHost<PageRow[]>(host, sql, values, shard));
    }
    // Columns first, then their cells: two statements, so one transaction (one snapshot).
    return this.mapped(host, shard, () => this.pools.get(host).transaction(async (q) => {
      const dir = directoryStatement(listing);
      const lists = collectDirectory(listing, (await q<{ i: number | string; col: Buffer }>(dir.sql, dir.values)).rows);
      const exhausted = new Map<RowRead, boolean>();
      listing.forEach((r, i) => {
        r.columns = lists[i]!;
        exhausted.set(r, lists[i]!.length < r.candidates);
      });
      const withColumns = rr.filter((r) => r.columns === null || r.columns.length > 0);
      const page = pageOf(withColumns);
      const rows = withColumns.length > 0 ? collectPage(withColumns, (await q<PageRow>(page.sql, page.values)).rows) : [];
      return rr.map((r) => {
        const f = rows[withColumns.indexOf(r)] ?? { looked: r.columns ?? [], exhausted: true, columns: [] };
        return exhausted.has(r) ? { ...f, looked: r.columns!, exhausted: exhausted.get(r)! } : f;
      });
    }));
  }

  /** Adds what one statement found to a row's page; sets the result once the page is complete. */
  protected advance(s: { v: ValidRead; named: Buffer[] | null; after: Buffer | null; columns: Array<{ raw: Buffer; cells: import('../types.js').Cell[] }>; result: RowResult | null }, rr: RowRead, found: RowFound): void {
    s.columns.push(...found.columns);
    const limit = s.v.limit;
    let more: boolean;
    if (s.named) {
      s.named = s.named.slice(rr.columns!.length);
      more = s.named.length > 0;
    } else {
      more = !found.exhausted;
      if (found.looked.length > 0) s.after = found.looked[found.looked.length - 1]!;
    }
    if (s.columns.length > limit) {
      const page = s.columns.slice(0, limit);
      s.result = { row: s.v.row, columns: toColumnCells(page), marker: page[limit - 1]!.raw.toString('base64url') };
    } else if (!more) {
      s.result = { row: s.v.row, columns: toColumnCells(s.columns), marker: null };
    }
  }

  // ---- writes ---------------------------------------------------------------------------------
}
