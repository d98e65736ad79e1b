import { shardDatabaseName } from '../../storage/shard-names.js';
import type { MoveRecord } from '../../topology/shard-map.js';
import type { FreezeCost, VerifyProgressFn, VerifyReport } from '../move-engine.js';
import { addTableResult, emptyReport, moveShards } from '../move-shared.js';
import { bucketAggregates, chunkBounds, compareOpen, firstKeyColumns, settleChunks, type ChunkedTable } from './chunk-settle.js';
import { lockWait } from './lock-holders.js';
import { STANDBY_WAIT_MS, verifyStandby } from './postgres-standby-verify.js';
import { compareChunks, sameAggregate, settleTables, tableAggregates, type TablePair, type TableSide } from './postgres-verify.js';
import { tableWrites, writtenBetween } from './table-writes.js';
import { movedSchema, PostgresMoveBase, PRE_FREEZE_ROUNDS, qi, type Client, type VerifyPlan } from './engine-base.js';

/** Reads in a row a difference must hold in before the freeze to abort the move (postgres-verify.ts persistentDifference). */
const CONFIRM_ROUNDS = 5;

/** A chunked table's name on the target, and on the source before the fence. */
const liveName = (t: ChunkedTable): string => `${qi(shardDatabaseName(t.shard))}.${qi(t.table)}`;

/** The comparisons of a PostgreSQL move: source against target (full, before the freeze, under it) and master against standby. */
export class PostgresMoveVerify extends PostgresMoveBase {
  /**
   * `shards verify` of a shard no move touches: its object tables on `master` against its
   * streaming standby `standby`, chunk by chunk, each chunk at the master's WAL position
   * (postgres-standby-verify.ts). `waitMs`: how long a chunk waits for the standby's replay.
   */
  async verifyReplica(shard: number, master: string, standby: string, waitMs = STANDBY_WAIT_MS): Promise<VerifyReport> {
    const ns = shardDatabaseName(shard);
    return this.withConn(master, (m) => this.withConn(standby, async (sb) => {
      const [onMaster, onStandby] = [await this.present(m, ns), await this.present(sb, ns)];
      const all = this.tables.filter((t) => onMaster.includes(t) || onStandby.includes(t));
      return verifyStandby(shard, ns, { master: onMaster, standby: onStandby, all }, { c: m, name: master }, { c: sb, name: standby }, waitMs);
    }));
  }

  /** Each moving shard's object tables on the source (the fenced copy once the fence holds, the live one before) and on the target. */
  protected async verifyPlan(src: Client, dst: Client, move: MoveRecord, fencedTables?: Map<number, string[]>): Promise<VerifyPlan[]> {
    const shards = moveShards(move);
    // The source's side is known when this process's fence just moved every table aside.
    const known = fencedTables === undefined ? undefined : new Map(shards.flatMap((s) => [[movedSchema(s), fencedTables.get(s) ?? []], [shardDatabaseName(s), []]]));
    const [onSrc, onDst] = await this.step('verify: catalogue', () => Promise.all([
      known ?? this.presentIn(src, [...shards.map((x) => shardDatabaseName(x)), ...shards.map(movedSchema)]),
      this.presentIn(dst, shards.map((x) => shardDatabaseName(x))),
    ]));
    return shards.map((s) => {
      const moved = onSrc.get(movedSchema(s))!;
      const srcNs = moved.length > 0 ? movedSchema(s) : shardDatabaseName(s);
      const srcTables = moved.length > 0 ? moved : onSrc.get(srcNs)!;
      const dstTables = onDst.get(shardDatabaseName(s))!;
      return { s, srcNs, srcTables, dstTables, tables: this.tables.filter((t) => srcTables.includes(t) || dstTables.includes(t)) };
    });
  }

  async verify(move: MoveRecord, onVerify?: VerifyProgressFn): Promise<VerifyReport> {
    return this.withConn(move.source.master, (src) => this.withConn(move.target.master, async (dst) => {
      const plan = await this.verifyPlan(src, dst, move);
      return this.compareTables(src, dst, move, plan, undefined, undefined, onVerify);
    }));
  }

  /**
   * Before the freeze, while the subscription still streams the services' writes: every table
   * compared whole at a consistent point (settleTables: the source's aggregates before and after
   * the target's, with the marker in between), up to PRE_FREEZE_ROUNDS rounds for the tables
   * written meanwhile. A table whose source held still and whose target differs is read in
   * chunks, which name the rows (a mismatch: the runner aborts before anything is frozen).
   * What stays unsettled (written in every round, or a difference the chunks did not confirm) is
   * remembered for verifyFenced, with the rows of the tables found equal.
   */
  async verifyBeforeFreeze(move: MoveRecord, onVerify?: VerifyProgressFn): Promise<VerifyReport> {
    this.preVerified.delete(move.id);
    return this.withConn(move.source.master, (src) => this.withConn(move.target.master, async (dst) => {
      if (!(await this.subscriptionExists(dst, move))) return this.compareTables(src, dst, move, await this.verifyPlan(src, dst, move), undefined, undefined, onVerify);
      const plan = await this.verifyPlan(src, dst, move);
      const pairs: TablePair[] = plan.flatMap((p) => p.tables.map((t) => ({
        name: `${p.s}.${t}`,
        ...(p.srcTables.includes(t) ? { a: `${qi(p.srcNs)}.${qi(t)}` } : {}),
        ...(p.dstTables.includes(t) ? { b: `${qi(shardDatabaseName(p.s))}.${qi(t)}` } : {}),
      })));
      const written = await this.writtenSincePrepare(src, move, plan);
      this.options.onStep?.('verify before the freeze: tables written since prepare, not read whole (count)', written.size);
      const settled = await settleTables(src, dst, pairs, () => this.waitApplied(src, dst, move, true), PRE_FREEZE_ROUNDS, onVerify, written);
      const report: VerifyReport = { shards: plan.length, tables: pairs.length, rows: 0, chunks: settled.equal.size, mismatches: [] };
      for (const x of settled.equal.values()) report.rows += x.rows;
      const unsettled = new Set(settled.unsettled);
      if (settled.differ.length > 0) {
        const named = await this.compareTables(src, dst, move, plan, new Set(settled.differ), CONFIRM_ROUNDS);
        addTableResult(report, named);
        // A difference the chunk comparison did not confirm (the table was written meanwhile, or
        // the target was read between two writes of a row) is checked again under the freeze.
        for (const name of settled.differ) if (!named.mismatches.some((m) => `${m.shard}.${m.table}` === name)) unsettled.add(name);
      }
      if (report.mismatches.length === 0) this.preVerified.set(move.id, { unsettled, rows: report.rows, tables: pairs.length });
      this.options.onStep?.('verify before the freeze: tables left for the freeze (count)', unsettled.size);
      return report;
    }));
  }

  /**
   * The moving tables (settleTables names) written on the source since prepare sampled its
   * counters: services write them still, so comparing them whole would most likely be wasted.
   * Empty when this process did not prepare the move (a resumed mover compares every table whole).
   */
  private async writtenSincePrepare(src: Client, move: MoveRecord, plan: VerifyPlan[]): Promise<Set<string>> {
    const before = this.writesAtPrepare.get(move.id);
    if (before === undefined) return new Set();
    const changed = writtenBetween(before, await tableWrites(src, plan.map((p) => p.srcNs)));
    return new Set(plan.flatMap((p) => p.tables.filter((t) => changed.has(`${p.srcNs}.${t}`)).map((t) => `${p.s}.${t}`)));
  }

  /**
   * After verifyBeforeFreeze, services still writing: the tables it left unsettled (written
   * throughout) compared chunk by chunk at consistent points (chunk-settle.ts). A chunk found
   * equal is settled as a whole table would be; only the chunks written during the last round (a
   * table's hot end) stay for verifyFenced, so the check under the freeze reads what services
   * wrote lately, not whole tables (issue #29: 1.8-2.0 s of aggregates at 1M rows, 30 ms at 20k).
   * A chunk that differs while its source held still is read by compareTables, which names the
   * rows: a mismatch before the freeze.
   */
  async settleHotChunks(move: MoveRecord, report: VerifyReport, onVerify?: VerifyProgressFn): Promise<VerifyReport> {
    this.chunked.delete(move.id);
    const pre = this.preVerified.get(move.id);
    if (pre === undefined || pre.unsettled.size === 0) return report;
    return this.withConn(move.source.master, (src) => this.withConn(move.target.master, async (dst) => {
      const plan = await this.verifyPlan(src, dst, move);
      const candidates = plan.flatMap((p) => p.tables
        .filter((t) => pre.unsettled.has(`${p.s}.${t}`) && p.srcTables.includes(t) && p.dstTables.includes(t))
        .map((t) => ({ s: p.s, t, rel: `${qi(p.srcNs)}.${qi(t)}` })));
      const keys = await this.step('settle: key columns', () => firstKeyColumns(src, candidates.map((c) => c.rel)));
      const tables: ChunkedTable[] = [];
      for (const c of candidates) {
        const k = keys.get(c.rel);
        if (k === undefined) continue; // a key chunk-settle cannot bound: compared whole under the freeze
        const bounds = await chunkBounds(src, c.rel, k.col);
        tables.push({ name: `${c.s}.${c.t}`, shard: c.s, table: c.t, col: k.col, type: k.type, bounds, open: bounds.map((_, i) => i).concat(bounds.length), rows: 0 });
      }
      // The settle reports tables with open chunks left, of those it took on.
      onVerify?.(0, tables.length, 'settling');
      const { differ } = await this.step('settle: chunks', () => settleChunks(src, dst, tables, liveName, liveName, () => this.waitApplied(src, dst, move, true), PRE_FREEZE_ROUNDS));
      if (differ.size > 0) {
        // Services still write: only a difference that holds (persistentDifference) aborts; a
        // bucket left differing stays open and is compared exactly under the freeze.
        const named = await this.compareTables(src, dst, move, plan, differ, CONFIRM_ROUNDS);
        if (named.mismatches.length > 0) {
          this.preVerified.delete(move.id);
          return { ...report, mismatches: [...report.mismatches, ...named.mismatches] };
        }
      }
      for (const t of tables) pre.unsettled.delete(t.name);
      onVerify?.(tables.length, tables.length, 'settling');
      this.chunked.set(move.id, tables);
      this.options.onStep?.('settle: chunks left for the freeze (count)', tables.reduce((n, t) => n + t.open.length, 0));
      return report;
    }));
  }

  /**
   * Under the freeze, after catchUp: with a verifyBeforeFreeze of this process, the catalogue on
   * both sides (every table the copy had is still there on each) and a comparison of only what it
   * left unsettled (exact now: the source is fenced and the target has applied everything): the
   * chunks settleHotChunks left open, and whole tables it could not chunk. Every other table or
   * chunk was equal at a consistent point and has since received only what the subscription
   * applied, in commit order, up to the catch-up's marker. Without one (a resumed mover), the
   * full verify.
   */
  async verifyFenced(move: MoveRecord, onVerify?: VerifyProgressFn): Promise<VerifyReport> {
    const pre = this.preVerified.get(move.id);
    const fencedTables = this.fencedTables.get(move.id);
    const chunked = this.chunked.get(move.id) ?? [];
    const fencedChunks = this.fencedChunks.get(move.id);
    this.preVerified.delete(move.id);
    this.fencedTables.delete(move.id);
    this.chunked.delete(move.id);
    this.fencedChunks.delete(move.id);
    this.writesAtPrepare.delete(move.id);
    if (pre === undefined) return this.verify(move, onVerify);
    return this.withConn(move.source.master, (src) => this.withConn(move.target.master, async (dst) => {
      const plan = await this.verifyPlan(src, dst, move, fencedTables);
      const now = plan.reduce((n, p) => n + p.tables.length, 0);
      if (now !== pre.tables) {
        // Tables appeared or went since the comparison before the freeze: compare them all.
        return this.compareTables(src, dst, move, plan);
      }
      const r = pre.unsettled.size > 0 ? await this.compareTables(src, dst, move, plan, pre.unsettled) : emptyReport();
      const srcNs = new Map(plan.map((p) => [p.s, p.srcNs]));
      // The source's side was read by the fence under its locks, before its renames reset the
      // catalogue caches (each table's first read after them rebuilds its entries: 100-250 ms for
      // 32 tables on this machine under load); else (a fence of another process) read now.
      const open = { differ: new Set<string>(), rows: 0, chunks: 0 };
      if (chunked.some((t) => t.open.length > 0)) {
        const onSrc = fencedChunks ?? await this.step('verify: open chunks (source)', () => bucketAggregates(src, chunked, (t) => `${qi(srcNs.get(t.shard)!)}.${qi(t.table)}`, (t) => t.open));
        const onDst = await this.step('verify: open chunks (target)', () => bucketAggregates(dst, chunked, liveName, (t) => t.open));
        Object.assign(open, compareOpen(onSrc, onDst, chunked));
      }
      this.options.onStep?.('verify: open chunk rows (count)', open.rows);
      // A difference in an open chunk: the tables compared in full, which names the rows.
      const named = open.differ.size > 0 ? await this.compareTables(src, dst, move, plan, open.differ) : emptyReport();
      const settledRows = chunked.reduce((n, t) => n + t.rows, 0);
      return {
        shards: plan.length, tables: now, rows: r.rows + pre.rows + settledRows + open.rows,
        chunks: r.chunks + (pre.tables - pre.unsettled.size - chunked.length) + open.chunks,
        mismatches: [...r.mismatches, ...named.mismatches],
      };
    }));
  }

  /**
   * The admission check's measure (the runner freezes only when it fits the hold budget): on the
   * live hosts now, the catch-up (the marker bumped on the source until the target applied it),
   * then the reads verifyFenced will make on both sides (the open chunks, the tables left whole),
   * and what the fence's LOCK TABLE would wait for (lock-holders.ts).
   */
  async freezeCost(move: MoveRecord): Promise<FreezeCost> {
    const plan = this.fencePlans.get(move.id);
    return this.withConn(move.source.master, (src) => this.withConn(move.target.master, async (dst) => {
      const t0 = performance.now();
      await this.waitApplied(src, dst, move);
      const catchUpMs = performance.now() - t0;
      const chunked = this.chunked.get(move.id) ?? [];
      // One more settle round first: the tails written since the last one are cut at their highest
      // key now and settle, so the freeze compares only what is written from here on. Without it
      // the open tails grew while the admission waited (20-40k rows at 1M rows a move, 5x the
      // freeze of a small move), which made the measure itself keep the freeze waiting. A tail
      // that differs stays open: it is compared exactly under the freeze, as before.
      if (chunked.some((t) => t.open.length > 0)) await this.step('admission: settle the open tails', () => settleChunks(src, dst, chunked, liveName, liveName, () => this.waitApplied(src, dst, move, true), 1));
      const whole = [...(this.preVerified.get(move.id)?.unsettled ?? [])].map((name) => {
        const [s, t] = name.split('.') as [string, string];
        return { name, table: `${qi(shardDatabaseName(Number(s)))}.${qi(t)}` };
      });
      const t1 = performance.now();
      await Promise.all([src, dst].map(async (c) => {
        await bucketAggregates(c, chunked, liveName, (t) => t.open);
        await tableAggregates(c, whole);
      }));
      const checkMs = performance.now() - t1;
      const locks = plan === undefined ? { ms: 0, what: 'none' } : await lockWait(src, [...plan].flatMap(([s, ts]) => ts.map((t) => `${qi(shardDatabaseName(s))}.${qi(t)}`)));
      return {
        ms: catchUpMs + checkMs + locks.ms,
        what: `catch-up ${Math.round(catchUpMs)} ms, check ${Math.round(checkMs)} ms (${chunked.reduce((n, t) => n + t.open.length, 0)} open chunks, ${whole.length} whole tables), fence locks ${Math.round(locks.ms)} ms (${locks.what})`,
      };
    }));
  }

  /**
   * Source against target, table by table (only the tables named `${shard}.${table}` in `only`
   * when given): hash aggregates of whole tables first, every shard's in one statement per side,
   * both sides at once (two round trips in the usual, clean case); only a table that differs is
   * read in chunks, to name the rows. While the subscription runs, a table may differ only
   * because the target has not applied the last writes yet: the marker is awaited and the
   * aggregates read again, and each chunk is compared at the marker's point.
   */
  protected async compareTables(src: Client, dst: Client, move: MoveRecord, plan: VerifyPlan[], only?: Set<string>, confirm?: number, onVerify?: VerifyProgressFn): Promise<VerifyReport> {
    const report = emptyReport();
    const sync = (await this.step('verify: subscription exists?', () => this.subscriptionExists(dst, move))) ? () => this.step('verify: marker applied (sync)', () => this.waitApplied(src, dst, move)) : undefined;
    const key = (s: number, t: string) => `${s}.${t}`;
    const wanted = (s: number, t: string) => only === undefined || only.has(key(s, t));
    const totals = () => this.step('verify: table aggregates both sides', () => Promise.all([
      tableAggregates(src, plan.flatMap((p) => p.srcTables.filter((t) => wanted(p.s, t)).map((t) => ({ name: key(p.s, t), table: `${qi(p.srcNs)}.${qi(t)}` })))),
      tableAggregates(dst, plan.flatMap((p) => p.dstTables.filter((t) => wanted(p.s, t)).map((t) => ({ name: key(p.s, t), table: `${qi(shardDatabaseName(p.s))}.${qi(t)}` })))),
    ]));
    let [a, b] = await totals();
    const differs = () => plan.some((p) => p.tables.some((t) => wanted(p.s, t) && !sameAggregate(a.get(key(p.s, t)), b.get(key(p.s, t)))));
    if (sync !== undefined && differs()) {
      await sync();
      [a, b] = await totals();
    }
    const side = (c: Client, ns: string, t: string, has: boolean): TableSide | undefined => (has ? { c, table: `${qi(ns)}.${qi(t)}` } : undefined);
    const total = plan.reduce((n, p) => n + p.tables.filter((t) => wanted(p.s, t)).length, 0);
    onVerify?.(0, total);
    for (const p of plan) {
      report.shards++;
      for (const t of p.tables) {
        if (!wanted(p.s, t)) continue;
        report.tables++;
        if (sameAggregate(a.get(key(p.s, t)), b.get(key(p.s, t)))) {
          report.rows += a.get(key(p.s, t))?.rows ?? 0;
          report.chunks++;
          continue;
        }
        const r = await compareChunks(p.s, t, side(src, p.srcNs, t, p.srcTables.includes(t)), side(dst, shardDatabaseName(p.s), t, p.dstTables.includes(t)), sync, confirm === undefined ? {} : { confirm });
        addTableResult(report, r);
        onVerify?.(report.tables, total);
      }
    }
    return report;
  }
}
