import { ShardKitError } from '../../errors.js';
import type { MoveRecord } from '../../topology/shard-map.js';
import type { MoveProgressFn } from '../move-engine.js';
import { moveShards } from '../move-shared.js';
import { copyTable } from './copy.js';
import { MariadbMoveEngine, type MariadbMoveEngineOptions } from './engine-base.js';
import { q, WC_PREFIX } from './names.js';
import { autoIncrementPast, autoIncrementsIn } from './auto-increment.js';

/**
 * Shard moves on MariaDB without admin access: everything is copied under the freeze (like the
 * embedded engine):
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
export class MariadbCopyMoveEngine extends MariadbMoveEngine {
  constructor(options: MariadbMoveEngineOptions) {
    super(options, 0);
  }

  async prepare(move: MoveRecord): Promise<Record<string, string | number | boolean>> {
    await this.targetWritable(move);
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

  async lag(): Promise<number> {
    return 0;
  }

  /** Before the freeze: the fence's dbNNNNN_moved databases on the source, so the fence itself is only the RENAME. */
  async beforeFreeze(move: MoveRecord): Promise<void> {
    // Again: a `dev up` since prepare makes every master the map does not name yet read-only.
    await this.targetWritable(move);
    await this.withConn(move.source.master, async (c) => {
      for (const d of (await this.fencePlan(c, move)).missing) await c.query(`CREATE DATABASE IF NOT EXISTS ${q(d)} DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
    });
  }

  /**
   * The fence: RENAME TABLE of the moving object tables into dbNNNNN_moved on the source master
   * (binlogged, so the source's slave follows). RENAME waits for the metadata lock, so a
   * transaction in flight on those tables commits before it or fails (vitess#9481).
   */
  async fence(move: MoveRecord): Promise<void> {
    await this.withConn(move.source.master, async (c) => {
      await c.query(`SET SESSION lock_wait_timeout = ${Math.max(1, Math.floor(this.options.lockWaitTimeoutS ?? 10))}`);
      const plan = await this.fencePlan(c, move);
      for (const d of plan.missing) await c.query(`CREATE DATABASE IF NOT EXISTS ${q(d)} DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
      // One statement for every moving table: atomic, and it waits (MDL) for the transactions in flight on them.
      const renames = [...plan.renames.values()].flat();
      if (renames.length > 0) await c.query(`RENAME TABLE ${renames.join(', ')}`);
    });
  }

  async catchUp(move: MoveRecord, onProgress?: MoveProgressFn): Promise<void> {
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
            throw new ShardKitError('MOVE_FENCE_MISMATCH', `${d.live} on ${move.source.master} still has live tables of the move: refusing to copy a shard that is not fenced`);
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

  /** Nothing to do after the switch: the copy was made under the freeze, the fence is the RENAME. */
  async afterSwitch(): Promise<void> {}

  /** A restore-in move's (src/moves/restore-in-engine.ts): the target's tables of the moving shards dropped, whatever prepare recorded. */
  async clearTarget(move: MoveRecord): Promise<void> {
    await this.undoTarget({ ...move, detail: { ...move.detail, tables: 0 } });
  }

  /** A restore-in move's catch-up, under the freeze: each target table's AUTO_INCREMENT at least its fenced source table's. */
  async raiseIdsPastFenced(move: MoveRecord): Promise<void> {
    const dbs = this.databases(move);
    await this.withConn(move.source.master, (src) => this.withConn(move.target.master, async (dst) => {
      const have = await this.presentMany(dst, dbs.map((d) => d.live));
      const fenced = dbs.map((d) => ({ ...d, tables: have.get(d.live)! }));
      await autoIncrementPast(this.options.onStep, undefined, autoIncrementsIn(src, dbs.map((d) => d.moved)), dst, fenced, false);
    }));
  }

  /** The target's part of an abort: the move's connection and copy go. Re-runnable. */
  protected override async undoTarget(move: MoveRecord): Promise<void> {
    // Only after a completed prepare (its detail.tables; an abort records detail.abortReason of
    // its own, so any detail is not enough): one that refused the target's rows made nothing to
    // drop, and those rows (and the target slave's replicas of them) are someone else's.
    if (move.detail?.tables === undefined) return;
    // On the pair's master now: the drops replicate to its slave (a failed-over target included).
    await this.withConn(await this.writableHost(move, 'target'), async (c) => {
      for (const d of this.databases(move)) {
        const tables = await this.present(c, d.live);
        if (tables.length > 0) await c.query(`DROP TABLE IF EXISTS ${tables.map((t) => `${q(d.live)}.${q(t)}`).join(', ')}`);
      }
    });
  }
}
