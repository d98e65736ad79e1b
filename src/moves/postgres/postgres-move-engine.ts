import { ShardKitError } from '../../errors.js';
import { shardDatabaseName } from '../../storage/shard-names.js';
import { postgresDialect } from '../../storage/postgres/index.js';
import type { MoveRecord } from '../../topology/shard-map.js';
import type { MoveEngine, MoveProgressFn, VerifyProgressFn, VerifyReport } from '../move-engine.js';
import { undoTargetThenSource } from '../undo-order.js';
import { moveShards, writableHostOf } from '../move-shared.js';
import { countRows } from './postgres-copy-progress.js';
import { PostgresMoveCopy, type PublishedTable } from './copy-engine.js';
import { copySessionName, MARKER_SCHEMA, movedSchema, qi, ql, replicationName, type Client } from './engine-base.js';
import { readSequences } from './sequences.js';
import { tableWrites } from './table-writes.js';
import { bucketAggregates } from './chunk-settle.js';
import { dropOwnSlot, dropSchemaIfEmpty, dropSlot, dropSubscription } from './drop.js';

export { POSTGRES_MOVE_MAX_LAG_BYTES, replicationName, type PostgresMoveEngineOptions, type PostgresMoveHost } from './engine-base.js';

/**
 * Shard moves on PostgreSQL (storage backend postgres), with logical replication:
 *
 *   prepare  target master: a target already holding rows in the moving shards is refused, then a
 *            marker table made; each moving shard's schema and object tables are created as
 *            `shardkit init` does by the copy stream that copies them, in its transaction;
 *            source master: a publication FOR TABLE of exactly those object tables plus the
 *            marker (not FOR TABLES IN SCHEMA: the dev cluster keeps mod-shard lookup tables in
 *            the same dbNNNNN schema, and those stay); then the copy (copy-engine.ts): a logical
 *            slot made with an exported snapshot, every table copied from that snapshot with
 *            binary COPY, several at once, and a subscription on that slot with copy_data =
 *            false, which streams every change after the snapshot. Returns once it exists.
 *            The source must run with wal_level=logical.
 *   lag      bytes of WAL the source wrote that the subscription's slot has not confirmed.
 *   fence    one transaction on the source: LOCK the moving tables (waits for transactions in
 *            flight: they commit before the fence and replicate, or fail), then ALTER TABLE ...
 *            SET SCHEMA dbNNNNN_moved. Services then get 42P01 (relation does not exist), which
 *            the backend maps to the fence error (postgres-errors.ts, missingTable).
 *   catchUp  read after the fence holds (vitess#16563): a marker row is bumped on the source and
 *            catchUp waits until the target applied it; logical replication applies commits in
 *            order, so the target then holds every write the source acknowledged. Identity
 *            sequences (and next_id()'s) are not replicated: the target's are set past the
 *            source's, then the subscription (and its slot) and the publication are dropped.
 *   verify   source (fenced) vs target: per table a hash aggregate (count, sum of 64-bit row
 *            hashes); when they differ, primary-key chunks name the mismatching ranges.
 *   undo     subscription, publication, markers and the target's tables dropped; the source's
 *            tables moved back into dbNNNNN.
 *   dropMoved  the fenced dbNNNNN_moved schemas dropped on the source.
 *
 * The target's standby follows its master by streaming replication, so it gets the copy too.
 */
export class PostgresMoveEngine extends PostgresMoveCopy implements MoveEngine {
  async prepare(move: MoveRecord, onProgress?: MoveProgressFn): Promise<Record<string, string | number | boolean>> {
    const name = replicationName(move.id);
    const published: PublishedTable[] = [];
    await this.withConn(move.source.master, async (src) => {
      const { rows: [w] } = await src.query<{ wal_level: string }>('SHOW wal_level');
      if (w?.wal_level !== 'logical') {
        throw new ShardKitError('INVALID_CONFIG', `${move.source.master} runs with wal_level=${w?.wal_level ?? '?'}: a PostgreSQL shard move replicates from the source master with a publication, which needs wal_level=logical (set it in postgresql.conf, with max_replication_slots and max_wal_senders of at least 4, and restart the server; dev clusters get it from \`shardkit dev up\`)`);
      }
      const shards = moveShards(move);
      const have = await this.presentIn(src, [...shards.map((s) => shardDatabaseName(s)), ...shards.map(movedSchema)]);
      for (const s of shards) {
        const live = have.get(shardDatabaseName(s))!;
        if (live.length === 0 && have.get(movedSchema(s))!.length > 0) {
          throw new ShardKitError('MOVE_FENCE_MISMATCH', `shard ${s} is fenced on ${move.source.master} (${movedSchema(s)}) but the move was not: run shards move --abort`);
        }
        for (const t of live) published.push({ ns: shardDatabaseName(s), t });
      }
    });
    if (published.length === 0) throw new ShardKitError('NOT_FOUND', `shards ${move.range[0]}..${move.range[1]} have no object tables on ${move.source.master}: nothing to move (run shardkit init?)`);
    const quoted = published.map((x) => `${qi(x.ns)}.${qi(x.t)}`);

    // The shard as `shardkit init` makes it (tables, index, next_id()); all IF NOT EXISTS, so a resumed copy runs it again.
    const shardDdl = (s: number) => postgresDialect.createShard(this.options.schema, { host: move.target.master, shard: s, fleet: 'objects' }).join(';\n');
    const targetDdl = new Map(moveShards(move).filter((s) => published.some((x) => x.ns === shardDatabaseName(s))).map((s) => [shardDatabaseName(s), shardDdl(s)]));
    let subscribed = false;
    let fresh = true;
    await this.step('prepare: target tables', () => this.withConn(move.target.master, async (dst) => {
      if (await this.subscriptionExists(dst, move)) {
        subscribed = true; // a resumed prepare: the copy is done and streaming
        return;
      }
      const { rows: [r] } = await dst.query<{ ro: string }>('SELECT pg_is_in_recovery()::text AS ro');
      if (r?.ro === 'true') throw new ShardKitError('INVALID_ARGUMENT', `the target ${move.target.master} is a standby (read-only): move to a master`);
      // With the marker there, the target's tables of the moving shards and what an interrupted
      // copy put in them are this move's (a copy tried again truncates them first): it is made
      // once they were found empty, before the copy streams make the tables (copy-engine.ts).
      if (await this.markerOn(dst, move)) {
        fresh = false;
        return;
      }
      await this.refuseHeldRows(dst, move);
      // Shards with no tables on the source get theirs here (the copy makes the others'), in the marker's transaction.
      await dst.query('BEGIN');
      try {
        const bare = moveShards(move).filter((s) => !targetDdl.has(shardDatabaseName(s)));
        if (bare.length > 0) await dst.query(bare.map(shardDdl).join(';\n'));
        await this.createMarker(dst, move);
        await dst.query('COMMIT');
      } catch (err) {
        await dst.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    }));
    if (subscribed) return { tables: published.length, subscription: name };

    let rowsTotal = 0;
    await this.step('prepare: source count, marker, publication', () => this.withConn(move.source.master, async (src) => {
      // For the progress shown while the copy runs (a count, not the planner's estimate).
      rowsTotal = await countRows(src, quoted);
      this.writesAtPrepare.set(move.id, await tableWrites(src, moveShards(move).map((s) => shardDatabaseName(s))));
      await this.createMarker(src, move);
      await src.query(`INSERT INTO ${this.markerTable(move)} (id, n) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`);
      // Before the slot: pgoutput reads the publication as of each change it decodes.
      const { rows } = await src.query('SELECT 1 FROM pg_publication WHERE pubname = $1', [name]);
      if (rows.length === 0) await src.query(`CREATE PUBLICATION ${qi(name)} FOR TABLE ${[...quoted, this.markerTable(move)].join(', ')}`);
    }));

    const copied = await this.copyThenSubscribe(move, [...published, { ns: MARKER_SCHEMA, t: name }], rowsTotal, fresh, targetDdl, onProgress);
    return { tables: published.length, subscription: name, rowsCopied: copied.rows, bytesCopied: copied.bytes, copyAttempts: copied.attempts };
  }

  /** Refuses a target that holds rows in the moving shards' tables (one round trip: 320 statements otherwise). */
  private async refuseHeldRows(dst: Client, move: MoveRecord): Promise<void> {
    const have = await this.presentIn(dst, moveShards(move).map((s) => shardDatabaseName(s)));
    const existing = [...have].flatMap(([ns, ts]) => ts.map((t) => ({ ns, t })));
    if (existing.length === 0) return;
    const { rows: full } = await dst.query<{ ns: string; t: string }>(`SELECT * FROM (${existing.map((x) => `(SELECT ${ql(x.ns)} AS ns, ${ql(x.t)} AS t FROM ${qi(x.ns)}.${qi(x.t)} LIMIT 1)`).join(' UNION ALL ')}) x LIMIT 1`);
    const f = full[0];
    if (f !== undefined) throw new ShardKitError('ALREADY_EXISTS', `${f.ns}.${f.t} on the target ${move.target.master} already holds rows: drop them before moving shard ${Number(f.ns.slice(2))} there`);
  }

  /** A restore-in move's check (src/moves/restore-in-engine.ts): the target is a master and holds no rows of the moving shards. */
  async checkRestoreTarget(move: MoveRecord): Promise<void> {
    await this.withConn(move.target.master, async (dst) => {
      const { rows: [r] } = await dst.query<{ ro: string }>('SELECT pg_is_in_recovery()::text AS ro');
      if (r?.ro === 'true') throw new ShardKitError('INVALID_ARGUMENT', `the target ${move.target.master} is a standby (read-only): restore into a master`);
      await this.refuseHeldRows(dst, move);
    });
  }

  /** The comparison before the freeze (verify-engine.ts), then what it left unsettled compared chunk by chunk (settleHotChunks). */
  override async verifyBeforeFreeze(move: MoveRecord, onVerify?: VerifyProgressFn): Promise<VerifyReport> {
    return this.settleHotChunks(move, await super.verifyBeforeFreeze(move, onVerify), onVerify);
  }

  async lag(move: MoveRecord): Promise<number> {
    return this.withConn(move.source.master, async (src) => {
      const { rows } = await src.query<{ lag: string | null }>(
        'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::text AS lag FROM pg_replication_slots WHERE slot_name = $1', [replicationName(move.id)]);
      if (rows.length === 0) throw new ShardKitError('MOVE_STATE_LOST', `the move's replication slot ${replicationName(move.id)} is gone from ${move.source.master}`);
      return Math.max(0, Number(rows[0]!.lag ?? 0));
    });
  }

  /**
   * Before the freeze (services still write): each shard's dbNNNNN_moved schema created on the
   * source (empty; undo drops it again), the fence's plan read (which tables it locks and moves),
   * and a connection to each master left open, so that nothing under the freeze waits for a new
   * connection or reads the catalogue twice.
   */
  async beforeFreeze(move: MoveRecord): Promise<void> {
    const shards = moveShards(move);
    await this.withConn(move.source.master, async (c) => {
      const { rows } = await c.query<{ n: string }>('SELECT nspname AS n FROM pg_namespace WHERE nspname = ANY($1::text[])', [shards.map(movedSchema)]);
      const have = new Set(rows.map((r) => r.n));
      const missing = shards.map(movedSchema).filter((ns) => !have.has(ns));
      if (missing.length > 0) await c.query(missing.map((ns) => `CREATE SCHEMA IF NOT EXISTS ${qi(ns)}`).join(';\n'));
      this.fencePlans.set(move.id, await this.fencePlan(c, move));
    });
    // The target's sequences: nothing moves them before the switch (the subscription applies
    // rows with their ids; identity columns take them as given), so catch-up needs not read them.
    await this.withConn(move.target.master, async (dst) => {
      this.targetSequences.set(move.id, await readSequences(dst, shards.map((x) => shardDatabaseName(x)), true));
    });
  }

  async fence(move: MoveRecord): Promise<void> {
    const planned = this.fencePlans.get(move.id);
    this.fencePlans.delete(move.id);
    await this.withConn(move.source.master, async (c) => {
      // The plan beforeFreeze read, or the catalogue now (a resumed mover). A table of the plan
      // that is gone since makes LOCK fail: the move aborts.
      const plan = planned ?? await this.step('fence: catalogue', () => this.fencePlan(c, move));
      const locks: string[] = [];
      const moves: string[] = [];
      const fencedNow: number[] = [];
      for (const [s, live] of plan) {
        if (live.length === 0) continue; // fenced already (a resumed mover)
        fencedNow.push(s);
        moves.push(`CREATE SCHEMA IF NOT EXISTS ${qi(movedSchema(s))}`);
        for (const t of live) {
          locks.push(`${qi(shardDatabaseName(s))}.${qi(t)}`);
          moves.push(`ALTER TABLE ${qi(shardDatabaseName(s))}.${qi(t)} SET SCHEMA ${qi(movedSchema(s))}`);
        }
      }
      await c.query('BEGIN');
      try {
        await c.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(this.options.lockTimeoutMs ?? 10_000))}`);
        if (locks.length > 0) {
          // ACCESS EXCLUSIVE on every moving table at once waits for every transaction in
          // flight on them. Then the shards' sequence values, while no insert can advance the
          // identity ones (after the renames, the server resets every session's catalogue
          // caches, and the read would cost tens of ms under the freeze). next_id()'s could
          // still be advanced by a service that has not seen the freeze; its ids carry their
          // millisecond, and the target hands out later ones. Then the renames, in one round
          // trip, and one transaction (all fenced or none).
          await this.step('fence: LOCK TABLE (source)', () => c.query(`LOCK TABLE ${locks.join(', ')} IN ACCESS EXCLUSIVE MODE`));
          const sequences = await this.step('fence: identity sequences (source)', () => readSequences(c, fencedNow.map((s) => shardDatabaseName(s))));
          // The chunks the check under the freeze compares, on this side: exact now (nothing
          // writes them any more), and cheaper than after the renames (see verifyFenced).
          const chunked = this.chunked.get(move.id) ?? [];
          const openChunks = chunked.some((t) => t.open.length > 0) ? await this.step('fence: open chunks (source)', () => bucketAggregates(c, chunked, (t) => `${qi(shardDatabaseName(t.shard))}.${qi(t.table)}`, (t) => t.open)) : undefined;
          await this.step('fence: ALTER TABLE SET SCHEMA (source)', () => c.query(moves.join(';\n')));
          await this.step('fence: COMMIT', () => c.query('COMMIT'));
          // Every shard fenced here: catch-up needs no catalogue check, and takes those values.
          if (fencedNow.length === plan.size) {
            this.fenced.set(move.id, sequences);
            this.fencedTables.set(move.id, plan);
            if (openChunks !== undefined) this.fencedChunks.set(move.id, openChunks);
          }
        } else {
          await c.query('COMMIT');
        }
      } catch (err) {
        await c.query('ROLLBACK').catch(() => undefined);
        if ((err as { code?: string }).code === '55P03') throw new ShardKitError('SHARD_UNAVAILABLE', `the fence on ${move.source.master} waited longer than its lock timeout for transactions on the moving tables`, { cause: err });
        throw err;
      }
    });
  }

  async catchUp(move: MoveRecord, onProgress?: MoveProgressFn): Promise<void> {
    await this.withConn(move.source.master, (src) => this.withConn(move.target.master, async (dst) => {
      const fenced = this.fenced.get(move.id);
      this.fenced.delete(move.id);
      // Not fenced by this process (a resumed mover): make sure the fence holds.
      const live = fenced !== undefined ? undefined : await this.step('catch-up: source catalogue', () => this.presentIn(src, moveShards(move).map((x) => shardDatabaseName(x))));
      for (const s of moveShards(move)) {
        if ((live?.get(shardDatabaseName(s))!.length ?? 0) > 0) {
          throw new ShardKitError('MOVE_FENCE_MISMATCH', `${shardDatabaseName(s)} on ${move.source.master} still has live object tables: refusing to catch up a shard that is not fenced`);
        }
      }
      // After a resumed catch-up that already finished, the subscription may be gone (afterSwitch): nothing to wait for.
      // The sequences are raised while the marker travels (pg queues the statements of both on
      // the same two connections; the marker's wait mostly sleeps between polls).
      const subscribed = await this.step('catch-up: subscription exists?', () => this.subscriptionExists(dst, move));
      await Promise.all([
        subscribed ? this.step('catch-up: marker applied (waitApplied)', () => this.waitApplied(src, dst, move, true)) : undefined,
        this.step('catch-up: advanceSequences', () => this.advanceSequences(src, dst, move, fenced)),
      ]);
      // No onProgress here: the copy reported every shard done before the freeze, and a
      // progress write now would be one more map version under the freeze.
      // The subscription stays until afterSwitch: dropping it here would lengthen the write pause,
      // and nothing flows through it any more (the source is fenced).
    }));
  }

  /**
   * After the switch, outside the freeze: the subscription (and with it the slot, which would
   * otherwise keep WAL on the source), the publication and the markers are dropped. Also run by
   * dropMoved, for a switch whose clean-up failed.
   */
  async afterSwitch(move: MoveRecord): Promise<void> {
    await this.releaseReplication(move, move.source.master);
  }

  /** The move's subscription, publication, slot and markers gone; `source`: the source pair's writable server. */
  private async releaseReplication(move: MoveRecord, source: string): Promise<void> {
    const name = replicationName(move.id);
    await this.withConn(move.target.master, async (dst) => {
      await dropSubscription(dst, name);
      await dst.query(`DROP TABLE IF EXISTS ${this.markerTable(move)}`);
    });
    await this.withConn(source, async (src) => {
      await src.query(`DROP PUBLICATION IF EXISTS ${qi(name)}`);
      await dropSlot(src, name);
      await src.query(`DROP TABLE IF EXISTS ${this.markerTable(move)}`);
    });
  }

  /**
   * Sequences are not replicated: each sequence of the moving shards on the target (identity
   * columns', which moved with their tables into dbNNNNN_moved on the source, and next_id()'s
   * two) is set to at least the source's value, so ids made on the target continue past the
   * source's (a deleted row's id is never reused: the source's counter counts, not max(id)).
   * Three statements whatever the number of shards: this runs while services hold writes.
   */
  private async advanceSequences(src: Client, dst: Client, move: MoveRecord, fenced?: Map<string, bigint>): Promise<void> {
    const shards = moveShards(move);
    // The values the fence read under its locks, or (a resumed mover) read now.
    const [source, target] = await Promise.all([
      fenced ?? this.step('sequences: read source', () => readSequences(src, [...shards.map(movedSchema), ...shards.map((x) => shardDatabaseName(x))])),
      this.targetSequences.get(move.id) ?? this.step('sequences: read target', () => readSequences(dst, shards.map((x) => shardDatabaseName(x)), true)),
    ]);
    this.targetSequences.delete(move.id);
    const names: string[] = [];
    const values: string[] = [];
    for (const [key, have] of target) {
      const want = source.get(key);
      if (want === undefined || (have !== undefined && have >= want)) continue;
      const [ns, seq] = key.split('.') as [string, string];
      names.push(`${qi(ns)}.${qi(seq)}`);
      values.push(want.toString());
    }
    this.options.onStep?.('sequences: setval (count)', names.length);
    if (names.length > 0) await this.step('sequences: setval (target)', () => dst.query('SELECT setval(u.s::regclass, u.v, true) FROM unnest($1::text[], $2::bigint[]) AS u(s, v)', [names, values]));
  }

  async undo(move: MoveRecord): Promise<void> {
    this.preVerified.delete(move.id);
    this.chunked.delete(move.id);
    this.fencedChunks.delete(move.id);
    this.fencePlans.delete(move.id);
    this.fenced.delete(move.id);
    this.fencedTables.delete(move.id);
    this.targetSequences.delete(move.id);
    this.writesAtPrepare.delete(move.id);
    const name = replicationName(move.id);
    await undoTargetThenSource(move, () => this.undoTarget(move), () => this.withConn(move.source.master, async (c) => {
      await c.query(`DROP PUBLICATION IF EXISTS ${qi(name)}`);
      // Run after the target's part: the subscription that used the slot is gone by now.
      await dropOwnSlot(c, name);
      await c.query(`DROP TABLE IF EXISTS ${this.markerTable(move)}`);
      await c.query('BEGIN');
      try {
        for (const s of moveShards(move)) {
          const fenced = await this.present(c, movedSchema(s));
          const live = await this.present(c, shardDatabaseName(s));
          for (const t of fenced.filter((x) => !live.includes(x))) await c.query(`ALTER TABLE ${qi(movedSchema(s))}.${qi(t)} SET SCHEMA ${qi(shardDatabaseName(s))}`);
          await dropSchemaIfEmpty(c, movedSchema(s));
        }
        await c.query('COMMIT');
      } catch (err) {
        await c.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    }));
  }

  /** The target's part of an abort: the subscription and the copy go. Re-runnable. A restore-in move clears its target with it. */
  async undoTarget(move: MoveRecord): Promise<void> {
    const name = replicationName(move.id);
    // The target pair may have failed over since the move began: its copy is cleaned where it
    // replicates to the other server (before, --abort failed read-only until it failed back).
    const host = await writableHostOf(move, 'target', (h) => this.writable(h));
    await this.withConn(host, async (c) => {
      // The target's tables are this move's only if its marker table is there: prepare creates
      // both in one transaction. Without it (prepare refused a target that holds rows, or never
      // got that far) the target's tables are someone else's data and stay.
      const ours = await this.markerOn(c, move);
      // A copy another mover is still running (an --abort from a second process) is ended, and the
      // marker dropped before the tables: every copy stream holds it, so the DROP waits for any
      // stream that started since, and none starts after. Otherwise the copy committed its
      // tables after the ones below were dropped, and the next move there met ALREADY_EXISTS.
      await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()', [copySessionName(move.id)]);
      if (ours) await c.query(`DROP TABLE IF EXISTS ${this.markerTable(move)}`);
      await dropSubscription(c, name);
      if (!ours) return;
      for (const s of moveShards(move)) {
        const tables = await this.present(c, shardDatabaseName(s));
        if (tables.length > 0) await c.query(`DROP TABLE IF EXISTS ${tables.map((t) => `${qi(shardDatabaseName(s))}.${qi(t)}`).join(', ')}`);
        // What prepare created besides the tables (next_id() and its sequences), and the schema if that leaves it empty.
        for (const sql of postgresDialect.afterDropTables?.({ host, shard: s, fleet: 'objects' }) ?? []) await c.query(sql);
        await dropSchemaIfEmpty(c, shardDatabaseName(s));
      }
      await c.query(`DROP TABLE IF EXISTS ${this.markerTable(move)}`);
    });
  }

  /** Takes writes: not a standby, nor an old master a fleet failover left under its read-only fence. */
  private async writable(host: string): Promise<boolean> {
    return this.withConn(host, async (c) => (await c.query<{ ok: boolean }>("SELECT NOT pg_is_in_recovery() AND current_setting('default_transaction_read_only') = 'off' AS ok")).rows[0]?.ok === true);
  }

  async dropMoved(move: MoveRecord, options: { movedBack?: boolean } = {}): Promise<number> {
    const host = await writableHostOf(move, 'source', (h) => this.writable(h));
    await this.releaseReplication(move, host);
    let dropped = 0;
    await this.withConn(host, async (c) => {
      for (const s of moveShards(move)) {
        const live = (await this.present(c, shardDatabaseName(s))).length > 0;
        if (live && !options.movedBack) {
          throw new ShardKitError('MOVE_FENCE_MISMATCH', `${shardDatabaseName(s)} on ${host} has live object tables: refusing to drop shard ${s} (move ${move.id})`);
        }
        const { rows } = await c.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [movedSchema(s)]);
        if (rows.length === 0) continue;
        await c.query(`DROP SCHEMA ${qi(movedSchema(s))} CASCADE`);
        // Moved back: the live schema keeps its next_id() (only the stale copy went).
        if (live) {
          dropped++;
          continue;
        }
        // The shard's next_id() stays with its schema only while something else (mod-shard tables) lives there.
        for (const sql of postgresDialect.afterDropTables?.({ host, shard: s, fleet: 'objects' }) ?? []) await c.query(sql);
        await dropSchemaIfEmpty(c, shardDatabaseName(s));
        dropped++;
      }
    });
    return dropped;
  }
}
