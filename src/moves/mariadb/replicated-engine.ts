import { ShardKitError } from '../../errors.js';
import type { MoveRecord } from '../../topology/shard-map.js';
import type { FreezeCost, MoveProgressFn, VerifyProgressFn, VerifyReport } from '../move-engine.js';
import { measureFreezeCost } from './admission.js';
import { copySource, dumpProgress, moveCopyThrottle } from './copy-throttle.js';
import { moveShards } from '../move-shared.js';
import { armLockFence, completeLockFence, lockFence, waitFenceSessions, type LockFence, type LockedGroup, type LockedTable } from './lock-fence.js';
import {
  binlogPos, connectionStatus, slaveCaughtUp, createConnection, filterMatches, gtidByDomain, moveConnectionName, refuseUnnamedSlave, removeConnection, restoreSlavePosition, runningConnections, setMovePosition, slavePos, sourceDomain, startFiltered,
} from './move-replication.js';
import { autoIncrementPast, autoIncrements, autoIncrementsIn } from './auto-increment.js';
import { MariadbMoveEngine, type MariadbMoveEngineOptions } from './engine-base.js';
import { FENCE_DOMAIN_ID, q, WC_PREFIX, type Conn, type ShardDatabase } from './names.js';
import { closeFreezeConns, openFreezeConns, type FreezeConns } from './freeze-conns.js';
import { verifyAtConsistentPoint, type VerifiedTables } from './pre-verify.js';
import { abortOnTurnedTarget, dropUnloggedCopy, type TargetCleanup } from './turned-target.js';

export { FENCE_DOMAIN_ID };

/**
 * Shard moves on MariaDB with admin access (the CLI's default on a dev cluster or with
 * SHARDKIT_ADMIN_USER): the copy happens before the freeze, by replication:
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
 *            connections) fences by RENAME TABLE instead (as copy-engine.ts does), binlogged in the fence domain
 *            (FENCE_DOMAIN_ID): the source's slave follows it, the move connection skips it
 *            (DO_DOMAIN_IDS), so the target's copy stays in dbNNNNN;
 *   catchUp  reads the source's gtid_binlog_pos only now that the fence holds (vitess#16563),
 *            MASTER_GTID_WAIT on the target, and alters AUTO_INCREMENT only where the source's
 *            counter went past what beforeFreeze set;
 *   verify   in full before the freeze, at one consistent point (pre-verify.ts); under it key bounds and tails;
 *   beforeSwitch  arms the lock fence: each locking session gets one block that waits for the
 *            mover's "go" lock, renames its tables into dbNNNNN_moved (fence domain) and ends;
 *            the server runs it even if the mover dies, so the fence becomes permanent;
 *   afterSwitch  releases "go" (the renames run, outside the freeze), then removes the connection;
 *   undo     removes the connection and the target's copy, then the source's tables go back (engine-base.ts undo).
 *
 */
export class MariadbReplicatedMoveEngine extends MariadbMoveEngine {
  /** Per move id: connections beforeFreeze opened for the freeze (fence, catch-up, verify reuse them; afterSwitch/undo close them). */
  private readonly held = new Map<string, FreezeConns>();

  /** Per move id: the target AUTO_INCREMENT values beforeFreeze set (`dbNNNNN.t`); counters never go down, so catch-up need not read them again. */
  private readonly raised = new Map<string, Map<string, bigint>>();

  /** Per move id: the lock fence this process holds (fence -> beforeSwitch arms it -> afterSwitch completes it). */
  private readonly locks = new Map<string, LockFence>();

  /** Per move id: what verifyBeforeFreeze found equal (verifyFenced checks only what changed since). */
  private readonly preVerified = new Map<string, VerifiedTables>();

  private get fenceDomain(): number {
    return this.options.fenceDomainId ?? FENCE_DOMAIN_ID;
  }

  /** Opens every connection the replicated freeze path uses, all at once (freeze-conns.ts). */
  private openFreezeConns(move: MoveRecord): Promise<FreezeConns> {
    return openFreezeConns(move, {
      connect: (host) => this.connect(host),
      admin: this.options.admin!,
      fenceDomain: this.fenceDomain,
      lockWaitTimeoutS: this.options.lockWaitTimeoutS ?? 10,
      fenceConnections: this.options.fenceConnections ?? 4,
    });
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
  protected override async release(moveId: string): Promise<void> {
    const k = this.held.get(moveId);
    const lock = this.locks.get(moveId);
    this.held.delete(moveId);
    this.raised.delete(moveId);
    this.locks.delete(moveId);
    this.preVerified.delete(moveId);
    let failed: unknown;
    if (lock !== undefined) await completeLockFence(lock).catch((err: unknown) => { failed = err; });
    if (k !== undefined) await closeFreezeConns(k);
    if (failed !== undefined) throw failed;
  }

  /** A lock fence of a mover that died after arming it may still be renaming on the source: wait for it. */
  protected override async settledFence(c: Conn, move: MoveRecord): Promise<void> {
    await waitFenceSessions(c, move.id);
  }

  private async withAdmin<T>(host: string, fn: (c: Conn) => Promise<T>): Promise<T> {
    const c = await this.options.admin!.connect(host);
    try {
      return await fn(c);
    } finally {
      await c.end().catch(() => c.destroy());
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

  async prepare(move: MoveRecord, onProgress?: MoveProgressFn): Promise<Record<string, string | number | boolean>> {
    await this.step('copy: target writable', () => this.targetWritable(move));
    const admin = this.options.admin!;
    const name = moveConnectionName(move);
    // Steps timed for the benches' profile of the copy's fixed costs (#29: 320 small tables).
    const live = await this.step('copy: source catalogue', () => this.sourceTables(move));
    const doTables = this.doTables(live);
    if (doTables.length === 0) throw new ShardKitError('MOVE_NOTHING_TO_MOVE', `shards ${move.range[0]}..${move.range[1]} have no live object tables on ${move.source.master}: nothing to move`);
    const domain = await this.withAdmin(move.source.master, sourceDomain);
    if (domain === this.fenceDomain) throw new ShardKitError('INVALID_CONFIG', `the source ${move.source.master} runs with gtid_domain_id ${domain}, the move's fence domain: give the mover another fenceDomainId`);
    await this.step('copy: target empty, replication connection created', () => this.withAdmin(move.target.master, async (c) => {
      if (move.target.slave === undefined) await refuseUnnamedSlave(c, move.target.master);
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
    }));
    const srcTables = new Set(doTables);
    // The tables left out of the dump, and the statistics' estimate of the rows it carries (for the ETA).
    const [ignore, estimate] = await this.step('copy: row estimate (source)', () => this.withAdmin(move.source.master, async (c) => {
      const [rows] = await c.query(`SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) AS t, TABLE_ROWS AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA IN (${live.map(() => '?').join(', ')})`, live.map((x) => x.live));
      const all = rows as Array<{ t: string; n: number | string | null }>;
      return [all.map((r) => r.t).filter((t) => !srcTables.has(t)), all.filter((r) => srcTables.has(r.t)).reduce((n, r) => n + Number(r.n ?? 0), 0)] as const;
    }));
    const targets = [move.target.master, ...(move.target.slave !== undefined ? [move.target.slave] : [])];
    if (move.target.slave !== undefined) await this.step('copy: target slave caught up', () => slaveCaughtUp(admin, move.target.master, move.target.slave!, this.options.catchUpTimeoutS ?? 30));
    // While the dump runs: its bytes, rows read off the stream (exact: dump-row-count.ts), rate and ETA.
    let copied = { rowsCopied: 0, bytesCopied: 0 };
    const from = await this.step('copy: pick the source (slave or master)', () => copySource(admin, move));
    const position = await this.step('copy: dump and load', () => admin.dumpCopy(from, targets, live.filter((x) => x.tables.length > 0).map((x) => x.live), {
      ignoreTables: ignore, throttle: moveCopyThrottle(admin, move, this.options), streams: this.options.copyStreams ?? 4,
      ...(onProgress !== undefined ? { onBytes: dumpProgress(estimate, (p) => {
        copied = { rowsCopied: p.rowsCopied ?? 0, bytesCopied: p.bytesCopied };
        onProgress(0, moveShards(move).length, p);
      }) } : {}),
    }));
    const at = gtidByDomain(position).get(domain)?.text;
    // The copy's last progress line: every row the dump carried, all loaded (a loader that failed failed the copy).
    onProgress?.(moveShards(move).length, moveShards(move).length, { ...copied, rowsTotal: copied.rowsCopied });
    await this.step('copy: replication started', () => this.withAdmin(move.target.master, async (c) => {
      // The source's domain starts at the dump's snapshot (and nothing else: see setMovePosition).
      await setMovePosition(c, at);
      await startFiltered(c, name, doTables);
    }));
    const modShards = live.some((x) => x.live.startsWith(WC_PREFIX) && x.tables.length > 0);
    const detail: Record<string, string | number | boolean> = { tables: doTables.length, connection: name, domain, position: at ?? '' };
    if (modShards) detail.modShards = true;
    return detail;
  }

  /** The full comparison before the freeze, at one consistent point of the running replication (pre-verify.ts); verifyFenced then checks only what changed. */
  async verifyBeforeFreeze(move: MoveRecord, onVerify?: VerifyProgressFn): Promise<VerifyReport> {
    const [domain, live] = await Promise.all([this.withAdmin(move.source.master, sourceDomain), this.sourceTables(move)]);
    const { report, verified } = await verifyAtConsistentPoint(moveShards(move).length, {
      open: () => Promise.all([this.connect(move.source.master), this.connect(move.target.master), this.options.admin!.connect(move.target.master)]), pairs: (src, dst) => this.verifyPairs(move, src, dst),
      connection: moveConnectionName(move), domain, doTables: this.doTables(live), waitS: this.options.catchUpTimeoutS ?? 30, ...(this.options.onStep !== undefined ? { onStep: this.options.onStep } : {}),
      ...(onVerify !== undefined ? { onVerify } : {}),
    });
    if (report.mismatches.length === 0) this.preVerified.set(move.id, verified);
    return report;
  }

  /** The admission check's measure (admission.ts): catch-up and the fenced key bounds on the live hosts now. */
  async freezeCost(move: MoveRecord): Promise<FreezeCost> {
    return measureFreezeCost(this.options.admin!, move, [...(this.preVerified.get(move.id) ?? [])].map(([name, v]) => ({ name, keys: v.keys })), this.options.catchUpTimeoutS ?? 30);
  }

  /** Under the freeze: counts and tails after a verifyBeforeFreeze of this process, else (a resumed mover) the full verify. */
  async verifyFenced(move: MoveRecord, onVerify?: VerifyProgressFn): Promise<VerifyReport> {
    const verified = this.preVerified.get(move.id);
    return verified === undefined ? this.verify(move, onVerify) : this.verifyFencedOn(move, verified);
  }

  async lag(move: MoveRecord): Promise<number> {
    const name = moveConnectionName(move);
    const domain = await this.withAdmin(move.source.master, sourceDomain);
    const doTables = this.doTables(await this.sourceTables(move));
    const applied = await this.withAdmin(move.target.master, async (c) => {
      const st = await connectionStatus(c, name);
      if (st === undefined) throw new ShardKitError('MOVE_STATE_LOST', `the target ${move.target.master} has no replication connection '${name}': resume from the start (shards move --abort, then move again)`);
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
    // Again: a `dev up` since prepare makes every master the map does not name yet read-only.
    await this.targetWritable(move);
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
          if (loose.length > 0 || srcHave.get(d.moved)!.length > 0) throw new ShardKitError('MOVE_FENCE_MISMATCH', `${d.live}.${loose[0] ?? '?'} on ${move.source.master} is not under the move's fence: refusing to catch up`);
          fenced.push({ ...d, tables: live });
          continue;
        }
        if (srcHave.get(d.live)!.length > 0) {
          throw new ShardKitError('MOVE_FENCE_MISMATCH', `${d.live} on ${move.source.master} still has live tables of the move: refusing to catch up on a shard that is not fenced`);
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
        if (missing.length > 0) throw new ShardKitError('MOVE_STATE_LOST', `the target ${move.target.master} has no copy of ${d.live}.${missing[0]}: abort the move (shards move --abort) and start it again`);
        onProgress?.(++done, fenced.length);
      }
      await autoIncrementPast(this.options.onStep, this.raised.get(move.id), sourceCounters, c, fenced, locked !== undefined);
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

  /** The target's part of an abort: the move's connection and copy go. Re-runnable. */
  protected override async undoTarget(move: MoveRecord): Promise<void> {
    // Neither writable (a new pair's master restarted read-only): the recorded master, as root.
    const writable = await this.writableHost(move, 'target').catch(() => move.target.master);
    if (writable !== move.target.master) return abortOnTurnedTarget(this.cleanup(), move, writable);
    const name = moveConnectionName(move);
    // The connection stops before the source's tables are renamed back (that RENAME must not reach the target).
    const ours = await this.withAdmin(move.target.master, async (c) => {
      const st = await connectionStatus(c, name);
      // Only a copy this move made, on either host of the target pair: a prepare that refused the
      // target (ALREADY_EXISTS) created no connection and recorded nothing, and the tables it
      // found (replicated to the target's slave too) are not ours to drop.
      if (st === undefined && move.detail?.connection === undefined) return undefined;
      if (st !== undefined) await c.query(`STOP SLAVE '${name}'`);
      // The source's domain without asking the source (it may be the server that died).
      const domain = st?.doDomains[0] ?? (typeof move.detail?.domain === 'number' ? move.detail.domain : await this.withAdmin(move.source.master, sourceDomain));
      await this.dropTargetCopy(c, move);
      const masterPos = String(((await c.query('SELECT @@GLOBAL.gtid_binlog_pos AS p'))[0] as Array<{ p: string }>)[0]!.p);
      return { domain, masterPos };
    });
    if (ours === undefined) return;
    // The copy was loaded into the target's slave by a loader of its own (sql_log_bin=0), so a
    // target master killed mid-copy can leave the slave holding tables the master never had:
    // the master's binlogged drops cannot reach those.
    // The slave first applies what the master binlogged (the move connection's last rows, its drops):
    // dropped unlogged before, a row event found its table gone and stopped the applier (CI run).
    const slave = move.target.slave;
    if (slave !== undefined) {
      await this.withAdmin(slave, async (c) => {
        if (ours.masterPos) await c.query('SELECT MASTER_GTID_WAIT(?, 30)', [ours.masterPos]);
        await dropUnloggedCopy(this.cleanup(), c, move);
      });
    }
    // The (stopped) connection marks the copy as ours until both hosts are clean: an abort that
    // failed on the slave (a mover killed mid-copy records no detail) is run again and still drops
    // the slave's copy, where without the mark it would have to leave it as someone else's.
    await this.withAdmin(move.target.master, async (c) => {
      await removeConnection(c, name);
      await restoreSlavePosition(c, ours.domain);
    });
  }

  private cleanup(): TargetCleanup {
    return {
      withAdmin: (host, fn) => this.withAdmin(host, fn), presentMany: (c, dbs) => this.presentMany(c, dbs),
      dropCopy: (c, move) => this.dropTargetCopy(c, move), databases: (move) => this.databases(move).flatMap((d) => [d.live, d.moved]),
    };
  }

  override async close(): Promise<void> {
    for (const id of [...this.held.keys()]) await this.release(id);
  }

  protected override heldForVerify(moveId: string): { src: Conn; dst: Conn; srcAdmin: Conn; dstAdmin: Conn; lock: LockFence | undefined } | undefined {
    const k = this.held.get(moveId);
    return k === undefined ? undefined : { ...k, lock: this.locks.get(moveId) };
  }

  constructor(options: MariadbMoveEngineOptions & { admin: NonNullable<MariadbMoveEngineOptions['admin']> }) {
    super(options, options.maxLag ?? 50);
  }
}
