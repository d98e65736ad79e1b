import { createHash } from 'node:crypto';
import { ShardKitError, isShardKitError } from '../../errors.js';
import { modShard } from '../../ids/mod-shard.js';
import type { ShardMap } from '../../topology/shard-map.js';
import { holdWhileFrozen, modShardFreeze, modShardMoving, movingError } from '../../topology/freeze-hold.js';
import { isFenceError } from '../../storage/fence-error.js';
import { HostPools } from '../../storage/sql/host-pools.js';
import type { MysqlHostAddress, MysqlStorageOptions } from '../../storage/mysql/mysql-backend.js';
import { mapMysqlError } from '../../storage/mysql/mysql-errors.js';
import { MysqlHostPool, type SqlValue } from '../../storage/mysql/mysql-host-pool.js';
import type { DatasetConfig, DatasetSettings } from '../dataset-config.js';
import { DEFAULT_LIMITS, type WideColumnLimits } from '../limits.js';
import type { DeleteRowRequest, GetRowOptions, GetRowRequest, Logger, ProgressFn, PutItem, PutRowRequest, PutRowResult, RowResult } from '../types.js';
import { MyrocksCatalog } from './myrocks-catalog.js';
import { CATALOG_SHARD, catalogDdl, datasetTable, datasetTableDdl, HEAD_NTS, NEVER_EXPIRES, shardDatabaseDdl, wcDatabaseName } from './myrocks-ddl.js';
import { buildPageStatement, collectDirectory, collectLatest, collectPage, directoryStatement, latestStatement, liveFromTtl, needsDirectory, toColumnCells, type LatestRow, type PageRow, type RowFound, type RowRead } from './myrocks-reads.js';
import type { EngineBackupReport, EngineRestoreReport, WideColumnEngine, WideColumnEngineDriver } from '../engine.js';
import { checkBackupTarget, MYROCKS_BACKUP_FORMAT, readMyrocksManifest, readRecords, shardFile, writeManifest, writeRecords, type StoredRecord } from './myrocks-backup.js';
import { exportShardsToParquet, type ShardCell } from './myrocks-export.js';
import { checkBatch, validateDeletes, validatePuts, validateRead, type ValidPut, type ValidRead } from './myrocks-requests.js';

export interface MyrocksEngineOptions {
  /** Servers by name, as in config `hosts`. */
  hosts: Record<string, MysqlHostAddress>;
  storage?: MysqlStorageOptions;
  /**
   * The current shard map (called on every operation, so a pushed change applies at once).
   * Wide-column shards are the map's mod shards: row -> md5(row key) mod modShards.count -> master.
   */
  shardMap: () => ShardMap;
  /**
   * Re-reads the shard map from the topology store now (a held write polls it, and a statement
   * that met a move's fence calls it before its one retry). Without it the engine waits for
   * `shardMap()` to change by itself (the service's watch).
   */
  refreshMap?: () => Promise<unknown>;
  /** Milliseconds since the epoch; injectable for tests. */
  clock?: () => number;
  limits?: Partial<WideColumnLimits>;
  /** How old the local copy of the dataset catalogue may get before it is reloaded (default 1000 ms). */
  catalogRefreshMs?: number;
  logger?: Logger;
}

export interface MyrocksCompactionReport {
  scannedCells: number;
  removedExpiredCells: number;
  removedExcessVersions: number;
  durationMs: number;
  [detail: string]: number;
}

interface CellRow {
  shard: number;
  values: SqlValue[];
}

const EMPTY = Buffer.alloc(0);

/** Key of a row's cells: SHA-256 of the row key. */
const cellKey = (raw: Buffer): Buffer => createHash('sha256').update(raw).digest();
/** Key of a row's head records: SHA-256 of a prefix no row key hash can equal, then the row key. */
const headKey = (raw: Buffer): Buffer => createHash('sha256').update('shardkit-wc-heads\u0000').update(raw).digest();

/**
 * The wide-column engine on MariaDB + MyRocks (docs/widecolumn.md, "One node or a fleet"): the
 * same datasets -> rows -> columns -> cells as the embedded engine, with each row on wide-column
 * shard md5(row key) mod N of the shard map's master for it. Every statement is parameterized;
 * identifiers come from validated dataset names and shard numbers only.
 *
 * Guarantees, and how they differ from the embedded engine:
 * - A Put Row (and a Delete Row) is one statement on one shard: atomic. A batch is one statement
 *   per shard it touches: atomic per shard, NOT across shards (the seed promises atomicity per row).
 * - A Get Row page is one statement (one MyRocks snapshot). A batch get sends one statement per
 *   host; rows on different hosts are read from different snapshots.
 */
export class MyrocksEngine implements WideColumnEngine {
  readonly kind = 'myrocks';
  readonly limits: WideColumnLimits;
  readonly clock: () => number;
  private readonly pools: HostPools<MysqlHostPool, MysqlHostAddress>;
  private readonly catalog: MyrocksCatalog;
  private readonly shardMap: () => ShardMap;
  private readonly refreshMap: (() => Promise<unknown>) | undefined;
  private readonly hostsDeclared: Record<string, MysqlHostAddress>;
  private readonly logger: Logger | undefined;
  private active = 0;
  private onIdle: (() => void) | null = null;
  private closing: Promise<void> | null = null;

  constructor(options: MyrocksEngineOptions) {
    const storage = {
      user: options.storage?.user ?? 'root',
      poolSize: options.storage?.poolSize ?? 10,
      connectTimeoutMs: options.storage?.connectTimeoutMs ?? 2000,
      queryTimeoutMs: options.storage?.queryTimeoutMs ?? 5000,
      password: options.storage?.password,
    };
    this.pools = new HostPools(options.hosts, (host, a) => {
      const password = a.password ?? storage.password;
      return new MysqlHostPool(host, {
        ...(a.host !== undefined ? { host: a.host } : {}),
        ...(a.port !== undefined ? { port: a.port } : {}),
        ...(a.socket !== undefined ? { socket: a.socket } : {}),
        user: a.user ?? storage.user,
        ...(password !== undefined ? { password } : {}),
        poolSize: storage.poolSize,
        connectTimeoutMs: storage.connectTimeoutMs,
        queryTimeoutMs: storage.queryTimeoutMs,
      });
    });
    this.shardMap = options.shardMap;
    this.refreshMap = options.refreshMap;
    this.hostsDeclared = options.hosts;
    this.clock = options.clock ?? Date.now;
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.logger = options.logger;
    this.catalog = new MyrocksCatalog((sql, values) => this.onShard(CATALOG_SHARD, sql, values), options.catalogRefreshMs ?? 1000);
  }

  get closed(): boolean {
    return this.closing !== null;
  }

  /** Wide-column shards (the shard map's mod shards). */
  get shards(): number {
    return this.shardMap().modShardCount;
  }

  /** The shard a row key lives on. */
  shardOf(row: string): number {
    return modShard(row, this.shards);
  }

  /** Round trips sent to each host since creation (benchmarks, tests). */
  roundTrips(): Record<string, number> {
    return this.pools.roundTrips();
  }

  close(): Promise<void> {
    if (!this.closing) {
      this.closing = (async () => {
        if (this.active > 0) await new Promise<void>((resolve) => (this.onIdle = resolve));
        await this.pools.closeAll();
      })();
    }
    return this.closing;
  }

  private async track<T>(fn: () => Promise<T>): Promise<T> {
    if (this.closing) throw new ShardKitError('CLOSED', 'the wide-column engine is closed');
    this.active++;
    try {
      return await fn();
    } finally {
      if (--this.active === 0 && this.onIdle) {
        this.onIdle();
        this.onIdle = null;
      }
    }
  }

  private hostOf(shard: number): string {
    return this.shardMap().locateModShard(shard).master;
  }

  /** One statement on the master of `shard`; driver errors become ShardKitErrors naming the shard. */
  private async onShard<T>(shard: number, sql: string, values?: SqlValue[]): Promise<T> {
    return this.fenced(shard, () => this.onHost<T>(this.hostOf(shard), sql, values, shard));
  }

  /**
   * A write to `shard` while it moves (docs/moves.md; the same hold as the object fleet's, in
   * src/topology/freeze-hold.ts): held while the shard is frozen, up to the hold budget, then
   * SHARD_MOVING; never sent to the source once the map has switched.
   */
  private async write<T>(shard: number, run: () => Promise<T>): Promise<T> {
    if (modShardFreeze(this.shardMap(), shard) !== undefined) await this.hold(shard);
    return this.fenced(shard, run);
  }

  private hold(shard: number): Promise<unknown> {
    return holdWhileFrozen({
      map: () => this.shardMap(),
      next: async (ms) => {
        await new Promise((resolve) => setTimeout(resolve, ms));
        await this.refreshMap?.().catch(() => undefined);
      },
      freezeOf: modShardFreeze,
      checkOpen: () => {
        if (this.closing) throw new ShardKitError('CLOSED', 'the wide-column engine is closed');
      },
    }, shard, true);
  }

  /**
   * Runs `run` (which routes by the map in force when it runs); when it meets a move's fence
   * (the shard's table renamed away: missingTable) or a planned failover's (readOnly) while the
   * map shows the shard moving, the map is re-read, the freeze waited out, and `run` goes once
   * more, to the new master. The fenced statement changed nothing, so that is safe. Still on the
   * same host, or fenced again: SHARD_MOVING (503, retryable).
   */
  private async fenced<T>(shard: number, run: () => Promise<T>): Promise<T> {
    const host = this.hostOf(shard);
    try {
      return await run();
    } catch (err) {
      if (!isFenceError(err)) throw err;
      await this.afterFence([shard], host, err);
      try {
        return await run();
      } catch (again) {
        if (isFenceError(again)) throw movingError(shard, undefined, 0, again);
        throw again;
      }
    }
  }

  /**
   * After a statement on `host` for `shards` met a fence: re-reads the map and waits out the
   * freeze of each shard the map shows moving off `host`. Returns when each of those has a new
   * master to go to (the others, read in the same statement, go again where they are); rethrows
   * `err` when the map shows none of them moving (a table dropped by hand, a host made read-only
   * by an operator), and SHARD_MOVING when one is still on `host` after its hold.
   */
  private async afterFence(shards: readonly number[], host: string, err: unknown): Promise<void> {
    await this.refreshMap?.().catch(() => undefined);
    const map = this.shardMap();
    const moving = shards.filter((shard) => modShardMoving(map, shard, host));
    if (moving.length === 0) throw err;
    for (const shard of moving) {
      await this.hold(shard);
      if (this.hostOf(shard) === host) throw movingError(shard, map.rangeOf(shard)?.frozen?.id, 0, err);
    }
  }

  /** One write statement on `shard`'s master, held while the shard is frozen (write()). */
  private writeShard<T>(shard: number, sql: string, values?: SqlValue[]): Promise<T> {
    return this.write(shard, () => this.onHost<T>(this.hostOf(shard), sql, values, shard));
  }

  private async onHost<T>(host: string, sql: string, values?: SqlValue[], shard?: number): Promise<T> {
    return this.mapped(host, shard, () => this.pools.get(host).query<T>(sql, values));
  }

  /**
   * Runs one statement (or read transaction), mapping driver errors. MyRocks refuses a write to a
   * record changed since the statement's snapshot ("snapshot conflict", ER_LOCK_DEADLOCK): two
   * puts to one column's head record, or a compaction meeting a put. Every statement here is
   * idempotent (upserts with GREATEST, deletes), so it is run again, a few times at most.
   */
  private async mapped<T>(host: string, shard: number | undefined, fn: () => Promise<T>): Promise<T> {
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          return await fn();
        } catch (err) {
          if ((err as { code?: string }).code !== 'ER_LOCK_DEADLOCK' || attempt >= 8 || this.closing) throw err;
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
        }
      }
    } catch (err) {
      if (isShardKitError(err)) throw err;
      const e = mapMysqlError(err, { host });
      const where = shard === undefined ? `wide-column host ${host}` : `wide-column shard ${shard} (${wcDatabaseName(shard)} on ${host})`;
      throw new ShardKitError(e.code, `${where}: ${e.message.replace(/^host \S+ /, '')}`, { cause: err, details: { ...e.details, ...(shard !== undefined ? { shard } : {}) } });
    }
  }

  // ---- shards and datasets --------------------------------------------------------------------

  /**
   * Creates every wide-column shard database with the tables of every dataset, and the catalogue
   * (`shardkit init`). CREATE ... IF NOT EXISTS only: safe to run again; hosts in parallel.
   */
  async createShards(options: { onProgress?: ProgressFn } = {}): Promise<{ shards: number; tables: number }> {
    return this.track(async () => {
      await this.onShard(CATALOG_SHARD, shardDatabaseDdl(CATALOG_SHARD));
      await this.onShard(CATALOG_SHARD, catalogDdl());
      const datasets = await this.catalog.list();
      let done = 0;
      let tables = 0;
      await this.eachShardByHost(async (shard) => {
        await this.onShard(shard, shardDatabaseDdl(shard));
        for (const d of datasets) {
          await this.onShard(shard, datasetTableDdl(shard, d.name));
          tables++;
        }
        options.onProgress?.({ phase: 'wide-column shards', done: ++done, total: this.shards });
      });
      return { shards: this.shards, tables };
    });
  }

  /** Runs `fn` for every shard: shards of one host one after another, hosts in parallel. */
  private async eachShardByHost(fn: (shard: number) => Promise<void>): Promise<void> {
    const byHost = new Map<string, number[]>();
    for (let s = 0; s < this.shards; s++) {
      const h = this.hostOf(s);
      let list = byHost.get(h);
      if (!list) byHost.set(h, (list = []));
      list.push(s);
    }
    await Promise.all([...byHost.values()].map(async (list) => {
      for (const s of list) await fn(s);
    }));
  }

  listDatasets(): Promise<DatasetConfig[]> {
    return this.track(() => this.catalog.list());
  }

  getDataset(name: string): Promise<DatasetConfig> {
    return this.track(async () => ({ ...(await this.catalog.get(name)) }));
  }

  putDataset(name: string, settings: DatasetSettings = {}): Promise<{ dataset: DatasetConfig; created: boolean }> {
    return this.track(async () => {
      const r = await this.catalog.put(name, settings, this.clock(), () =>
        this.eachShardByHost(async (shard) => {
          await this.onShard(shard, shardDatabaseDdl(shard));
          await this.onShard(shard, datasetTableDdl(shard, name));
        }));
      this.logger?.info({ dataset: name, maxVersions: r.dataset.maxVersions, ttlSeconds: r.dataset.ttlSeconds, created: r.created }, 'wide-column dataset saved');
      return r;
    });
  }

  // ---- reads ----------------------------------------------------------------------------------

  getRow(dataset: string, row: string, options: GetRowOptions = {}): Promise<RowResult> {
    return this.track(async () => {
      const ds = await this.catalog.get(dataset);
      const v = validateRead(ds, { ...options, row }, this.limits);
      if (v.columns === null && v.versions === 1 && v.start === 0 && v.end === Infinity) return this.readLatest(ds, v, this.clock());
      return (await this.readPages(ds, [v], this.clock()))[0]!;
    });
  }

  /** One statement per host for the first page of every row; rows on one host share its snapshot. */
  batchGetRows(dataset: string, requests: GetRowRequest[]): Promise<RowResult[]> {
    return this.track(async () => {
      const ds = await this.catalog.get(dataset);
      checkBatch(requests, this.limits);
      const valid = requests.map((r) => validateRead(ds, r, this.limits));
      return this.readPages(ds, valid, this.clock());
    });
  }

  /** The newest cell of every column of one row (page after `marker`): one statement, decoded directly. */
  private async readLatest(ds: DatasetConfig, v: ValidRead, now: number): Promise<RowResult> {
    const shard = this.shardOf(v.row);
    const { sql, values } = latestStatement(datasetTable(shard, ds.name), headKey(v.rowRaw), v.marker, liveFromTtl(ds.ttlSeconds, now), v.limit + 1);
    return collectLatest(v.row, await this.onShard<LatestRow[]>(shard, sql, values), v.limit);
  }

  private async readPages(ds: DatasetConfig, reads: ValidRead[], now: number): Promise<RowResult[]> {
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
          found = await this.readRound(host, shard, rr);
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
        list.forEach((s, i) => this.advance(s, rr[i]!, found[i]!));
      }));
    }
    return states.map((s) => s.result!);
  }

  /** One round of reads on one host: one statement, or, when columns must be listed first, two in one transaction. */
  private async readRound(host: string, shard: number | undefined, rr: RowRead[]): Promise<RowFound[]> {
    const listing = rr.filter(needsDirectory);
    if (listing.length === 0) {
      const { sql, values } = buildPageStatement(rr);
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
      const page = buildPageStatement(withColumns);
      const rows = withColumns.length > 0 ? collectPage(withColumns, (await q<PageRow>(page.sql, page.values)).rows) : [];
      return rr.map((r) => {
        const f = rows[withColumns.indexOf(r)] ?? { looked: r.columns ?? [], exhausted: true, columns: [] };
        return exhausted.has(r) ? { ...f, looked: r.columns!, exhausted: exhausted.get(r)! } : f;
      });
    }));
  }

  /** Adds what one statement found to a row's page; sets the result once the page is complete. */
  private advance(s: { v: ValidRead; named: Buffer[] | null; after: Buffer | null; columns: Array<{ raw: Buffer; cells: import('../types.js').Cell[] }>; result: RowResult | null }, rr: RowRead, found: RowFound): void {
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

  putRow(dataset: string, row: string, items: PutItem[]): Promise<PutRowResult> {
    return this.batchPutRows(dataset, [{ row, items }]).then((r) => r[0]!);
  }

  /** One INSERT per shard touched (atomic per shard), shards in parallel. */
  batchPutRows(dataset: string, rows: PutRowRequest[]): Promise<PutRowResult[]> {
    return this.track(async () => {
      const ds = await this.catalog.get(dataset);
      checkBatch(rows, this.limits);
      const now = this.clock();
      const valid = validatePuts(rows, this.limits, now + this.limits.maxFutureSkewMs);
      const { results, cells } = this.stamp(ds, valid, now);
      const byShard = new Map<number, SqlValue[][]>();
      for (const c of cells) {
        let list = byShard.get(c.shard);
        if (!list) byShard.set(c.shard, (list = []));
        list.push(c.values);
      }
      await Promise.all([...byShard].map(([shard, list]) => this.writeShard(shard,
        // Cells overwrite; a head record takes the put's cell only when it is at least as new
        // (assignments run left to right: v and exp compare with the old hts).
        `INSERT INTO ${datasetTable(shard, ds.name)} (rh, col, nts, row_key, v, exp, hts) VALUES ${list.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}
         ON DUPLICATE KEY UPDATE v = IF(nts = ${HEAD_NTS} AND VALUES(hts) < hts, v, VALUES(v)), exp = IF(nts = ${HEAD_NTS} AND VALUES(hts) < hts, exp, VALUES(exp)), hts = GREATEST(hts, VALUES(hts))`, list.flat())));
      return results;
    });
  }

  /**
   * Server timestamps (clock time; repeats of a column in one call get consecutive ones, later
   * item newer) and each cell's MyRocks expiry. The expiry is in the server's time: the cell's
   * remaining life by our clock, added to the wall clock, rounded up, plus a second, so MyRocks
   * never drops a cell before reads stop returning it (an injected test clock keeps working too).
   */
  private stamp(ds: DatasetConfig, puts: ValidPut[], now: number): { results: PutRowResult[]; cells: CellRow[] } {
    const results: PutRowResult[] = [];
    const cells: CellRow[] = [];
    const wall = Date.now();
    for (const p of puts) {
      const shard = this.shardOf(p.row);
      const rh = cellKey(p.rowRaw);
      const hh = headKey(p.rowRaw);
      const repeats = new Map<string, number>();
      let server = false;
      const seen = new Map<string, number>();
      const heads = new Map<string, SqlValue[]>();
      for (const it of p.items) {
        let ts = it.ts;
        if (ts === null) {
          server = true;
          const n = (repeats.get(it.column) ?? -1) + 1;
          repeats.set(it.column, n);
          ts = now + n;
        }
        const exp = ds.ttlSeconds > 0 ? BigInt(Math.ceil((wall + ts + ds.ttlSeconds * 1000 - now) / 1000) + 1) : NEVER_EXPIRES;
        // The same (column, timestamp) twice in one call: the later item wins, as one INSERT would not allow.
        const key = `${it.column}\u0000${ts}`;
        const at = seen.get(key);
        const values: SqlValue[] = [rh, it.colRaw, -ts, p.rowRaw, it.value, exp < 1n ? 1n : exp, 0];
        if (at !== undefined) cells[at] = { shard, values };
        else {
          seen.set(key, cells.length);
          cells.push({ shard, values });
        }
        const head = heads.get(it.column);
        if (!head || (head[6] as number) <= ts) heads.set(it.column, [hh, it.colRaw, HEAD_NTS, p.rowRaw, it.value, values[5]!, ts]);
      }
      for (const values of heads.values()) cells.push({ shard, values });
      results.push({ row: p.row, timestamp: server ? now : null });
    }
    return { results, cells };
  }

  deleteRow(dataset: string, row: string, columns?: string[]): Promise<void> {
    return this.batchDeleteRows(dataset, [columns === undefined ? { row } : { row, columns }]);
  }

  /** One DELETE per shard touched (atomic per shard). */
  batchDeleteRows(dataset: string, rows: DeleteRowRequest[]): Promise<void> {
    return this.track(async () => {
      const ds = await this.catalog.get(dataset);
      checkBatch(rows, this.limits);
      const valid = validateDeletes(rows, this.limits);
      const byShard = new Map<number, { where: string[]; values: SqlValue[] }>();
      for (const d of valid) {
        const shard = this.shardOf(d.row);
        let w = byShard.get(shard);
        if (!w) byShard.set(shard, (w = { where: [], values: [] }));
        // Cells and head records in one statement.
        if (d.columns === null) {
          w.where.push('rh IN (?, ?)');
          w.values.push(cellKey(d.rowRaw), headKey(d.rowRaw));
        } else {
          w.where.push(`(rh IN (?, ?) AND col IN (${d.columns.map(() => '?').join(', ')}))`);
          w.values.push(cellKey(d.rowRaw), headKey(d.rowRaw), ...d.columns);
        }
      }
      await Promise.all([...byShard].map(([shard, w]) => this.writeShard(shard, `DELETE FROM ${datasetTable(shard, ds.name)} WHERE ${w.where.join(' OR ')}`, w.values)));
    });
  }

  // ---- compaction -----------------------------------------------------------------------------

  /**
   * Removes, shard by shard, cells no read can return: expired ones (MyRocks's TTL drops them too,
   * in its own compactions) and versions beyond maxVersions. Each DELETE decides what to remove
   * inside its own statement, from the cells as they are then: a concurrent put only adds cells
   * (ranks grow, never shrink) and time only expires more, so nothing a read could return goes.
   * Head records are left alone: each carries its newest cell's expiry, so MyRocks drops it
   * exactly when the whole column has expired, and a put moves it forward atomically.
   */
  compact(options: { onProgress?: ProgressFn } = {}): Promise<MyrocksCompactionReport> {
    return this.track(async () => {
      const began = Date.now();
      const report: MyrocksCompactionReport = { scannedCells: 0, removedExpiredCells: 0, removedExcessVersions: 0, skippedColumns: 0, durationMs: 0 };
      const datasets = await this.catalog.list();
      let done = 0;
      const total = datasets.length * this.shards;
      for (const ds of datasets) {
        await this.eachShardByHost(async (shard) => {
          await this.compactShard(ds, shard, report);
          options.onProgress?.({ phase: `compact ${ds.name}`, done: ++done, total });
        });
      }
      report.durationMs = Date.now() - began;
      return report;
    });
  }

  /**
   * One shard table: one scan finds the (row, column) pairs with something to remove, then each is
   * cleaned by its own small DELETEs, each deciding from the cells as they are when it runs. Small
   * statements matter: a DELETE meeting a cell changed since it began fails with a snapshot
   * conflict (that is what keeps a column deleted and backfilled meanwhile safe) and is run again;
   * a pair still conflicting after the retries is left for the next run (skippedColumns).
   */
  private async compactShard(ds: DatasetConfig, shard: number, report: MyrocksCompactionReport): Promise<void> {
    const t = datasetTable(shard, ds.name);
    const expiredAbove = ds.ttlSeconds > 0 ? -(this.clock() - ds.ttlSeconds * 1000) : null;
    const groups = await this.onShard<Array<{ rh: Buffer; col: Buffer; n: string | number; expired: string | number }>>(shard,
      `SELECT rh, col, COUNT(*) AS n, SUM(nts > ?) AS expired FROM ${t} WHERE nts <= 0 GROUP BY rh, col`, [expiredAbove ?? 1]);
    for (const g of groups) {
      report.scannedCells += Number(g.n);
      const excess = Number(g.n) > ds.maxVersions;
      if (!excess && !(Number(g.expired) > 0)) continue;
      try {
        if (expiredAbove !== null && Number(g.expired) > 0) {
          const r = await this.onShard<{ affectedRows: number }>(shard, `DELETE FROM ${t} WHERE rh = ? AND col = ? AND nts > ? AND nts <= 0`, [g.rh, g.col, expiredAbove]);
          report.removedExpiredCells += r.affectedRows;
        }
        if (excess) {
          // Older than the maxVersions-th newest cell, all decided inside this one statement.
          const r = await this.onShard<{ affectedRows: number }>(shard,
            `DELETE FROM ${t} WHERE rh = ? AND col = ? AND nts <= 0 AND nts > (SELECT k.nts FROM (SELECT nts FROM ${t} WHERE rh = ? AND col = ? AND nts <= 0 ORDER BY nts LIMIT 1 OFFSET ${ds.maxVersions - 1}) k)`,
            [g.rh, g.col, g.rh, g.col]);
          report.removedExcessVersions += r.affectedRows;
        }
      } catch (err) {
        if (!isShardKitError(err, 'SHARD_UNAVAILABLE') || err.details?.driverCode !== 'ER_LOCK_DEADLOCK') throw err;
        report.skippedColumns++;
      }
    }
  }

  // ---- export, backup, restore ----------------------------------------------------------------

  /** Shards grouped by the host to read them from: the slave when the map names one that `hosts` declares (backups), else the master. */
  private shardsByHost(fromSlave: boolean): Map<string, number[]> {
    const map = this.shardMap();
    const out = new Map<string, number[]>();
    for (let s = 0; s < map.modShardCount; s++) {
      const loc = map.locateModShard(s);
      const host = fromSlave && loc.slave !== undefined && Object.hasOwn(this.hostsDeclared, loc.slave) ? loc.slave : loc.master;
      let list = out.get(host);
      if (!list) out.set(host, (list = []));
      list.push(s);
    }
    return out;
  }

  /** Runs `fn` on each host inside one read transaction (one MyRocks snapshot per host), hosts one after another. */
  private async perHostSnapshot(fromSlave: boolean, fn: (host: string, shards: number[], q: <R>(sql: string, values?: SqlValue[]) => Promise<R>) => Promise<void>): Promise<void> {
    for (const [host, shards] of this.shardsByHost(fromSlave)) {
      await this.mapped(host, undefined, () => this.pools.get(host).transaction((run) => fn(host, shards, async <R>(sql: string, values?: SqlValue[]) => (await run<R>(sql, values)).rows as unknown as R)));
    }
  }

  /** The dataset's live cells from every shard into one Parquet file (each host read from one snapshot). */
  exportParquet(dataset: string, file: string, options: { overwrite?: boolean; onProgress?: ProgressFn } = {}): Promise<import('../engine.js').EngineExportReport> {
    return this.track(async () => {
      const ds = await this.catalog.get(dataset);
      const report = await exportShardsToParquet(ds, file, this.clock(), async (onShard) => {
        await this.perHostSnapshot(false, async (_host, shards, q) => {
          for (const shard of shards) {
            await onShard(shard, await q<ShardCell[]>(`SELECT row_key, col, nts, v FROM ${datasetTable(shard, ds.name)} WHERE nts <= 0 ORDER BY rh, col, nts`));
          }
        });
        return { shards: this.shards };
      }, options);
      this.logger?.info({ ...report }, 'wide-column export written');
      return report;
    });
  }

  /**
   * A logical backup of every dataset (myrocks-backup.ts): each host read from one snapshot, from
   * the slave when the shard map names one (the master then serves traffic undisturbed), so the
   * backup is consistent per host, and as fresh as the slave.
   */
  backup(dir: string, options: { onProgress?: ProgressFn } = {}): Promise<EngineBackupReport> {
    return this.track(async () => {
      checkBackupTarget(dir);
      const datasets = await this.catalog.list();
      const hosts: Record<string, { snapshotAt: number; shards: number[] }> = {};
      let records = 0;
      let bytes = 0;
      let files = 0;
      let done = 0;
      const snapshotAt = this.clock();
      await this.perHostSnapshot(true, async (host, shards, q) => {
        hosts[host] = { snapshotAt: this.clock(), shards };
        for (const shard of shards) {
          for (const d of datasets) {
            const rows = await q<StoredRecord[]>(`SELECT rh, col, nts, row_key, v, exp, hts FROM ${datasetTable(shard, d.name)} ORDER BY rh, col, nts`);
            if (rows.length === 0) continue;
            bytes += await writeRecords(shardFile(dir, wcDatabaseName(shard), d.name), rows);
            records += rows.length;
            files++;
          }
          options.onProgress?.({ phase: 'backup', done: ++done, total: this.shards });
        }
      });
      writeManifest(dir, { format: MYROCKS_BACKUP_FORMAT, shards: this.shards, datasets, hosts, records });
      return { dir, records, bytes, files: files + 1, snapshotAt };
    });
  }

  /** Restores a backup into a fleet whose catalogue is empty (restore is offline). */
  restore(dir: string, options: { onProgress?: ProgressFn } = {}): Promise<EngineRestoreReport> {
    return this.track(async () => {
      const began = Date.now();
      const m = readMyrocksManifest(dir);
      if (m.shards !== this.shards) throw new ShardKitError('INVALID_ARGUMENT', `the backup in ${dir} has ${m.shards} wide-column shards; this fleet has ${this.shards}`);
      await this.onShard(CATALOG_SHARD, shardDatabaseDdl(CATALOG_SHARD));
      await this.onShard(CATALOG_SHARD, catalogDdl());
      if ((await this.catalog.count()) > 0) throw new ShardKitError('ALREADY_EXISTS', 'the wide-column fleet already has datasets; restore needs an empty one');
      let records = 0;
      let bytes = 0;
      let files = 0;
      let done = 0;
      for (const d of m.datasets) {
        await this.catalog.restoreDataset(d);
        await this.eachShardByHost(async (shard) => {
          await this.onShard(shard, shardDatabaseDdl(shard));
          await this.onShard(shard, datasetTableDdl(shard, d.name));
          const file = shardFile(dir, wcDatabaseName(shard), d.name);
          let chunk: Array<Buffer | string>[] = [];
          const flush = async () => {
            if (chunk.length === 0) return;
            await this.onShard(shard, `INSERT INTO ${datasetTable(shard, d.name)} (rh, col, nts, row_key, v, exp, hts) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`, chunk.flat());
            records += chunk.length;
            chunk = [];
          };
          let any = false;
          for await (const rec of readRecords(file)) {
            any = true;
            bytes += rec.reduce((n: number, x) => n + (typeof x === 'string' ? x.length : x.length), 0);
            chunk.push(rec);
            if (chunk.length >= 500) await flush();
          }
          await flush();
          if (any) files++;
        });
        await this.catalog.markReady(d.name);
        options.onProgress?.({ phase: 'restore', done: ++done, total: m.datasets.length });
      }
      return { records, bytes, files, durationMs: Date.now() - began };
    });
  }
}

/** Opens MyRocks engines over a fleet, and restores backups into it (the fleet's catalogue must be empty). */
export function myrocksDriver(options: MyrocksEngineOptions): WideColumnEngineDriver {
  return {
    kind: 'myrocks',
    open: async () => new MyrocksEngine(options),
    restore: async (dir, restoreOptions) => {
      const engine = new MyrocksEngine(options);
      try {
        return await engine.restore(dir, restoreOptions);
      } finally {
        await engine.close();
      }
    },
  };
}
