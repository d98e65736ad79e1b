import mysql from 'mysql2/promise';
import { ShardKitError } from '../../errors.js';
import { shardDatabaseName } from '../../storage/shard-names.js';
import type { MoveRecord } from '../../topology/shard-map.js';
import type { MoveEngine, MoveProgressFn, VerifyProgressFn, VerifyReport } from '../move-engine.js';
import type { MoveAdmin } from './move-admin.js';
import { undoTargetThenSource } from '../undo-order.js';
import { refuseReplicatingTarget } from './move-replication.js';
import { addTableResult, emptyReport, hostAddress, moveShards, refuseFenceClash, writableHostOf } from '../move-shared.js';
import type { LockFence } from './lock-fence.js';
import { timedStep, type OnStep } from '../step-timer.js';
import { movedName, q, WC_PREFIX, wcDatabaseName, type Conn, type ShardDatabase } from './names.js';
import { chunks, compareTable, STATEMENT_TABLES, tableLabel, type VerifyPair } from './verify.js';
import { gtidsNotReached } from '../../storage/mysql/index.js';
import { verifyChangedSince, type VerifiedTables } from './pre-verify.js';
import type { CopyWait } from './copy-throttle.js';

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
  /** Dumps the pre-copy runs at once, from one consistent point (default 4; 1: one dump as before). */
  copyStreams?: number;
  /** Rows per second the pre-copy (the dump) may read at most (`shards move --max-rate 5000`); default: no limit. */
  maxRate?: number;
  /** Bytes per second of the dump the pre-copy may read at most (`shards move --max-rate 20MB/s`); default: no limit. */
  maxBytesRate?: number;
  /** The pre-copy waits while the source's slave is more than this many transactions behind its master (default 1000). */
  maxSourceSlaveLag?: number;
  /** Told each time the pre-copy waits (its rate, or the source's slave lag). */
  onCopyWait?: (wait: CopyWait) => void;
  /** Told how long each step of fence, catch-up and verify took (bench/moves-mariadb.bench.ts prints them). */
  onStep?: OnStep;
}

/**
 * What both MariaDB move engines share: connections, the moving databases and their tables, the
 * fence plan, verify (checksums, then primary-key chunks), the source's part of undo, dropMoved,
 * and verifyReplica (a master against its slave, for `shards verify`). The strategies:
 * replicated-engine.ts (dump + GTID replication + lock fence) and copy-engine.ts (copy under the freeze).
 */
/** The server's @@GLOBAL.read_only (our admin and mover accounts may bypass it: asked, not tried). */
async function readOnly(c: Conn): Promise<boolean> {
  return Number(((await c.query('SELECT @@GLOBAL.read_only AS r'))[0] as Array<{ r: number | string }>)[0]!.r) === 1;
}

export abstract class MariadbMoveEngine implements MoveEngine {
  readonly kind = 'mariadb';
  readonly droppedUnit = 'fenced database(s)';

  readonly maxLag: number;

  protected readonly options: MariadbMoveEngineOptions;

  constructor(options: MariadbMoveEngineOptions, maxLag: number) {
    if (options.tables.length === 0) throw new ShardKitError('INVALID_CONFIG', 'the schema has no object tables to move');
    this.options = options;
    this.maxLag = maxLag;
  }

  /** Runs one step of the freeze path, telling onStep how long it took. */
  protected step<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return timedStep(this.options.onStep, name, fn);
  }

  protected async connect(host: string): Promise<Conn> {
    const h = hostAddress(this.options.hosts, host, this.options);
    const conn = await mysql.createConnection({
      ...(h.socket !== undefined ? { socketPath: h.socket } : { host: h.host ?? '127.0.0.1', port: h.port ?? 3306 }),
      user: h.user, ...(h.password !== undefined ? { password: h.password } : {}),
      supportBigNumbers: true, bigNumberStrings: true, dateStrings: true, timezone: 'Z',
    });
    // Timestamps travel as text: the same zone on both sides keeps them exact.
    await conn.query("SET time_zone = '+00:00'");
    return conn;
  }

  protected async withConn<T>(host: string, fn: (c: Conn) => Promise<T>): Promise<T> {
    const c = await this.connect(host);
    try {
      return await fn(c);
    } finally {
      await c.end().catch(() => undefined);
    }
  }

  /**
   * The target master takes the range's writes once the map switches: a new pair's master starts
   * read-only (`dev add-pair`), so with admin access it is made writable before the freeze
   * (nothing routes to it before the switch). Without admin access a read-only target is refused
   * before anything changes, saying how to give that access (issue #28: writes to the moved range
   * were refused with SHARD_MOVING after the switch until `dev up` ran).
   */
  protected async targetWritable(move: MoveRecord): Promise<void> {
    const host = move.target.master;
    const admin = this.options.admin;
    if (admin !== undefined) {
      const c = await admin.connect(host);
      try {
        if (await readOnly(c)) {
          await refuseReplicatingTarget(c, `${host} stays read-only`);
          await c.query('SET GLOBAL read_only = 0');
        }
      } finally {
        await c.end().catch(() => c.destroy());
      }
      return;
    }
    if (await this.withConn(host, readOnly)) {
      throw new ShardKitError('PRECONDITION_FAILED', `the target ${host} is read-only and this mover has no admin access to make it writable: give --dir DIR (a dev cluster) or set SHARDKIT_ADMIN_USER and SHARDKIT_ADMIN_PASSWORD (docs/moves.md); nothing changed`);
    }
  }

  /** The databases of the moving shards: each shard's dbNNNNN, then its wcNNNNN on a wide-column fleet. */
  protected databases(move: MoveRecord): ShardDatabase[] {
    return moveShards(move).flatMap((shard) => [shardDatabaseName(shard), ...(this.options.wideColumn ? [wcDatabaseName(shard)] : [])].map((live) => ({ shard, live, moved: movedName(live) })));
  }

  /** The tables a move carries out of `db` (live or moved name), of those `found` there: all of a wide-column database, ours of an object one. */
  protected ours(db: string, found: readonly string[]): string[] {
    return db.startsWith(WC_PREFIX) ? [...found].sort() : this.tables.filter((t) => found.includes(t));
  }

  /** Object tables, and the mod-shard ones when the wide-column shard (mod shard n) moves with them. */
  protected get tables(): readonly string[] {
    return this.options.wideColumn ? [...this.options.tables, ...(this.options.modTables ?? [])] : this.options.tables;
  }

  /** Which of our tables exist in `db` on this connection. */
  protected async present(c: Conn, db: string): Promise<string[]> {
    return (await this.presentMany(c, [db])).get(db)!;
  }

  /** Which of our tables exist in each of `dbs`, in one catalogue query. */
  protected async presentMany(c: Conn, dbs: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(dbs.map((d) => [d, []]));
    if (dbs.length === 0) return out;
    const [rows] = await c.query(`SELECT TABLE_SCHEMA AS d, TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA IN (${dbs.map(() => '?').join(', ')})`, dbs);
    for (const r of rows as Array<{ d: string; t: string }>) out.get(r.d)?.push(r.t);
    for (const d of dbs) out.set(d, this.ours(d, out.get(d)!));
    return out;
  }

  /** Refuses a target that already holds rows of a moving shard (a copy left by an earlier move, say). */
  protected async requireEmptyTarget(c: Conn, move: MoveRecord): Promise<void> {
    // One catalogue query and one statement per STATEMENT_TABLES tables: a round trip per table
    // cost 0.8 s of the copy's start for 320 small tables on a busy host (#29).
    const all = this.databases(move);
    const have = await this.presentMany(c, all.map((d) => d.live));
    const tables = all.flatMap((d) => have.get(d.live)!.map((t) => ({ d, t })));
    for (const part of chunks(tables, STATEMENT_TABLES)) {
      const [rows] = await c.query(part.map((x, i) => `(SELECT ${i} AS i FROM ${q(x.d.live)}.${q(x.t)} LIMIT 1)`).join(' UNION ALL '));
      const held = (rows as Array<{ i: number | string }>)[0];
      if (held !== undefined) {
        const { d, t } = part[Number(held.i)]!;
        throw new ShardKitError('ALREADY_EXISTS', `${d.live}.${t} on the target ${move.target.master} already holds rows: drop them before moving shard ${d.shard} there`);
      }
    }
  }

  /** What the fence renames (per shard: the live tables of its databases) and which `_moved` databases it needs. */
  protected async fencePlan(c: Conn, move: MoveRecord): Promise<{ renames: Map<number, string[]>; live: Array<ShardDatabase & { tables: string[] }>; missing: string[]; alreadyFenced: number }> {
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
   * Source against target. Tables present on both sides are compared first with one CHECKSUM
   * TABLE statement per side (the check runs under the freeze: it must not read every row into
   * the mover); a table whose checksums differ, or that exists on one side only, is compared in
   * primary-key chunks, which names the differing key ranges.
   */
  async verify(move: MoveRecord, onVerify?: VerifyProgressFn): Promise<VerifyReport> {
    // Under the freeze, on the connections beforeFreeze opened (a second source connection counts rows beside the checksums).
    const held = this.heldForVerify(move.id);
    if (held !== undefined) return this.verifyOn(move, held.src, held.dst, held.srcAdmin, held.lock, held.dstAdmin, onVerify);
    const src = await this.connect(move.source.master);
    try {
      const dst = await this.connect(move.target.master);
      try {
        return await this.verifyOn(move, src, dst, src, undefined, undefined, onVerify);
      } finally {
        await dst.end().catch(() => undefined);
      }
    } finally {
      await src.end().catch(() => undefined);
    }
  }

  /** The tables verify compares: each moving table on the source (fenced copy once the fence holds, live before) and on the target. */
  protected async verifyPairs(move: MoveRecord, src: Conn, dst: Conn): Promise<VerifyPair[]> {
    const all = this.databases(move);
    const [srcMap, dstMap] = await this.step('verify: catalogue', () => Promise.all([
      this.presentMany(src, all.flatMap((d) => [d.live, d.moved])),
      this.presentMany(dst, all.map((d) => d.live)),
    ]));
    const pairs: VerifyPair[] = [];
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
    return pairs;
  }

  /**
   * With a lock fence (`lock`), the source's tables are readable only on the sessions that lock
   * them: each session checksums its own tables, and the rows are counted on the target (`dstCounter`;
   * equal checksums mean equal rows), all side by side.
   */
  protected async verifyOn(move: MoveRecord, src: Conn, dst: Conn, counter: Conn = src, lock?: LockFence, dstCounter?: Conn, onVerify?: VerifyProgressFn): Promise<VerifyReport> {
    const owner = new Map<string, Conn>(lock?.groups.flatMap((g) => g.tables.map((t) => [`${t.db}.${t.table}`, g.conn] as const)) ?? []);
    const srcConn = (db: string, table: string): Conn => owner.get(`${db}.${table}`) ?? src;
    // A locked table is read on its (admin) fence session: the chunks it is compared with come from
    // an admin connection to the target too, so both sides decode values alike.
    const dstRows = lock !== undefined && dstCounter !== undefined ? dstCounter : dst;
    const report = emptyReport();
    const pairs = await this.verifyPairs(move, src, dst);
    report.shards = moveShards(move).length;
    const both = pairs.filter((p) => p.a !== undefined && p.b !== undefined);
    const sums = async (c: Conn, names: string[]): Promise<string[]> => {
      const out: string[] = [];
      for (const part of chunks(names, STATEMENT_TABLES)) {
        const [rows] = await c.query(`CHECKSUM TABLE ${part.join(', ')}`);
        for (const r of rows as Array<{ Checksum: string | number | null }>) out.push(String(r.Checksum));
      }
      return out;
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
      const out: number[] = [];
      const conn = lock !== undefined && dstCounter !== undefined ? dstCounter : counter;
      for (const part of chunks(both.map((p, i) => ({ p, i })), STATEMENT_TABLES)) {
        const [rows] = await conn.query(part.map(({ p, i }) => `SELECT ${i} AS i, COUNT(*) AS n FROM ${lock !== undefined && dstCounter !== undefined ? p.b : p.a}`).join(' UNION ALL '));
        for (const r of rows as Array<{ i: number | string; n: number | string }>) out[Number(r.i)] = Number(r.n);
      }
      return out;
    };
    const [sa, sb, n] = await this.step('verify: CHECKSUM TABLE both sides + COUNT(*)', () => Promise.all([sourceSums(), sums(dst, both.map((p) => p.b!)), counter === src ? Promise.resolve(undefined) : counts()]));
    const rowCounts = n ?? (await counts());
    const quick = new Map<VerifyPair, number>();
    both.forEach((p, i) => {
      if (sa[i] !== 'null' && sa[i] === sb[i]) quick.set(p, rowCounts[i]!);
    });
    // The checksums settle most tables at once; the rest are compared in chunks, one by one.
    onVerify?.(quick.size, pairs.length);
    let compared = 0;
    for (const p of pairs) {
      report.tables++;
      const rows = quick.get(p);
      if (rows !== undefined) {
        addTableResult(report, { rows, chunks: 1 });
        continue;
      }
      const r = await compareTable(p.shard, p.table, p.srcDb !== undefined ? { c: srcConn(p.srcDb, p.table), db: p.srcDb } : undefined, p.b !== undefined ? { c: dstRows, db: p.dstDb } : undefined, undefined, p.label);
      addTableResult(report, r);
      onVerify?.(quick.size + ++compared, pairs.length);
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

  async dropMoved(move: MoveRecord, options: { movedBack?: boolean } = {}): Promise<number> {
    // A move connection left by a failed afterSwitch would replay the DROP below on the target.
    await this.afterSwitch(move);
    let dropped = 0;
    const host = await this.writableHost(move, 'source');
    await this.withConn(host, async (c) => {
      await this.settledFence(c, move);
      for (const d of this.databases(move)) {
        // Moved back, the live tables are the range's own again: only the stale dbNNNNN_moved goes.
        if (!options.movedBack && (await this.present(c, d.live)).length > 0) {
          throw new ShardKitError('MOVE_FENCE_MISMATCH', `${d.live} on ${host} has live tables of the move: refusing to drop shard ${d.shard} (move ${move.id})`);
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
        // Each master chunk is read in a consistent snapshot whose binlog position is known: the
        // slave is compared once it applied exactly that position. (Reading gtid_binlog_pos after
        // the chunk counted writes made in between on the slave's side only: a live table's last
        // chunk never compared clean.)
        let inSnapshot = false;
        const snapshot = async (): Promise<void> => {
          if (inSnapshot) await m.query('COMMIT');
          await m.query('START TRANSACTION WITH CONSISTENT SNAPSHOT');
          inSnapshot = true;
        };
        const sync = async (): Promise<void> => {
          let p: string;
          if (inSnapshot) {
            const [st] = await m.query("SHOW STATUS LIKE 'binlog_snapshot_%'");
            const status = new Map((st as Array<{ Variable_name: string; Value: string }>).map((r) => [r.Variable_name.toLowerCase(), r.Value]));
            const [g] = await m.query('SELECT BINLOG_GTID_POS(?, ?) AS p', [status.get('binlog_snapshot_file') ?? '', Number(status.get('binlog_snapshot_position') ?? 0)]);
            p = String((g as Array<{ p: string | null }>)[0]!.p ?? '');
            await m.query('COMMIT');
            inSnapshot = false;
          } else {
            const [pos] = await m.query('SELECT @@GLOBAL.gtid_binlog_pos AS p');
            p = String((pos as Array<{ p: string | null }>)[0]!.p ?? '');
          }
          // Only the domains the slave has not reached: it never "reaches" one it wrote itself.
          const [cur] = await sl.query('SELECT @@GLOBAL.gtid_current_pos AS p');
          p = gtidsNotReached(p, String((cur as Array<{ p: string | null }>)[0]!.p ?? ''));
          if (p === '') return;
          const [r] = await sl.query('SELECT MASTER_GTID_WAIT(?, ?) AS r', [p, waitS]);
          if (Number((r as Array<{ r: number | string | null }>)[0]!.r) !== 0) {
            throw new ShardKitError('SHARD_UNAVAILABLE', `${slave} did not reach ${master}'s position ${p} within ${waitS} s: is it replicating? (shardkit pair verify / dev status)`);
          }
        };
        // The tables each side holds, once the slave applied what the master had when listed: a
        // slave still catching up (rebuilt, or back from a crash) lacks the tables created since.
        const onMasterAll = await this.presentMany(m, dbs);
        await sync();
        const onSlaveAll = await this.presentMany(sl, dbs);
        for (const db of dbs) {
          const [onMaster, onSlave] = [onMasterAll.get(db)!, onSlaveAll.get(db)!];
          for (const t of [...new Set([...onMaster, ...onSlave])]) {
            report.tables++;
            const a = onMaster.includes(t) ? { c: m, db } : undefined;
            const b = onSlave.includes(t) ? { c: sl, db } : undefined;
            let r = await compareTable(shard, t, a, b, sync, tableLabel(db, t), snapshot, true);
            if (r.mismatches.length > 0) r = await compareTable(shard, t, a, b, sync, tableLabel(db, t), snapshot, true);
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

  /**
   * Under the freeze, after a clean comparison before it (pre-verify.ts): only key bounds, and the
   * tails written since, on the freeze's connections (a lock fence's sessions read their tables).
   */
  protected async verifyFencedOn(move: MoveRecord, verified: VerifiedTables): Promise<VerifyReport> {
    const held = this.heldForVerify(move.id);
    if (held === undefined) return this.verify(move);
    const owner = new Map<string, Conn>(held.lock?.groups.flatMap((g) => g.tables.map((t) => [`${t.db}.${t.table}`, g.conn] as const)) ?? []);
    const pairs = await this.verifyPairs(move, held.src, held.dst);
    // Rows compared with a lock fence's (admin) session come from an admin connection to the target too: both sides decode values alike.
    const dstRows = held.lock !== undefined ? held.dstAdmin : held.dst;
    return verifyChangedSince(pairs, moveShards(move).length, verified, (p) => owner.get(`${p.srcDb}.${p.table}`) ?? held.src, dstRows, this.options.onStep);
  }

  /** The connections a replicated freeze holds for this move (verify reads on them), if any. */
  protected heldForVerify(_moveId: string): { src: Conn; dst: Conn; srcAdmin: Conn; dstAdmin: Conn; lock: LockFence | undefined } | undefined {
    return undefined;
  }

  /** The server of the move's `side` pair that takes writes now (writableHostOf). */
  protected writableHost(move: MoveRecord, side: 'source' | 'target'): Promise<string> {
    return writableHostOf(move, side, async (h) => !(await this.withConn(h, readOnly)));
  }

  /** Drops what this process holds for the move (the replicated engine's freeze connections and lock fence). */
  protected async release(_moveId: string): Promise<void> {}

  /** Waits for a fence still being completed on the source (the replicated engine's lock fence). */
  protected async settledFence(_c: Conn, _move: MoveRecord): Promise<void> {}

  /** The target's part of an abort. Re-runnable. */
  protected abstract undoTarget(move: MoveRecord): Promise<void>;

  abstract prepare(move: MoveRecord, onProgress?: MoveProgressFn): Promise<Record<string, string | number | boolean>>;
  abstract lag(move: MoveRecord): Promise<number>;
  abstract fence(move: MoveRecord): Promise<void>;
  abstract catchUp(move: MoveRecord, onProgress?: MoveProgressFn): Promise<void>;
  abstract afterSwitch(move: MoveRecord): Promise<void>;

  async close(): Promise<void> {}
}
