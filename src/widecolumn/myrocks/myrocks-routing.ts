import { createHash } from 'node:crypto';
import { ShardKitError, isShardKitError } from '../../errors.js';
import { modShard } from '../../ids/mod-shard.js';
import type { ShardMap } from '../../topology/shard-map.js';
import { holdWhileFrozen, modShardFreeze, modShardMoving, movingError } from '../../topology/freeze-hold.js';
import { fencedError, isFenceError } from '../../storage/fence-error.js';
import { HostPools } from '../../storage/sql/index.js';
import { mapMysqlError, MysqlHostPool, type MysqlHostAddress, type MysqlStorageOptions, type SqlValue } from '../../storage/mysql/index.js';
import type { DatasetConfig, DatasetSettings } from '../dataset-config.js';
import { DEFAULT_LIMITS, type WideColumnLimits } from '../limits.js';
import type { Logger, ProgressFn } from '../types.js';
import { MyrocksCatalog } from './myrocks-catalog.js';
import { CATALOG_SHARD, catalogDdl, datasetTableDdl, shardDatabaseDdl, wcDatabaseName } from './myrocks-ddl.js';
import { poolTarget } from '../../storage/host-address.js';

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

export interface CellRow {
  shard: number;
  values: SqlValue[];
}

export const EMPTY = Buffer.alloc(0);

/** Key of a row's cells: SHA-256 of the row key. */
export const cellKey = (raw: Buffer): Buffer => createHash('sha256').update(raw).digest();
/** Key of a row's head records: SHA-256 of a prefix no row key hash can equal, then the row key. */
export const headKey = (raw: Buffer): Buffer => createHash('sha256').update('shardkit-wc-heads\u0000').update(raw).digest();

/**
 * Where a MyRocks engine statement goes: host pools, the shard map, the hold while a shard is
 * frozen and the retry after a move's fence (the fence check shared with the kit:
 * storage/fence-error.ts), the shards' creation and the catalogue. myrocks-row-reads.ts,
 * myrocks-row-writes.ts and myrocks-engine.ts build on it.
 */
export class MyrocksRouting {
  readonly limits: WideColumnLimits;

  readonly clock: () => number;

  protected readonly pools: HostPools<MysqlHostPool, MysqlHostAddress>;

  protected readonly catalog: MyrocksCatalog;

  protected readonly shardMap: () => ShardMap;

  protected readonly refreshMap: (() => Promise<unknown>) | undefined;

  protected readonly hostsDeclared: Record<string, MysqlHostAddress>;

  protected readonly logger: Logger | undefined;

  protected active = 0;

  protected onIdle: (() => void) | null = null;

  protected closing: Promise<void> | null = null;

  constructor(options: MyrocksEngineOptions) {
    const storage = {
      user: options.storage?.user ?? 'root',
      poolSize: options.storage?.poolSize ?? 10,
      connectTimeoutMs: options.storage?.connectTimeoutMs ?? 2000,
      queryTimeoutMs: options.storage?.queryTimeoutMs ?? 5000,
      password: options.storage?.password,
    };
    this.pools = new HostPools(options.hosts, (host, a) => {
      return new MysqlHostPool(host, {
        ...poolTarget(a, storage),
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

  protected async track<T>(fn: () => Promise<T>): Promise<T> {
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

  protected hostOf(shard: number): string {
    return this.shardMap().locateModShard(shard).master;
  }

  /** One statement on the master of `shard`; driver errors become ShardKitErrors naming the shard. */
  protected async onShard<T>(shard: number, sql: string, values?: SqlValue[]): Promise<T> {
    return this.fenced(shard, () => this.onHost<T>(this.hostOf(shard), sql, values, shard));
  }

  /**
   * A write to `shard` while it moves (docs/moves.md; the same hold as the object fleet's, in
   * src/topology/freeze-hold.ts): held while the shard is frozen, up to the hold budget, then
   * SHARD_MOVING; never sent to the source once the map has switched.
   */
  protected async write<T>(shard: number, run: () => Promise<T>): Promise<T> {
    if (modShardFreeze(this.shardMap(), shard) !== undefined) await this.hold(shard);
    return this.fenced(shard, run);
  }

  protected hold(shard: number): Promise<unknown> {
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
  protected async fenced<T>(shard: number, run: () => Promise<T>): Promise<T> {
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
  protected async afterFence(shards: readonly number[], host: string, err: unknown): Promise<void> {
    await this.refreshMap?.().catch(() => undefined);
    const map = this.shardMap();
    const moving = shards.filter((shard) => modShardMoving(map, shard, host));
    if (moving.length === 0) throw err;
    for (const shard of moving) {
      await this.hold(shard);
      if (this.hostOf(shard) === host) throw movingError(shard, map.freezeOf(shard)?.id, 0, err);
    }
  }

  /** One write statement on `shard`'s master, held while the shard is frozen (write()). */
  protected writeShard<T>(shard: number, sql: string, values?: SqlValue[]): Promise<T> {
    return this.write(shard, () => this.onHost<T>(this.hostOf(shard), sql, values, shard));
  }

  /** Write statements on `shard`'s master, all or none: one alone, several in one transaction. */
  protected writeShardStatements(shard: number, statements: Array<{ sql: string; values: SqlValue[] }>): Promise<unknown> {
    if (statements.length === 1) return this.writeShard(shard, statements[0]!.sql, statements[0]!.values);
    return this.write(shard, () => {
      const host = this.hostOf(shard);
      return this.mapped(host, shard, () => this.pools.get(host).transaction(async (run) => {
        for (const s of statements) await run(s.sql, s.values);
      }));
    });
  }

  protected async onHost<T>(host: string, sql: string, values?: SqlValue[], shard?: number): Promise<T> {
    return this.mapped(host, shard, () => this.pools.get(host).query<T>(sql, values));
  }

  /**
   * Runs one statement (or read transaction), mapping driver errors. MyRocks refuses a write to a
   * record changed since the statement's snapshot ("snapshot conflict", ER_LOCK_DEADLOCK): two
   * puts to one column's head record, or a compaction meeting a put. Every statement here is
   * idempotent (upserts with GREATEST, deletes), so it is run again, a few times at most.
   */
  protected async mapped<T>(host: string, shard: number | undefined, fn: () => Promise<T>): Promise<T> {
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
      const mapped = new ShardKitError(e.code, `${where}: ${e.message.replace(/^host \S+ /, '')}`, { cause: err, details: { ...e.details, ...(shard !== undefined ? { shard } : {}) } });
      if (shard === undefined) throw mapped;
      // The missing-table fence of a move (wcNNNNN's tables renamed into wcNNNNN_moved), as the SQL backends report theirs.
      const moved = `${wcDatabaseName(shard)}_moved`;
      throw await fencedError(mapped, where, moved, async () => (await this.pools.get(host).query<unknown[]>('SELECT 1 AS n FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?', [moved])).length > 0);
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
  protected async eachShardByHost(fn: (shard: number) => Promise<void>): Promise<void> {
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

  /** Shards grouped by the host to read them from: the slave when the map names one that `hosts` declares (backups), else the master. */
  protected shardsByHost(fromSlave: boolean): Map<string, number[]> {
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
  protected async perHostSnapshot(fromSlave: boolean, fn: (host: string, shards: number[], q: <R>(sql: string, values?: SqlValue[]) => Promise<R>) => Promise<void>): Promise<void> {
    for (const [host, shards] of this.shardsByHost(fromSlave)) {
      await this.mapped(host, undefined, () => this.pools.get(host).transaction((run) => fn(host, shards, async <R>(sql: string, values?: SqlValue[]) => (await run<R>(sql, values)).rows as unknown as R)));
    }
  }
}
