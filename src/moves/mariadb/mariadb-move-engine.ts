import mysql from 'mysql2/promise';
import { ShardKitError } from '../../errors.js';
import { shardDatabaseName } from '../../storage/shard-names.js';
import type { MoveRecord } from '../../topology/shard-map.js';
import type { ChunkMismatch, MoveEngine, MoveProgressFn, VerifyReport } from '../move-engine.js';
import type { MoveAdmin } from './move-admin.js';
import { undoTargetThenSource } from '../undo-order.js';
import { addTableResult, emptyReport, hashRows, keyText, moveShards, refuseFenceClash } from '../move-shared.js';
import { armLockFence, completeLockFence, lockFence, MAX_FENCE_SESSIONS, waitFenceSessions, type LockFence, type LockedGroup, type LockedTable } from './lock-fence.js';
import { timedStep, type OnStep } from '../step-timer.js';
import {
  binlogPos, connectionStatus, createConnection, filterMatches, gtidByDomain, moveConnectionName, removeConnection, restoreSlavePosition, runningConnections, setMovePosition, slavePos, sourceDomain, startFiltered,
} from './move-replication.js';

/** Rows per copy and verify chunk. */
const CHUNK_ROWS = 1000;

/** Where the fence puts a moved shard's tables on the source: `db00005_moved`. */
export const movedDatabaseName = (shard: number): string => movedName(shardDatabaseName(shard));

/** Where the fence puts any moved database's tables: `wc00005` -> `wc00005_moved`. */
const movedName = (db: string): string => `${db}_moved`;

/** Wide-column shard n's database (src/widecolumn/myrocks/myrocks-ddl.ts wcDatabaseName: moves sit beside widecolumn, not above it). */
const WC_PREFIX = 'wc';
const wcDatabaseName = (shard: number): string => shardDatabaseName(shard, WC_PREFIX);

/**
 * One database of a moving shard: `dbNNNNN` (the object fleet's tables) and, on a fleet with
 * MyRocks wide-column shards, `wcNNNNN` (every table in it: one per dataset, and the catalogue in
 * wc00000). Every phase handles the list alike: copied, fenced, caught up, verified, switched and
 * dropped together.
 */
interface ShardDatabase {
  shard: number;
  live: string;
  moved: string;
}

export interface MariadbMoveEngineOptions {
  /** Address of every host the config declares (a host's own user/password win over the storage section's). */
  hosts: Record<string, { host?: string; port?: number; socket?: string; user?: string; password?: string }>;
  user: string;
  password?: string;
  /** The object fleet's tables (fleetTables(schema, 'objects')): only these move; a database may also hold mod-shard tables. */
  tables: readonly string[];
  /** How long the fence's RENAME waits for in-flight transactions on the moving tables (MDL). Default 10 s. */
  lockWaitTimeoutS?: number;
  /**
   * Admin access to the hosts (SUPER, a replication account, mariadb-dump): with it the engine
   * pre-copies by dump + replication and the freeze only waits for the last transactions;
   * without it, it copies everything under the freeze (the pause grows with the shards' size).
   */
  admin?: MoveAdmin;
  /**
   * The fleet keeps MyRocks wide-column shards (config `widecolumn.engine` "myrocks"): a moving
   * shard's `wcNNNNN` moves with its `dbNNNNN` when the source masters it (it is then also
   * mod shard n's master), with the mod-shard tables (lookups) of `dbNNNNN`; the switch then
   * moves mod shard n too (move-state.ts switchMove, detail.modShards).
   */
  wideColumn?: boolean;
  /** Tables of the mod-shard fleet (fleetTables(schema, 'lookups')): they move with the wide-column shard when wideColumn is set. */
  modTables?: readonly string[];
  /** Replication lag (source transactions not yet applied on the target) under which the runner may freeze. Default 50. */
  maxLag?: number;
  /** How long catch-up waits (MASTER_GTID_WAIT) for the target to apply the source's last transaction. Default 30 s. */
  catchUpTimeoutS?: number;
  /**
   * The gtid_domain_id the replicated fence is binlogged in on the source (default
   * FENCE_DOMAIN_ID). Not the source's own domain: the move connection applies only that one
   * (DO_DOMAIN_IDS), so the fence reaches the source's slave but never the target.
   */
  fenceDomainId?: number;
  /** Connections the replicated fence renames on, in parallel, a group of whole shards each. Default 4. */
  fenceConnections?: number;
  /**
   * How far past the source's AUTO_INCREMENT beforeFreeze sets the target's (default 1000): ids
   * the source hands out between then and the fence stay below it, so under the freeze normally
   * no table needs an ALTER. A table whose source counter passed it is altered under the freeze.
   */
  autoIncrementMargin?: number;
  /** Told how long each step of fence, catch-up and verify took (bench/moves-mariadb.bench.ts prints them). */
  onStep?: OnStep;
}

/**
 * Default gtid_domain_id of the replicated fence's statements on the source (see fenceDomainId).
 * It must be no pair's own gtid_domain_id; the dev cluster numbers pairs' domains 1, 2, ...
 */
export const FENCE_DOMAIN_ID = 1_000_000;

type Conn = mysql.Connection;
const q = (name: string): string => `\`${name.replace(/`/g, '``')}\``;

/**
 * Shard moves on MariaDB. With `admin` (the CLI's default on a dev cluster or with
 * SHARDKIT_ADMIN_USER), the copy happens before the freeze, by replication:
 *
 *   prepare  checks the target master holds no object rows for the moving shards, creates the
 *            named connection `move_<id>` on the target master (stopped; DO_DOMAIN_IDS = the
 *            source pair's gtid_domain_id), then one `mariadb-dump --single-transaction --gtid`
 *            of the moving shards' object tables, loaded with sql_log_bin=0 into the target
 *            master AND the target's slave (the same snapshot on both, no GTID on either);
 *            gtid_slave_pos gets the dump's position for the source's domain, the connection
 *            gets replicate_do_table = exactly the moving object tables, and starts.
 *            Replicated transactions are binlogged by the target master with their source
 *            GTIDs (log_slave_updates), so the target's slave receives them through its own
 *            connection: both members of the target pair keep equal GTID histories.
 *   lag      source transactions (its domain's seq_no) not yet applied on the target: the
 *            runner freezes only under maxLag (vitess#9525);
 *   beforeFreeze  (after the lag gate, services still writing) dbNNNNN_moved created on the
 *            source, the target's AUTO_INCREMENT raised to the source's + autoIncrementMargin,
 *            and the connections of the freeze opened (fence, catch-up and verify reuse them);
 *   fence    the lock fence (lock-fence.ts): LOCK TABLES ... WRITE of the moving tables, split
 *            by shards over fenceConnections connections (drains in-flight transactions, blocks
 *            later ones; no DDL, so no fdatasync under the freeze). A resumed mover (no held
 *            connections) fences as below instead, binlogged in the fence domain
 *            (FENCE_DOMAIN_ID): the source's slave follows it, the move connection skips it
 *            (DO_DOMAIN_IDS), so the target's copy stays in dbNNNNN;
 *   catchUp  reads the source's gtid_binlog_pos only now that the fence holds (vitess#16563),
 *            MASTER_GTID_WAIT on the target, and alters AUTO_INCREMENT only where the source's
 *            counter went past what beforeFreeze set;
 *   verify   the source's checksums on the sessions that hold its locks;
 *   beforeSwitch  arms the lock fence: each locking session gets one block that waits for the
 *            mover's "go" lock, renames its tables into dbNNNNN_moved (fence domain) and ends;
 *            the server runs it even if the mover dies, so the fence becomes permanent;
 *   afterSwitch  releases "go" (the renames run, outside the freeze), then removes the connection;
 *   undo     removes the connection and the target's copy, then as below.
 *
 * Without `admin`, everything is copied under the freeze (like the embedded engine):
 *
 *   prepare  checks the target master holds no object rows for the moving shards;
 *   fence    RENAME TABLE of the moving object tables into dbNNNNN_moved on the source master
 *            (binlogged, so the source's slave follows). RENAME waits for the metadata lock,
 *            so a transaction in flight on those tables commits before it (and is copied) or
 *            fails; anything later gets ER_NO_SUCH_TABLE, which services treat as the fence;
 *   catchUp  per table: CREATE TABLE from the source's SHOW CREATE TABLE (its AUTO_INCREMENT
 *            included, so new ids continue past the source's), then primary-key chunks copied
 *            with INSERT on the target master (binlogged: the target's slave gets them);
 *   verify   source (fenced) vs target in primary-key chunks, row hashes compared;
 *   undo     tables renamed back on the source, the target's copies dropped;
 *   dropMoved  the fenced dbNNNNN_moved databases dropped on the source (binlogged).
 *
 * Those steps run on the app user's connections with sql_log_bin left on, so master and slave of
 * each pair keep equal GTID histories. The write pause of this fallback grows with the size of
 * the moving shards.
 */
export class MariadbMoveEngine implements MoveEngine {
  readonly kind = 'mariadb';
  readonly maxLag: number;
  private readonly options: MariadbMoveEngineOptions;
  /** Per move id: connections beforeFreeze opened for the freeze (fence, catch-up, verify reuse them; afterSwitch/undo close them). */
  private readonly held = new Map<string, FreezeConns>();
  /** Per move id: the target AUTO_INCREMENT values beforeFreeze set (`dbNNNNN.t`); counters never go down, so catch-up need not read them again. */
  private readonly raised = new Map<string, Map<string, bigint>>();
  /** Per move id: the lock fence this process holds (fence -> beforeSwitch arms it -> afterSwitch completes it). */
  private readonly locks = new Map<string, LockFence>();


  constructor(options: MariadbMoveEngineOptions) {
    if (options.tables.length === 0) throw new ShardKitError('INVALID_CONFIG', 'the schema has no object tables to move');
    this.options = options;
    this.maxLag = options.admin !== undefined ? (options.maxLag ?? 50) : 0;
  }

  /** Runs one step of the freeze path, telling onStep how long it took. */
  private step<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return timedStep(this.options.onStep, name, fn);
  }

  private get fenceDomain(): number {
    return this.options.fenceDomainId ?? FENCE_DOMAIN_ID;
  }

  /** An admin connection to the source whose statements are binlogged in the fence domain (replicated to the source's slave, never to the target). */
  private async fenceConnection(host: string): Promise<Conn> {
    const c = await this.options.admin!.connect(host);
    try {
      await c.query(`SET SESSION gtid_domain_id = ${this.fenceDomain}`);
      await c.query(`SET SESSION lock_wait_timeout = ${Math.max(1, Math.floor(this.options.lockWaitTimeoutS ?? 10))}`);
      // Verify may read the locked tables' rows on it (as on the target's admin connection): the same zone on both sides.
      await c.query("SET time_zone = '+00:00'");
    } catch (err) {
      c.destroy();
      throw err;
    }
    return c;
  }

  /** Opens every connection the replicated freeze path uses, all at once. */
  private async openFreezeConns(move: MoveRecord): Promise<FreezeConns> {
    const width = Math.max(1, Math.min(this.options.fenceConnections ?? 4, moveShards(move).length, MAX_FENCE_SESSIONS));
    const admin = this.options.admin!;
    const opened = await Promise.allSettled<Conn>([
      this.connect(move.source.master), admin.connect(move.source.master), this.connect(move.target.master), admin.connect(move.target.master),
      ...Array.from({ length: width }, () => this.fenceConnection(move.source.master)),
    ]);
    const ok = opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    const failed = opened.find((o) => o.status === 'rejected');
    if (failed !== undefined) {
      for (const c of ok) c.destroy();
      throw (failed as PromiseRejectedResult).reason;
    }
    // Held idle across phases: a server that dies meanwhile must fail the next query, not crash the mover with an unhandled 'error' event.
    for (const c of ok) c.on('error', () => undefined);
    const [src, srcAdmin, dst, dstAdmin, ...fence] = ok as [Conn, Conn, Conn, Conn, ...Conn[]];
    try {
      await dstAdmin.query("SET time_zone = '+00:00'");
    } catch (err) {
      for (const c of ok) c.destroy();
      throw err;
    }
    return { src, srcAdmin, dst, dstAdmin, fence };
  }

  /** The freeze connections beforeFreeze holds for this move, or fresh ones (a resumed mover) closed afterwards. */
  private async withFreezeConns<T>(move: MoveRecord, fn: (k: FreezeConns) => Promise<T>): Promise<T> {
    const held = this.held.get(move.id);
    if (held !== undefined) return fn(held);
    const k = await this.step('connect', () => this.openFreezeConns(move));
    try {
      return await fn(k);
    } finally {
      await closeFreezeConns(k);
    }
  }

  /**
   * Drops what this process holds for the move. An armed lock fence is completed first (its
   * renames run: the fence becomes permanent, undo renames back after it); an unarmed one just
   * goes with its connections (nothing was renamed, the source serves again).
   */
  private async release(moveId: string): Promise<void> {
    const k = this.held.get(moveId);
    const lock = this.locks.get(moveId);
    this.held.delete(moveId);
    this.raised.delete(moveId);
    this.locks.delete(moveId);
    let failed: unknown;
    if (lock !== undefined) await completeLockFence(lock).catch((err: unknown) => { failed = err; });
    if (k !== undefined) await closeFreezeConns(k);
    if (failed !== undefined) throw failed;
  }

  /** A lock fence of a mover that died after arming it may still be renaming on the source: wait for it. */
  private async settledFence(c: Conn, move: MoveRecord): Promise<void> {
    if (this.replicated) await waitFenceSessions(c, move.id);
  }

  /** True when the copy runs by dump + replication before the freeze. */
  get replicated(): boolean {
    return this.options.admin !== undefined;
  }

  private async withAdmin<T>(host: string, fn: (c: Conn) => Promise<T>): Promise<T> {
    const c = await this.options.admin!.connect(host);
    try {
      return await fn(c);
    } finally {
      await c.end().catch(() => c.destroy());
    }
  }

  private async connect(host: string): Promise<Conn> {
    const h = this.options.hosts[host];
    if (h === undefined) throw new ShardKitError('INVALID_ARGUMENT', `unknown host ${host}: it is not declared in the config's "hosts"`);
    const password = h.password ?? this.options.password;
    const conn = await mysql.createConnection({
      ...(h.socket !== undefined ? { socketPath: h.socket } : { host: h.host ?? '127.0.0.1', port: h.port ?? 3306 }),
      user: h.user ?? this.options.user, ...(password !== undefined ? { password } : {}),
      supportBigNumbers: true, bigNumberStrings: true, dateStrings: true, timezone: 'Z',
    });
    // Timestamps travel as text: the same zone on both sides keeps them exact.
    await conn.query("SET time_zone = '+00:00'");
    return conn;
  }

  private async withConn<T>(host: string, fn: (c: Conn) => Promise<T>): Promise<T> {
    const c = await this.connect(host);
    try {
      return await fn(c);
    } finally {
      await c.end().catch(() => undefined);
    }
  }

  /** The databases of the moving shards: each shard's dbNNNNN, then its wcNNNNN on a wide-column fleet. */
  private databases(move: MoveRecord): ShardDatabase[] {
    return moveShards(move).flatMap((shard) => [shardDatabaseName(shard), ...(this.options.wideColumn ? [wcDatabaseName(shard)] : [])].map((live) => ({ shard, live, moved: movedName(live) })));
  }

  /** The tables a move carries out of `db` (live or moved name), of those `found` there: all of a wide-column database, ours of an object one. */
  private ours(db: string, found: readonly string[]): string[] {
    return db.startsWith(WC_PREFIX) ? [...found].sort() : this.tables.filter((t) => found.includes(t));
  }

  /** Object tables, and the mod-shard ones when the wide-column shard (mod shard n) moves with them. */
  private get tables(): readonly string[] {
    return this.options.wideColumn ? [...this.options.tables, ...(this.options.modTables ?? [])] : this.options.tables;
  }

  /** Which of our tables exist in `db` on this connection. */
  private async present(c: Conn, db: string): Promise<string[]> {
    return (await this.presentMany(c, [db])).get(db)!;
  }

  async prepare(move: MoveRecord, onProgress?: MoveProgressFn): Promise<Record<string, string | number | boolean>> {
    if (this.replicated) return this.prepareReplicated(move, onProgress);
    let tables = 0;
    let modShards = false;
    await this.withConn(move.target.master, (c) => this.requireEmptyTarget(c, move));
    await this.withConn(move.source.master, async (c) => {
      for (const d of this.databases(move)) {
        const n = (await this.present(c, d.live)).length + (await this.present(c, d.moved)).length;
        tables += n;
        if (n > 0 && d.live.startsWith(WC_PREFIX)) modShards = true;
      }
    });
    const detail: Record<string, string | number | boolean> = { tables };
    if (modShards) detail.modShards = true;
    return detail;
  }

  /** Refuses a target that already holds rows of a moving shard (a copy left by an earlier move, say). */
  private async requireEmptyTarget(c: Conn, move: MoveRecord): Promise<void> {
    for (const d of this.databases(move)) {
      for (const t of await this.present(c, d.live)) {
        const [rows] = await c.query(`SELECT 1 AS x FROM ${q(d.live)}.${q(t)} LIMIT 1`);
        if ((rows as unknown[]).length > 0) {
          throw new ShardKitError('ALREADY_EXISTS', `${d.live}.${t} on the target ${move.target.master} already holds rows: drop them before moving shard ${d.shard} there`);
        }
      }
    }
  }

  /** The moving tables of each database, as they exist live on the source. */
  private async sourceTables(move: MoveRecord): Promise<Array<ShardDatabase & { tables: string[] }>> {
    return this.withConn(move.source.master, async (c) => {
      const dbs = this.databases(move);
      const have = await this.presentMany(c, dbs.map((d) => d.live));
      return dbs.map((d) => ({ ...d, tables: have.get(d.live)! }));
    });
  }

  private doTables(live: Array<{ live: string; tables: string[] }>): string[] {
    return live.flatMap((x) => x.tables.map((t) => `${x.live}.${t}`));
  }

  /** Drops the target's copy of the moving shards (binlogged on the target master: its slave follows). */
  private async dropTargetCopy(c: Conn, move: MoveRecord): Promise<void> {
    for (const d of this.databases(move)) {
      for (const db of [d.live, d.moved]) {
        const tables = await this.present(c, db);
        if (tables.length > 0) await c.query(`DROP TABLE IF EXISTS ${tables.map((t) => `${q(db)}.${q(t)}`).join(', ')}`);
      }
      const [rest] = await c.query('SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?', [d.moved]);
      if (Number((rest as Array<{ n: number | string }>)[0]!.n) === 0) await c.query(`DROP DATABASE IF EXISTS ${q(d.moved)}`);
    }
  }

  /**
   * The dump is loaded into the target's slave directly (binlog off), beside that slave's own
   * replication from the target master. Anything the master binlogged before (a resumed prepare's
   * DROP of an old copy, say) must be applied on the slave first: applied later, it would land on
   * the freshly loaded tables (a drop removes them under the loader: ER_NO_SUCH_TABLE).
   */
  private async slaveCaughtUp(master: string, slave: string): Promise<void> {
    const pos = await this.withAdmin(master, async (c) => ((await c.query('SELECT @@GLOBAL.gtid_binlog_pos AS p'))[0] as Array<{ p: string }>)[0]!.p);
    if (pos === '') return;
    const timeout = this.options.catchUpTimeoutS ?? 30;
    const w = await this.withAdmin(slave, async (c) => Number(((await c.query('SELECT MASTER_GTID_WAIT(?, ?) AS w', [pos, timeout]))[0] as Array<{ w: number | string }>)[0]!.w));
    if (w !== 0) throw new ShardKitError('SHARD_UNAVAILABLE', `the target's slave ${slave} did not reach its master ${master}'s position ${pos} within ${timeout} s: it must replicate its master before a move loads a copy into it`);
  }

  private async prepareReplicated(move: MoveRecord, onProgress?: MoveProgressFn): Promise<Record<string, string | number | boolean>> {
    const admin = this.options.admin!;
    const name = moveConnectionName(move);
    const live = await this.sourceTables(move);
    const doTables = this.doTables(live);
    if (doTables.length === 0) throw new ShardKitError('INTERNAL', `shards ${move.range[0]}..${move.range[1]} have no live object tables on ${move.source.master}: nothing to move`);
    const domain = await this.withAdmin(move.source.master, sourceDomain);
    if (domain === this.fenceDomain) throw new ShardKitError('INVALID_CONFIG', `the source ${move.source.master} runs with gtid_domain_id ${domain}, the move's fence domain: give the mover another fenceDomainId`);
    await this.withAdmin(move.target.master, async (c) => {
      if ((await connectionStatus(c, name)) !== undefined) {
        // A mover killed during an earlier prepare: the connection marks the target's copy as ours.
        await removeConnection(c, name);
        await this.dropTargetCopy(c, move);
      } else {
        await this.requireEmptyTarget(c, move);
      }
      const busy = await runningConnections(c);
      if (busy.length > 0) throw new ShardKitError('SHARD_UNAVAILABLE', `the target ${move.target.master} is replicating (connection ${busy.map((b) => `'${b}'`).join(', ')}): it must be a master with no move in progress; one move per target at a time`);
      await createConnection(c, admin, name, move.source.master, domain);
    });
    const srcTables = new Set(doTables);
    const ignore = await this.withAdmin(move.source.master, async (c) => {
      const [rows] = await c.query(`SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA IN (${live.map(() => '?').join(', ')})`, live.map((x) => x.live));
      return (rows as Array<{ t: string }>).map((r) => r.t).filter((t) => !srcTables.has(t));
    });
    const targets = [move.target.master, ...(move.target.slave !== undefined ? [move.target.slave] : [])];
    if (move.target.slave !== undefined) await this.slaveCaughtUp(move.target.master, move.target.slave);
    // While the dump runs only its bytes are known (rows are counted once it is loaded).
    let bytesCopied = 0;
    const position = await admin.dumpCopy(move.source.master, targets, live.filter((x) => x.tables.length > 0).map((x) => x.live), {
      ignoreTables: ignore,
      ...(onProgress !== undefined ? { onBytes: (b: number) => onProgress(0, moveShards(move).length, { bytesCopied: (bytesCopied = b) }) } : {}),
    });
    const at = gtidByDomain(position).get(domain)?.text;
    await this.withAdmin(move.target.master, async (c) => {
      // Rows copied, for the dashboard and the CLI's progress lines: the dump's rows, counted once it is loaded.
      if (onProgress !== undefined) {
        const [n] = await c.query(`SELECT ${doTables.map((t) => `(SELECT COUNT(*) FROM ${t.split('.').map(q).join('.')})`).join(' + ')} AS n`);
        const rows = Number((n as Array<{ n: number | string }>)[0]!.n);
        onProgress(moveShards(move).length, moveShards(move).length, { rowsCopied: rows, rowsTotal: rows, bytesCopied });
      }
      // The source's domain starts at the dump's snapshot (and nothing else: see setMovePosition).
      await setMovePosition(c, at);
      await startFiltered(c, name, doTables);
    });
    const modShards = live.some((x) => x.live.startsWith(WC_PREFIX) && x.tables.length > 0);
    const detail: Record<string, string | number | boolean> = { tables: doTables.length, connection: name, domain, position: at ?? '' };
    if (modShards) detail.modShards = true;
    return detail;
  }

  async lag(move: MoveRecord): Promise<number> {
    if (!this.replicated) return 0;
    const name = moveConnectionName(move);
    const domain = await this.withAdmin(move.source.master, sourceDomain);
    const doTables = this.doTables(await this.sourceTables(move));
    const applied = await this.withAdmin(move.target.master, async (c) => {
      const st = await connectionStatus(c, name);
      if (st === undefined) throw new ShardKitError('INTERNAL', `the target ${move.target.master} has no replication connection '${name}': resume from the start (shards move --abort, then move again)`);
      if (st.lastError !== '' && !(st.ioRunning && st.sqlRunning)) throw new ShardKitError('SHARD_UNAVAILABLE', `replication '${name}' on ${move.target.master} stopped: ${st.lastError}`);
      // Stopped without an error, or restarted without its (unpersisted) filter: (re)start it filtered.
      if (!st.ioRunning || !st.sqlRunning || !filterMatches(st, doTables)) await startFiltered(c, name, doTables);
      return gtidByDomain(await slavePos(c)).get(domain)?.seq ?? 0n;
    });
    const head = await this.withAdmin(move.source.master, async (c) => gtidByDomain(await binlogPos(c)).get(domain)?.seq ?? 0n);
    return head > applied ? Number(head - applied) : 0;
  }

  /**
   * Before the freeze: the fence's dbNNNNN_moved databases on the source (so the fence itself is
   * only the RENAME), and with replication the target's AUTO_INCREMENT raised past the source's
   * by autoIncrementMargin (so catch-up normally alters nothing) and the freeze's connections opened.
   */
  async beforeFreeze(move: MoveRecord): Promise<void> {
    if (!this.replicated) {
      await this.withConn(move.source.master, async (c) => {
        for (const d of (await this.fencePlan(c, move)).missing) await c.query(`CREATE DATABASE IF NOT EXISTS ${q(d)} DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
      });
      return;
    }
    await this.release(move.id);
    const k = await this.openFreezeConns(move);
    this.held.set(move.id, k);
    const c = k.fence[0]!;
    const plan = await this.fencePlan(c, move);
    for (const d of plan.missing) await c.query(`CREATE DATABASE IF NOT EXISTS ${q(d)} DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
    const names = plan.live.flatMap((d) => d.tables.map((t) => `${d.live}.${t}`));
    const margin = BigInt(Math.max(0, Math.floor(this.options.autoIncrementMargin ?? 1000)));
    const [want, have] = await Promise.all([autoIncrements(k.srcAdmin, names), autoIncrements(k.dstAdmin, names)]);
    const raised = new Map<string, bigint>();
    for (const name of names) {
      const w = want.get(name);
      const h = have.get(name);
      if (w === undefined || h === undefined) continue;
      if (h < w + margin) {
        const [db, t] = [name.slice(0, name.indexOf('.')), name.slice(name.indexOf('.') + 1)];
        await k.dstAdmin.query(`ALTER TABLE ${q(db)}.${q(t)} AUTO_INCREMENT = ${w + margin}`);
      }
      raised.set(name, h < w + margin ? w + margin : h);
    }
    this.raised.set(move.id, raised);
  }

  /** What the fence renames (per shard: the live tables of its databases) and which `_moved` databases it needs. */
  private async fencePlan(c: Conn, move: MoveRecord): Promise<{ renames: Map<number, string[]>; live: Array<ShardDatabase & { tables: string[] }>; missing: string[]; alreadyFenced: number }> {
    const all = this.databases(move);
    const have = await this.presentMany(c, all.flatMap((d) => [d.live, d.moved]));
    const [dbRows] = await c.query(`SELECT SCHEMA_NAME AS d FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN (${all.map(() => '?').join(', ')})`, all.map((d) => d.moved));
    const dbs = new Set((dbRows as Array<{ d: string }>).map((r) => r.d));
    const renames = new Map<number, string[]>();
    const live: Array<ShardDatabase & { tables: string[] }> = [];
    const missing: string[] = [];
    const alreadyFenced = all.reduce((n, d) => n + have.get(d.moved)!.length, 0);
    for (const d of all) {
      const tables = have.get(d.live)!;
      if (tables.length === 0) continue;
      refuseFenceClash(d.live, tables, d.moved, have.get(d.moved)!, move.source.master);
      if (!dbs.has(d.moved)) missing.push(d.moved);
      live.push({ ...d, tables });
      renames.set(d.shard, [...(renames.get(d.shard) ?? []), ...tables.map((t) => `${q(d.live)}.${q(t)} TO ${q(d.moved)}.${q(t)}`)]);
    }
    return { renames, live, missing, alreadyFenced };
  }

  /**
   * The fence: RENAME TABLE of the moving object tables into dbNNNNN_moved on the source master.
   * RENAME waits for the metadata lock, so a transaction in flight on those tables commits before
   * it or fails (vitess#9481). With replication the statements are binlogged in the fence domain
   * (the source's slave follows, the move connection skips them: the target's copy stays in
   * dbNNNNN) and run on fenceConnections connections in parallel, each one RENAME of a group of
   * whole shards: atomic per shard, and the DDL's syncs overlap (a RENAME costs about four
   * fdatasync per table on MariaDB 10.11, the bulk of the write pause with hundreds of tables).
   */
  async fence(move: MoveRecord): Promise<void> {
    if (!this.replicated) {
      await this.withConn(move.source.master, async (c) => {
        await c.query(`SET SESSION lock_wait_timeout = ${Math.max(1, Math.floor(this.options.lockWaitTimeoutS ?? 10))}`);
        const plan = await this.fencePlan(c, move);
        for (const d of plan.missing) await c.query(`CREATE DATABASE IF NOT EXISTS ${q(d)} DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
        // One statement for every moving table: atomic, and it waits (MDL) for the transactions in flight on them.
        const renames = [...plan.renames.values()].flat();
        if (renames.length > 0) await c.query(`RENAME TABLE ${renames.join(', ')}`);
      });
      return;
    }
    const held = this.held.get(move.id);
    if (held !== undefined && this.locks.has(move.id)) return;
    if (held !== undefined) {
      const plan = await this.step('fence: catalogue', () => this.fencePlan(held.fence[0]!, move));
      if (plan.missing.length === 0 && plan.alreadyFenced === 0) {
        const groups: LockedGroup[] = held.fence.map((conn) => ({ conn, tables: [] }));
        const shards = [...new Set(plan.live.map((d) => d.shard))];
        for (const d of plan.live) groups[shards.indexOf(d.shard) % groups.length]!.tables.push(...d.tables.map((table): LockedTable => ({ db: d.live, moved: d.moved, table })));
        // Renamed after the switch in this order: a writer with a stale map blocked on a table gets
        // the fence error as soon as its table is renamed, so each table name goes for all of the
        // session's shards at once, in the fleet's order (object types first, then mappings).
        const rank = (t: string): number => (this.tables.includes(t) ? this.tables.indexOf(t) : this.tables.length);
        for (const g of groups) g.tables.sort((a, b) => rank(a.table) - rank(b.table) || a.table.localeCompare(b.table) || a.db.localeCompare(b.db));
        const lock = await this.step('fence: LOCK TABLES (source)', () => lockFence(move.id, held.srcAdmin, groups));
        this.locks.set(move.id, lock);
        return;
      }
    }
    // A resumed mover (or a source already partly fenced): the permanent fence, renamed under the freeze.
    await this.withFreezeConns(move, async (k) => {
      const c = k.fence[0]!;
      await this.settledFence(c, move);
      const plan = await this.step('fence: catalogue', () => this.fencePlan(c, move));
      // Normally made by beforeFreeze; a resumed move from before it needs them here.
      if (plan.missing.length > 0) {
        await this.step('fence: CREATE DATABASE _moved', async () => {
          for (const d of plan.missing) await c.query(`CREATE DATABASE IF NOT EXISTS ${q(d)} DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
        });
      }
      const groups: string[][] = k.fence.map(() => []);
      [...plan.renames.values()].forEach((r, i) => groups[i % groups.length]!.push(...r));
      await this.step('fence: RENAME TABLE (source)', async () => {
        const done = await Promise.allSettled(groups.map((g, i) => (g.length > 0 ? k.fence[i]!.query(`RENAME TABLE ${g.join(', ')}`) : undefined)));
        const failed = done.find((d) => d.status === 'rejected');
        // A group that failed (lock_wait_timeout) leaves the move partly fenced: the runner aborts, and undo renames back what moved.
        if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
      });
    });
  }

  async catchUp(move: MoveRecord, onProgress?: MoveProgressFn): Promise<void> {
    if (this.replicated) return this.catchUpReplicated(move, onProgress);
    const shards = moveShards(move);
    const src = await this.connect(move.source.master);
    try {
      const dst = await this.connect(move.target.master);
      try {
        let done = 0;
        let rows = 0;
        const all = this.databases(move);
        for (const d of all) {
          if ((await this.present(src, d.live)).length > 0) {
            throw new ShardKitError('INTERNAL', `${d.live} on ${move.source.master} still has live tables of the move: refusing to copy a shard that is not fenced`);
          }
          const tables = await this.present(src, d.moved);
          if (tables.length > 0) await dst.query(`CREATE DATABASE IF NOT EXISTS ${q(d.live)} DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
          for (const t of tables) rows += await copyTable(src, dst, d.moved, d.live, t);
          if (d === all.filter((x) => x.shard === d.shard).at(-1)) onProgress?.(++done, shards.length, { rowsCopied: rows });
        }
      } finally {
        await dst.end().catch(() => undefined);
      }
    } finally {
      await src.end().catch(() => undefined);
    }
  }

  private async catchUpReplicated(move: MoveRecord, onProgress?: MoveProgressFn): Promise<void> {
    const name = moveConnectionName(move);
    const all = this.databases(move);
    // Runs under the freeze, on the connections beforeFreeze opened; catalogue, source state and
    // connection status read in one round trip each, side by side.
    // With the lock fence the source's tables are still live (locked by this process), else renamed aside.
    const lock = this.locks.get(move.id);
    const locked = lock === undefined ? undefined : new Set(lock.groups.flatMap((g) => g.tables.map((t) => `${t.db}.${t.table}`)));
    await this.withFreezeConns(move, async ({ src, srcAdmin, dstAdmin: c, fence }) => {
      // The source's AUTO_INCREMENT counters are final once the fence holds: read beside the rest
      // of catch-up, on a fence connection (information_schema needs no lock the fence blocks;
      // awaited in autoIncrementPast; never unhandled).
      const sourceCounters = this.step('auto-increment: source counters (beside catch-up)', () => autoIncrementsIn(fence[0]!, all.map((d) => (locked !== undefined ? d.live : d.moved))));
      sourceCounters.catch(() => undefined);
      // Read only now: the fence has drained every transaction on the moving tables (vitess#16563).
      const [srcHave, state, st] = await this.step('catch-up: source catalogue + position, connection status', () => Promise.all([
        this.presentMany(src, all.flatMap((d) => [d.live, d.moved])),
        srcAdmin.query('SELECT @@GLOBAL.gtid_domain_id AS d, @@GLOBAL.gtid_binlog_pos AS p').then(([r]) => (r as Array<{ d: number | string; p: string | null }>)[0]!),
        connectionStatus(c, name),
      ]));
      const fenced: Array<ShardDatabase & { tables: string[] }> = [];
      for (const d of all) {
        if (locked !== undefined) {
          const live = srcHave.get(d.live)!;
          const loose = live.filter((t) => !locked.has(`${d.live}.${t}`));
          if (loose.length > 0 || srcHave.get(d.moved)!.length > 0) throw new ShardKitError('INTERNAL', `${d.live}.${loose[0] ?? '?'} on ${move.source.master} is not under the move's fence: refusing to catch up`);
          fenced.push({ ...d, tables: live });
          continue;
        }
        if (srcHave.get(d.live)!.length > 0) {
          throw new ShardKitError('INTERNAL', `${d.live} on ${move.source.master} still has live tables of the move: refusing to catch up on a shard that is not fenced`);
        }
        fenced.push({ ...d, tables: srcHave.get(d.moved)! });
      }
      const domain = Number(state.d);
      if (st !== undefined) {
        const pos = gtidByDomain(String(state.p ?? '')).get(domain)?.text;
        const doTables = this.doTables(fenced);
        if (!st.ioRunning || !st.sqlRunning || !filterMatches(st, doTables)) {
          if (st.lastError !== '') throw new ShardKitError('SHARD_UNAVAILABLE', `replication '${name}' on ${move.target.master} stopped: ${st.lastError}`);
          await startFiltered(c, name, doTables);
        }
        if (pos !== undefined) {
          const timeout = this.options.catchUpTimeoutS ?? 30;
          const [r] = await this.step('catch-up: MASTER_GTID_WAIT', () => c.query('SELECT MASTER_GTID_WAIT(?, ?) AS w', [pos, timeout]));
          if (Number((r as Array<{ w: number | string }>)[0]!.w) !== 0) {
            const now = await connectionStatus(c, name);
            throw new ShardKitError('SHARD_UNAVAILABLE', `the target ${move.target.master} did not reach the source's position ${pos} within ${timeout} s${now?.lastError ? `: ${now.lastError}` : ''}`);
          }
        }
        // The connection stays until afterSwitch (outside the freeze): nothing reaches it any more,
        // the moving tables are fenced on the source and the fence itself is in another domain.
      } else {
        // Removed by a catch-up of an earlier version before a crash: make sure the position is one strict mode accepts.
        await restoreSlavePosition(c, domain);
      }
      // A move fenced by an earlier version (its RENAME in the source's domain) had it replayed on the
      // target: that copy is in dbNNNNN_moved there, and goes back into dbNNNNN in one RENAME.
      const dstHave = await this.step('catch-up: target catalogue', () => this.presentMany(c, all.flatMap((d) => [d.live, d.moved])));
      const back: string[] = [];
      for (const d of all) {
        const live = dstHave.get(d.live)!;
        back.push(...dstHave.get(d.moved)!.filter((t) => !live.includes(t)).map((t) => `${q(d.moved)}.${q(t)} TO ${q(d.live)}.${q(t)}`));
      }
      if (back.length > 0) {
        await c.query(`RENAME TABLE ${back.join(', ')}`);
        for (const d of all) await c.query(`DROP DATABASE IF EXISTS ${q(d.moved)}`);
      }
      let done = 0;
      for (const d of fenced) {
        const missing = d.tables.filter((t) => !dstHave.get(d.live)!.includes(t) && !dstHave.get(d.moved)!.includes(t));
        if (missing.length > 0) throw new ShardKitError('INTERNAL', `the target ${move.target.master} has no copy of ${d.live}.${missing[0]}: abort the move (shards move --abort) and start it again`);
        onProgress?.(++done, fenced.length);
      }
      await this.autoIncrementPast(move, sourceCounters, c, fenced, locked !== undefined);
    });
  }

  /**
   * After the switch, outside the freeze: the move connection goes (stopped, gtid_slave_pos put
   * back to a value strict mode accepts, then forgotten). Only a connection of this move: another
   * move to the same target may run later, and its position is not ours to touch.
   */
  async afterSwitch(move: MoveRecord): Promise<void> {
    // Services write to the target by now; only writers with a stale map wait for these renames.
    await this.step('after the switch: lock fence completed (renames on the source)', () => this.release(move.id));
    if (!this.replicated) return;
    const name = moveConnectionName(move);
    // A mover killed after arming the lock fence: its renames finish on the server, then this goes on.
    await this.withAdmin(move.source.master, (c) => this.settledFence(c, move));
    await this.withAdmin(move.target.master, async (c) => {
      if ((await connectionStatus(c, name)) === undefined) return;
      await c.query(`STOP SLAVE '${name}'`);
      await restoreSlavePosition(c, await this.withAdmin(move.source.master, sourceDomain));
      await c.query(`RESET SLAVE '${name}' ALL`);
    });
  }

  /**
   * Right before the switch's compare-and-set: the lock fence is armed (lock-fence.ts), so from
   * here on the source's tables get renamed aside even if this process dies. A move fenced by
   * RENAME (resumed) needs nothing.
   */
  async beforeSwitch(move: MoveRecord): Promise<void> {
    const lock = this.locks.get(move.id);
    if (lock !== undefined && lock.armed === undefined) await this.step('arm the fence (rename batches queued)', () => armLockFence(lock));
  }

  /** Target AUTO_INCREMENT at least the source's, so ids made on the target continue past every id the source gave out. */
  private async autoIncrementPast(move: MoveRecord, sourceCounters: Promise<Map<string, bigint | undefined>>, dst: Conn, fenced: Array<ShardDatabase & { tables: string[] }>, sourceLive: boolean): Promise<void> {
    const names = fenced.flatMap((x) => x.tables.map((t) => ({ live: x.live, moved: sourceLive ? x.live : x.moved, t })));
    if (names.length === 0) return;
    // beforeFreeze raised the target's counters by a margin, and counters never go down: normally
    // this only reads the source's. A resumed mover (nothing remembered) reads the target's too.
    const raised = this.raised.get(move.id);
    const [want, have] = await this.step('auto-increment: counters (wait)', () => Promise.all([
      sourceCounters,
      raised ?? autoIncrements(dst, names.map((x) => `${x.live}.${x.t}`)),
    ]));
    let altered = 0;
    await this.step('auto-increment: ALTER TABLE (target)', async () => {
      for (const { live, moved, t } of names) {
        const w = want.get(`${moved}.${t}`);
        const h = have.get(`${live}.${t}`);
        if (w !== undefined && (h === undefined || h < w)) {
          await dst.query(`ALTER TABLE ${q(live)}.${q(t)} AUTO_INCREMENT = ${w}`);
          altered++;
        }
      }
    });
    this.options.onStep?.('auto-increment: tables altered (count)', altered);
  }

  /** Which of our tables exist in each of `dbs`, in one catalogue query. */
  private async presentMany(c: Conn, dbs: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(dbs.map((d) => [d, []]));
    if (dbs.length === 0) return out;
    const [rows] = await c.query(`SELECT TABLE_SCHEMA AS d, TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA IN (${dbs.map(() => '?').join(', ')})`, dbs);
    for (const r of rows as Array<{ d: string; t: string }>) out.get(r.d)?.push(r.t);
    for (const d of dbs) out.set(d, this.ours(d, out.get(d)!));
    return out;
  }

  /**
   * Source against target. Tables present on both sides are compared first with one CHECKSUM
   * TABLE statement per side (the check runs under the freeze: it must not read every row into
   * the mover); a table whose checksums differ, or that exists on one side only, is compared in
   * primary-key chunks, which names the differing key ranges.
   */
  async verify(move: MoveRecord): Promise<VerifyReport> {
    // Under the freeze, on the connections beforeFreeze opened (a second source connection counts rows beside the checksums).
    const held = this.held.get(move.id);
    if (held !== undefined) return this.verifyOn(move, held.src, held.dst, held.srcAdmin, this.locks.get(move.id), held.dstAdmin);
    const src = await this.connect(move.source.master);
    try {
      const dst = await this.connect(move.target.master);
      try {
        return await this.verifyOn(move, src, dst);
      } finally {
        await dst.end().catch(() => undefined);
      }
    } finally {
      await src.end().catch(() => undefined);
    }
  }

  /**
   * With a lock fence (`lock`), the source's tables are readable only on the sessions that lock
   * them: each session checksums its own tables, and the rows are counted on the target (`dstCounter`;
   * equal checksums mean equal rows), all side by side.
   */
  private async verifyOn(move: MoveRecord, src: Conn, dst: Conn, counter: Conn = src, lock?: LockFence, dstCounter?: Conn): Promise<VerifyReport> {
    const owner = new Map<string, Conn>(lock?.groups.flatMap((g) => g.tables.map((t) => [`${t.db}.${t.table}`, g.conn] as const)) ?? []);
    const srcConn = (db: string, table: string): Conn => owner.get(`${db}.${table}`) ?? src;
    // A locked table is read on its (admin) fence session: the chunks it is compared with come from
    // an admin connection to the target too, so both sides decode values alike.
    const dstRows = lock !== undefined && dstCounter !== undefined ? dstCounter : dst;
    const report = emptyReport();
    const all = this.databases(move);
    const [srcMap, dstMap] = await this.step('verify: catalogue', () => Promise.all([
      this.presentMany(src, all.flatMap((d) => [d.live, d.moved])),
      this.presentMany(dst, all.map((d) => d.live)),
    ]));
    const pairs: Array<{ shard: number; table: string; label: string; srcDb?: string; dstDb: string; a?: string; b?: string }> = [];
    report.shards = moveShards(move).length;
    for (const d of all) {
      // The source's copy is the fenced one once the fence holds, the live one before.
      const moved = srcMap.get(d.moved)!;
      const srcDb = moved.length > 0 ? d.moved : d.live;
      const srcTables = moved.length > 0 ? moved : srcMap.get(srcDb)!;
      const dstTables = dstMap.get(d.live)!;
      for (const t of [...new Set([...srcTables, ...dstTables])]) {
        pairs.push({
          shard: d.shard, table: t, label: tableLabel(d.live, t), dstDb: d.live,
          ...(srcTables.includes(t) ? { srcDb, a: `${q(srcDb)}.${q(t)}` } : {}), ...(dstTables.includes(t) ? { b: `${q(d.live)}.${q(t)}` } : {}),
        });
      }
    }
    const both = pairs.filter((p) => p.a !== undefined && p.b !== undefined);
    const sums = async (c: Conn, names: string[]): Promise<string[]> => {
      if (names.length === 0) return [];
      const [rows] = await c.query(`CHECKSUM TABLE ${names.join(', ')}`);
      return (rows as Array<{ Checksum: string | number | null }>).map((r) => String(r.Checksum));
    };
    // The source's checksums, each table on the connection that may read it (one statement per connection).
    const sourceSums = async (): Promise<string[]> => {
      const byConn = new Map<Conn, number[]>();
      both.forEach((p, i) => {
        const c = srcConn(p.srcDb!, p.table);
        byConn.set(c, [...(byConn.get(c) ?? []), i]);
      });
      const out: string[] = [];
      await Promise.all([...byConn].map(async ([c, idx]) => {
        const got = await sums(c, idx.map((i) => both[i]!.a!));
        idx.forEach((i, j) => { out[i] = got[j]!; });
      }));
      return out;
    };
    const counts = async (): Promise<number[]> => {
      if (both.length === 0) return [];
      const [rows] = await (lock !== undefined && dstCounter !== undefined ? dstCounter : counter).query(both.map((p, i) => `SELECT ${i} AS i, COUNT(*) AS n FROM ${lock !== undefined && dstCounter !== undefined ? p.b : p.a}`).join(' UNION ALL '));
      const out: number[] = [];
      for (const r of rows as Array<{ i: number | string; n: number | string }>) out[Number(r.i)] = Number(r.n);
      return out;
    };
    const [sa, sb, n] = await this.step('verify: CHECKSUM TABLE both sides + COUNT(*)', () => Promise.all([sourceSums(), sums(dst, both.map((p) => p.b!)), counter === src ? Promise.resolve(undefined) : counts()]));
    const rowCounts = n ?? (await counts());
    const quick = new Map<(typeof pairs)[number], number>();
    both.forEach((p, i) => {
      if (sa[i] !== 'null' && sa[i] === sb[i]) quick.set(p, rowCounts[i]!);
    });
    for (const p of pairs) {
      report.tables++;
      const rows = quick.get(p);
      if (rows !== undefined) {
        addTableResult(report, { rows, chunks: 1 });
        continue;
      }
      const r = await compareTable(p.shard, p.table, p.srcDb !== undefined ? { c: srcConn(p.srcDb, p.table), db: p.srcDb } : undefined, p.b !== undefined ? { c: dstRows, db: p.dstDb } : undefined, undefined, p.label);
      addTableResult(report, r);
    }
    return report;
  }

  async undo(move: MoveRecord): Promise<void> {
    await this.release(move.id);
    await undoTargetThenSource(move, () => this.undoTarget(move), () => this.withConn(move.source.master, async (c) => {
      await this.settledFence(c, move);
      for (const d of this.databases(move)) {
        const fenced = await this.present(c, d.moved);
        const live = await this.present(c, d.live);
        const back = fenced.filter((t) => !live.includes(t));
        if (back.length > 0) await c.query(`RENAME TABLE ${back.map((t) => `${q(d.moved)}.${q(t)} TO ${q(d.live)}.${q(t)}`).join(', ')}`);
        const [rest] = await c.query('SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?', [d.moved]);
        if (Number((rest as Array<{ n: number | string }>)[0]!.n) === 0) await c.query(`DROP DATABASE IF EXISTS ${q(d.moved)}`);
      }
    }));
  }

  /** The target's part of an abort: the move's connection and copy go. Re-runnable. */
  private async undoTarget(move: MoveRecord): Promise<void> {
    if (this.replicated) {
      // The connection stops before the source's tables are renamed back (that RENAME must not reach the target).
      await this.withAdmin(move.target.master, async (c) => {
        const name = moveConnectionName(move);
        const st = await connectionStatus(c, name);
        // Only a copy this move made: a prepare that refused the target (ALREADY_EXISTS) created
        // no connection and recorded nothing, and the rows it found are not ours to drop.
        if (st === undefined && move.detail?.connection === undefined) return;
        if (st !== undefined) await c.query(`STOP SLAVE '${name}'`);
        // The source's domain without asking the source (it may be the server that died).
        const domain = st?.doDomains[0] ?? (typeof move.detail?.domain === 'number' ? move.detail.domain : await this.withAdmin(move.source.master, sourceDomain));
        // The copy goes while the (stopped) connection still marks it as ours: an abort that
        // fails after this and is run again still knows what to drop.
        await this.dropTargetCopy(c, move);
        if (st !== undefined) await removeConnection(c, name);
        await restoreSlavePosition(c, domain);
      });
    } else if (move.detail !== undefined) {
      // Only after a completed prepare (it records detail): one that refused the target's rows made nothing to drop.
      await this.withConn(move.target.master, async (c) => {
        for (const d of this.databases(move)) {
          const tables = await this.present(c, d.live);
          if (tables.length > 0) await c.query(`DROP TABLE IF EXISTS ${tables.map((t) => `${q(d.live)}.${q(t)}`).join(', ')}`);
        }
      });
    }
  }

  async dropMoved(move: MoveRecord): Promise<number> {
    // A move connection left by a failed afterSwitch would replay the DROP below on the target.
    await this.afterSwitch(move);
    let dropped = 0;
    await this.withConn(move.source.master, async (c) => {
      await this.settledFence(c, move);
      for (const d of this.databases(move)) {
        if ((await this.present(c, d.live)).length > 0) {
          throw new ShardKitError('INTERNAL', `${d.live} on ${move.source.master} has live tables of the move: refusing to drop shard ${d.shard} (move ${move.id})`);
        }
        const [rows] = await c.query('SELECT COUNT(*) AS n FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?', [d.moved]);
        if (Number((rows as Array<{ n: number | string }>)[0]!.n) === 0) continue;
        await c.query(`DROP DATABASE ${q(d.moved)}`);
        dropped++;
      }
    });
    return dropped;
  }

  /**
   * A master against its slave, shard by shard, table by table, at a consistent point per chunk:
   * the master's chunk is read, then its GTID position, and the slave is compared once it has
   * applied that position (MASTER_GTID_WAIT). A chunk written between the two reads can differ
   * for a moment, so a mismatching table is compared again before it is reported.
   */
  async verifyReplica(shard: number, master: string, slave: string, waitS = 30, which: 'all' | 'objects' | 'widecolumn' = 'all'): Promise<VerifyReport> {
    const report = emptyReport(1);
    const m = await this.connect(master);
    try {
      const sl = await this.connect(slave);
      try {
        const dbs = this.databases({ range: [shard, shard] } as MoveRecord).map((d) => d.live).filter((d) => which === 'all' || d.startsWith(WC_PREFIX) === (which === 'widecolumn'));
        const [onMasterAll, onSlaveAll] = [await this.presentMany(m, dbs), await this.presentMany(sl, dbs)];
        const sync = async (): Promise<void> => {
          const [pos] = await m.query('SELECT @@GLOBAL.gtid_binlog_pos AS p');
          const p = String((pos as Array<{ p: string | null }>)[0]!.p ?? '');
          if (p === '') return;
          const [r] = await sl.query('SELECT MASTER_GTID_WAIT(?, ?) AS r', [p, waitS]);
          if (Number((r as Array<{ r: number | string | null }>)[0]!.r) !== 0) {
            throw new ShardKitError('SHARD_UNAVAILABLE', `${slave} did not reach ${master}'s position ${p} within ${waitS} s: is it replicating? (shardkit pair verify / dev status)`);
          }
        };
        for (const db of dbs) {
          const [onMaster, onSlave] = [onMasterAll.get(db)!, onSlaveAll.get(db)!];
          for (const t of [...new Set([...onMaster, ...onSlave])]) {
            report.tables++;
            const a = onMaster.includes(t) ? { c: m, db } : undefined;
            const b = onSlave.includes(t) ? { c: sl, db } : undefined;
            let r = await compareTable(shard, t, a, b, sync, tableLabel(db, t));
            if (r.mismatches.length > 0) r = await compareTable(shard, t, a, b, sync, tableLabel(db, t));
            addTableResult(report, r);
          }
        }
      } finally {
        await sl.end().catch(() => undefined);
      }
    } finally {
      await m.end().catch(() => undefined);
    }
    return report;
  }

  async close(): Promise<void> {
    for (const id of [...this.held.keys()]) await this.release(id);
  }
}

/** AUTO_INCREMENT of each `db.table` (information_schema, one query; undefined for a table without one). */
async function autoIncrements(c: Conn, names: readonly string[]): Promise<Map<string, bigint | undefined>> {
  const all = await autoIncrementsIn(c, [...new Set(names.map((n) => n.slice(0, n.indexOf('.'))))]);
  return new Map(names.filter((n) => all.has(n)).map((n) => [n, all.get(n)]));
}

/** AUTO_INCREMENT of every table of `dbs`, keyed `db.table`. */
async function autoIncrementsIn(c: Conn, dbs: readonly string[]): Promise<Map<string, bigint | undefined>> {
  if (dbs.length === 0) return new Map();
  // One branch per database: `TABLE_SCHEMA = ?` lets the server open only that database's tables
  // (an IN list over all of them made it open every table of the host: 0.1-0.6 s under the freeze).
  const [rows] = await c.query(dbs.map(() => 'SELECT TABLE_SCHEMA AS d, TABLE_NAME AS t, AUTO_INCREMENT AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?').join(' UNION ALL '), [...dbs]);
  return new Map((rows as Array<{ d: string; t: string; n: string | number | null }>).map((r) => [`${r.d}.${r.t}`, r.n === null ? undefined : BigInt(r.n)]));
}

interface FreezeConns {
  /** Source master: app user, admin; target master: app user, admin; the fence's admin connections (fence domain). */
  src: Conn;
  srcAdmin: Conn;
  dst: Conn;
  dstAdmin: Conn;
  fence: Conn[];
}

async function closeFreezeConns(k: FreezeConns): Promise<void> {
  await Promise.all([k.src, k.srcAdmin, k.dst, k.dstAdmin, ...k.fence].map((c) => c.end().catch(() => c.destroy())));
}

async function primaryKey(c: Conn, db: string, table: string): Promise<string[]> {
  const [rows] = await c.query(
    "SELECT COLUMN_NAME AS c FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION",
    [db, table],
  );
  const keys = (rows as Array<{ c: string }>).map((r) => r.c);
  if (keys.length === 0) throw new ShardKitError('INTERNAL', `${db}.${table} has no primary key: cannot move it in chunks`);
  return keys;
}

/** Reads a table in primary-key order, CHUNK_ROWS at a time: `after` is the previous chunk's last key. */
function chunkReader(c: Conn, db: string, table: string, keys: string[]) {
  const k = keys.map(q).join(', ');
  const tuple = keys.length === 1 ? k : `(${k})`;
  const qs = keys.length === 1 ? '?' : `(${keys.map(() => '?').join(', ')})`;
  const t = `${q(db)}.${q(table)}`;
  const rows = async (sql: string, params: unknown[]): Promise<{ fields: string[]; rows: unknown[][] }> => {
    const [r, f] = await c.query({ sql, rowsAsArray: true }, params);
    return { fields: (f ?? []).map((x) => x.name), rows: r as unknown[][] };
  };
  return {
    next: (after: unknown[] | undefined) => rows(after === undefined ? `SELECT * FROM ${t} ORDER BY ${k} LIMIT ${CHUNK_ROWS}` : `SELECT * FROM ${t} WHERE ${tuple} > ${qs} ORDER BY ${k} LIMIT ${CHUNK_ROWS}`, after ?? []),
    upTo: (after: unknown[] | undefined, hi: unknown[]) => rows(after === undefined ? `SELECT * FROM ${t} WHERE ${tuple} <= ${qs} ORDER BY ${k}` : `SELECT * FROM ${t} WHERE ${tuple} > ${qs} AND ${tuple} <= ${qs} ORDER BY ${k}`, [...(after ?? []), ...hi]),
    rest: (after: unknown[] | undefined) => rows(after === undefined ? `SELECT * FROM ${t} ORDER BY ${k}` : `SELECT * FROM ${t} WHERE ${tuple} > ${qs} ORDER BY ${k}`, after ?? []),
  };
}

/**
 * Copies one fenced table to the target: re-created from SHOW CREATE TABLE (a partial copy of an
 * interrupted run is replaced; prepare made sure the target held no rows of its own), then rows
 * in primary-key chunks. SHOW CREATE TABLE carries the AUTO_INCREMENT counter, and explicit ids
 * push it past max(id) anyway, so ids made on the target continue after the source's.
 */
async function copyTable(src: Conn, dst: Conn, srcDb: string, dstDb: string, table: string): Promise<number> {
  const [created] = await src.query(`SHOW CREATE TABLE ${q(srcDb)}.${q(table)}`);
  const ddl = String((created as Array<Record<string, string>>)[0]!['Create Table']);
  await dst.query(`DROP TABLE IF EXISTS ${q(dstDb)}.${q(table)}`);
  await dst.query(`USE ${q(dstDb)}`);
  await dst.query(ddl);
  const keys = await primaryKey(src, srcDb, table);
  const reader = chunkReader(src, srcDb, table, keys);
  let after: unknown[] | undefined;
  let copied = 0;
  for (;;) {
    const { fields, rows } = await reader.next(after);
    if (rows.length === 0) return copied;
    copied += rows.length;
    const cols = fields.map(q).join(', ');
    const one = `(${fields.map(() => '?').join(', ')})`;
    await dst.query(`INSERT INTO ${q(dstDb)}.${q(table)} (${cols}) VALUES ${rows.map(() => one).join(', ')}`, rows.flat());
    const idx = keys.map((k) => fields.indexOf(k));
    after = idx.map((i) => rows[rows.length - 1]![i]);
  }
}

/** How verify names a table: the object fleet's by name (as before), a wide-column one with its database (`wc00003.events`). */
function tableLabel(db: string, table: string): string {
  return db.startsWith(WC_PREFIX) ? `${db}.${table}` : table;
}

/**
 * Compares one table of a shard: the source's primary-key chunks, and for each the target's rows
 * in the same key interval (so rows on one side only are found too); target rows past the
 * source's last key are a chunk of their own.
 */
async function compareTable(shard: number, table: string, a: { c: Conn; db: string } | undefined, b: { c: Conn; db: string } | undefined, sync?: () => Promise<void>, label = table): Promise<{ rows: number; chunks: number; mismatches: ChunkMismatch[] }> {
  const out = { rows: 0, chunks: 0, mismatches: [] as ChunkMismatch[] };
  const keys = await primaryKey((a ?? b)!.c, (a ?? b)!.db, table);
  const ra = a === undefined ? undefined : chunkReader(a.c, a.db, table, keys);
  const rb = b === undefined ? undefined : chunkReader(b.c, b.db, table, keys);
  let last: unknown[] | undefined;
  if (ra === undefined) await sync?.();
  for (;;) {
    const chunk = ra === undefined ? { fields: [], rows: [] as unknown[][] } : await ra.next(last);
    if (chunk.rows.length === 0) break;
    const idx = keys.map((k) => chunk.fields.indexOf(k));
    const hi = idx.map((i) => chunk.rows[chunk.rows.length - 1]![i]);
    const lo = idx.map((i) => chunk.rows[0]![i]);
    await sync?.();
    const other = rb === undefined ? [] : (await rb.upTo(last, hi)).rows;
    out.chunks++;
    out.rows += chunk.rows.length;
    if (hashRows(chunk.rows) !== hashRows(other)) {
      out.mismatches.push({ shard, table: label, fromKey: last === undefined ? '-inf' : keyText(lo), toKey: keyText(hi), sourceRows: chunk.rows.length, targetRows: other.length });
    }
    last = hi;
  }
  if (ra !== undefined) await sync?.();
  const extra = rb === undefined ? [] : (await rb.rest(last)).rows;
  if (extra.length > 0) {
    out.chunks++;
    out.mismatches.push({ shard, table: label, fromKey: last === undefined ? '-inf' : keyText(last), toKey: '+inf', sourceRows: 0, targetRows: extra.length });
  }
  return out;
}
