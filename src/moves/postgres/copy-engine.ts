import { setTimeout as sleep } from 'node:timers/promises';
import { ShardKitError } from '../../errors.js';
import { shardDatabaseName } from '../../storage/shard-names.js';
import type { MoveRecord } from '../../topology/shard-map.js';
import type { MoveProgressFn } from '../move-engine.js';
import { moveShards } from '../move-shared.js';
import { copySessionName, MARKER_SCHEMA, qi, ql, replicationName, type Client } from './engine-base.js';
import { copyThrottle } from '../copy-throttle.js';
import { POSTGRES_SOURCE_STANDBY_MAX_LAG_BYTES, sourceStandbyLag } from './source-standby-lag.js';
import { copyColumns, copyProgress, copyTablesInParallel, type TableCopyState } from './parallel-copy.js';
import { PostgresMoveVerify } from './verify-engine.js';
import { dropOwnSlot, dropSlot } from './drop.js';

/** One published table: schema and name, unquoted. */
export interface PublishedTable {
  ns: string;
  t: string;
}

/** pg (SQLSTATE) and socket codes of a server that went away or is restarting: the copy starts over once it is back. */
const GONE = new Set(['57P01', '57P02', '57P03', '08000', '08001', '08003', '08006', 'ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ENOENT']);

function serverGone(err: unknown): boolean {
  const e = err as { code?: string; message?: string; cause?: unknown };
  // Ours: only a failed connect (a slot that waited too long is not the server going away).
  if (err instanceof ShardKitError) return /^cannot connect to /.test(err.message);
  if (e?.code !== undefined && GONE.has(e.code)) return true;
  if (/Connection terminated|connection ended|cannot connect to|terminating connection/i.test(e?.message ?? '')) return true;
  return false;
}

/**
 * The initial copy of a PostgreSQL move, done by the mover instead of the subscription's table
 * sync workers (they start slowly and two at a time, and one left in state `f` after the source
 * restarted stalled the copy for good): a logical slot created on a replication connection with
 * an exported snapshot, every table copied from that snapshot with binary COPY, several at once,
 * then the subscription created on that slot with copy_data = false. It streams from the slot's
 * consistent point, which is exactly where the snapshot stands.
 *
 * A source or target that goes away during the copy makes it start over once both answer (the
 * slot and the target's rows of the failed attempt dropped): the snapshot lives only as long as
 * the connection that exported it, so a copy cannot be resumed half-way.
 */
export class PostgresMoveCopy extends PostgresMoveVerify {
  /**
   * Copies `tables` (the marker's included) and creates the subscription. `fresh`: the target's
   * tables were found empty and created just now (else an interrupted copy may have left rows).
   */
  protected async copyThenSubscribe(move: MoveRecord, tables: PublishedTable[], rowsTotal: number, fresh: boolean, targetDdl: ReadonlyMap<string, string>, onProgress?: MoveProgressFn): Promise<{ rows: number; bytes: number; attempts: number }> {
    const deadlineMs = this.options.copyStallMs ?? 300_000;
    let lastError: unknown;
    for (let attempt = 1; ; attempt++) {
      try {
        const done = await this.copyOnce(move, tables, rowsTotal, !fresh || attempt > 1, targetDdl, onProgress);
        await this.step('copy: CREATE SUBSCRIPTION (target)', () => this.withConn(move.target.master, (dst) => this.subscribe(dst, move)));
        return { ...done, attempts: attempt };
      } catch (err) {
        if (!serverGone(err)) {
          // The record's abort drops the slot; an abort by another process already ran and will
          // not come back for the one this attempt made.
          if (!(await this.markerOnTarget(move).catch(() => true))) await this.withConn(move.source.master, (c) => dropOwnSlot(c, replicationName(move.id))).catch(() => undefined);
          throw err;
        }
        lastError = err;
      }
      // Both servers must answer again before the copy starts over.
      const until = Date.now() + deadlineMs;
      for (const host of [move.source.master, move.target.master]) {
        for (;;) {
          try {
            await this.withConn(host, (c) => c.query('SELECT 1'));
            break;
          } catch (err) {
            if (!serverGone(err)) throw err;
            if (Date.now() > until) {
              throw new ShardKitError('SHARD_UNAVAILABLE', `the initial copy from ${move.source.master} to ${move.target.master} failed (${(lastError as Error).message}) and ${host} did not answer again within ${deadlineMs} ms`, { cause: lastError });
            }
            await sleep(200);
          }
        }
      }
      // An abort by another process ended this copy (undoTarget): its marker is gone, so no new copy.
      if (!(await this.markerOnTarget(move))) {
        throw new ShardKitError('UNKNOWN_MOVE', `move ${move.id} was aborted by another process during its copy (its marker on ${move.target.master} is gone): not copying again`, { cause: lastError });
      }
    }
  }

  private markerOnTarget(move: MoveRecord): Promise<boolean> {
    return this.withConn(move.target.master, (c) => this.markerOn(c, move));
  }

  /**
   * `targetDdl`: per schema, the statements (IF NOT EXISTS) that make its tables on the target, run
   * by the stream that copies them, in its transaction: the DDL of one shard overlaps the copy of
   * the others (320 tables' DDL in one transaction before the copy was half of its fixed cost).
   * `truncate`: what an earlier attempt left is emptied first, in the same transaction.
   */
  private async copyOnce(move: MoveRecord, tables: PublishedTable[], rowsTotal: number, truncate: boolean, targetDdl: ReadonlyMap<string, string>, onProgress?: MoveProgressFn): Promise<{ rows: number; bytes: number }> {
    const name = replicationName(move.id);
    // What an earlier attempt left: its slot (its snapshot died with its connection); its rows go with `truncate`.
    await this.withConn(move.source.master, (src) => dropOwnSlot(src, name));
    const schemaOf = new Map(tables.map((x) => [`${qi(x.ns)}.${qi(x.t)}`, x.ns]));
    const plan = await this.step('copy: columns (source)', () => this.withConn(move.source.master, (src) => copyColumns(src, tables.map((x) => ({ ns: x.ns, t: x.t })), qi)));
    const repl = await this.connect(move.source.master, true);
    const state = new Map<string, TableCopyState>();
    let copying = true;
    let reporter: Promise<void> | undefined;
    try {
      const snapshot = await this.step('copy: CREATE_REPLICATION_SLOT (source)', () => this.createExportedSlot(repl, move, name));
      const shards = moveShards(move);
      const counted = (table: string) => !table.startsWith(`${qi(MARKER_SCHEMA)}.`);
      const started = performance.now();
      const report = async (): Promise<void> => {
        if (onProgress === undefined) return;
        const p = await this.withConn(move.target.master, (dst) => copyProgress(dst, state, counted));
        const doneShards = shards.filter((s) => plan.filter((t) => t.name.startsWith(`${qi(shardDatabaseName(s))}.`)).every((t) => state.get(t.name)?.done === true)).length;
        const seconds = (performance.now() - started) / 1000;
        const rate = seconds > 0 ? p.rows / seconds : 0;
        onProgress(doneShards, shards.length, {
          rowsCopied: p.rows, rowsTotal, bytesCopied: p.bytes,
          rowsPerSecond: Math.round(rate), bytesPerSecond: seconds > 0 ? Math.round(p.bytes / seconds) : 0,
          ...(rate > 0 ? { etaSeconds: Math.max(0, Math.ceil((rowsTotal - p.rows) / rate)) } : {}),
          ...(p.running.length > 0 ? { tables: p.running } : {}),
        });
      };
      reporter = (async () => {
        while (copying) {
          await report().catch(() => undefined);
          for (let i = 0; i < 5 && copying; i++) await sleep(100);
        }
      })();
      await this.step('copy: tables', () => copyTablesInParallel({
        tables: plan, snapshot, streams: this.options.copyStreams ?? 4, state, truncate,
        groupOf: (t) => schemaOf.get(t.name) ?? t.name, before: (ns) => targetDdl.get(ns),
        // --max-rate in bytes per second: every stream's bytes count against one budget (a retried
        // copy starts it again); and the lag gate: no piece goes while the source's standby is
        // further behind than the bound (it is read before the first piece, then every 250 ms).
        throttle: copyThrottle({
          ...(this.options.maxBytesRate !== undefined ? { maxBytesRate: this.options.maxBytesRate } : {}),
          lag: sourceStandbyLag((host) => this.connect(host), move), maxLag: this.options.maxSourceStandbyLagBytes ?? POSTGRES_SOURCE_STANDBY_MAX_LAG_BYTES,
          ...(this.options.onCopyWait !== undefined ? { onWait: this.options.onCopyWait } : {}),
        }),
        connectSource: () => this.connect(move.source.master),
        // The move's marker on the target, held by every stream: an abort (another process) drops
        // it only once no copy of this move can still commit, and no copy starts after it.
        guard: `LOCK TABLE ${this.markerTable(move)} IN ACCESS SHARE MODE`,
        // Named, so that an --abort from another process can end them (undoTarget).
        connectTarget: async () => {
          const c = await this.connect(move.target.master);
          await c.query(`SET application_name = '${copySessionName(move.id)}'`);
          return c;
        },
      }));
      copying = false;
      await reporter;
      // The last line of the copy: every shard and every row.
      await report();
    } finally {
      copying = false;
      await reporter?.catch(() => undefined);
      await repl.end().catch(() => undefined);
    }
    let rows = 0;
    let bytes = 0;
    for (const [table, s] of state) {
      if (table.startsWith(`${qi(MARKER_SCHEMA)}.`)) continue;
      rows += s.rows;
      bytes += s.bytes;
    }
    return { rows, bytes };
  }

  /**
   * CREATE_REPLICATION_SLOT waits for every transaction holding an xid on the source, whatever it
   * touches: one left `idle in transaction` would hold the move for ever, so the wait is bounded
   * (slotWaitMs) and the error names who to look at. Returns the exported snapshot's name, valid
   * while `repl` stays open and idle.
   */
  private async createExportedSlot(repl: Client, move: MoveRecord, name: string): Promise<string> {
    const waitMs = Math.max(1, Math.floor(this.options.slotWaitMs ?? 60_000));
    const { rows: [me] } = await repl.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    let open: Array<{ pid: number; state: string; since: string; usename: string }> | undefined;
    const timer = setTimeout(() => {
      void this.withConn(move.source.master, async (src) => {
        open = (await src.query<{ pid: number; state: string; since: string; usename: string }>(
          `SELECT pid, coalesce(state, '?') AS state, to_char(xact_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS since, coalesce(usename, '?') AS usename
             FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid() AND pid <> $1 ORDER BY xact_start LIMIT 5`, [me!.pid])).rows;
        // Ended here, the walsender's unfinished slot goes with it (made later, it would keep WAL for ever).
        await src.query('SELECT pg_terminate_backend($1)', [me!.pid]);
      }).catch(() => undefined);
    }, waitMs);
    try {
      const { rows: [r] } = await repl.query<{ snapshot_name: string }>(`CREATE_REPLICATION_SLOT ${qi(name)} LOGICAL pgoutput (SNAPSHOT 'export')`);
      return r!.snapshot_name;
    } catch (err) {
      if (open === undefined) throw err;
      await this.withConn(move.source.master, async (src) => {
        for (let i = 0; i < 100; i++) {
          const { rows } = await src.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [me!.pid]);
          if (rows.length === 0) break;
          await sleep(100);
        }
        await dropSlot(src, name);
      });
      const who = open.map((r) => `pid ${r.pid} (${r.state} since ${r.since}, user ${r.usename})`).join(', ');
      throw new ShardKitError('SHARD_UNAVAILABLE', `creating the move's replication slot on ${move.source.master} waited ${waitMs} ms for transactions open there since before the copy started${who === '' ? '' : `: ${who}`}; end them (pg_stat_activity on ${move.source.master}) and start the move again`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
  }

  /** The subscription on the copy's slot: no copy of its own, it streams what the source wrote after the snapshot. */
  private async subscribe(dst: Client, move: MoveRecord): Promise<void> {
    const name = replicationName(move.id);
    if (await this.subscriptionExists(dst, move)) return;
    await dst.query(`CREATE SUBSCRIPTION ${qi(name)} CONNECTION ${ql(this.conninfo(move.source.master))} PUBLICATION ${qi(name)} WITH (copy_data = false, create_slot = false, slot_name = ${ql(name)})`);
  }
}
