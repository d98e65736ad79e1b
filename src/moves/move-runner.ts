import { isShardKitError, ShardKitError } from '../errors.js';
import type { ShardSpan } from '../topology/map-edits.js';
import { MAX_PROGRESS_TABLES, type HostPair, type MovePhase, type MoveRecord, type ShardMap } from '../topology/shard-map.js';
import type { TopologyStore } from '../topology/topology-store.js';
import type { FreezeCost, MoveEngine, MoveProgressFn, VerifyProgressFn, VerifyReport } from './move-engine.js';
import { MoveProgressWriter } from './move-progress.js';
import { refuseUnknownTarget, waitForServices } from './service-gate.js';
import { addMove, advanceMove, abortMove, asMappedSource, beginAbort, casMoveState, freezeMove, refuseTurnedTarget, requireMove, switchMove } from './move-state.js';

/** What the runner reports as it goes (the CLI prints these as JSON lines or a bar). */
export interface MoveEvent {
  moveId: string;
  phase: MovePhase | 'aborted' | 'done';
  /** ms since this run started. */
  elapsedMs: number;
  detail?: Record<string, unknown>;
}

export interface MoveRunOptions {
  store: TopologyStore;
  engine: MoveEngine;
  /** Hosts the config declares (targets are checked against them). */
  hosts?: Iterable<string>;
  /** A new move... */
  start?: { span: ShardSpan; target: HostPair; holdMs?: number; id?: string };
  /** ...or the id of a recorded one to resume (or abort). */
  moveId?: string;
  abort?: boolean;
  /** The freeze starts only when the engine's lag is at most this (vitess#9525). Default: the engine's maxLag, else 0. */
  maxLag?: number;
  /** How long to wait for the lag to drop before giving up (and aborting). Default 60 s. */
  lagWaitMs?: number;
  /** How long to wait for every live service to reach the target (service-gate.ts) before giving up (and aborting). Default: lagWaitMs. */
  serviceWaitMs?: number;
  onEvent?: (event: MoveEvent) => void;
  /** Shards done (and rows copied, where the engine knows them) in the copy and catch-up. */
  onProgress?: MoveProgressFn;
  /** Test hook: called after each phase is recorded; a test kills or throws here. */
  afterPhase?: (phase: MovePhase) => void | Promise<void>;
}

export interface MoveResult {
  move: MoveRecord;
  /** 'switched', or 'aborted' (then the shards are back on the source). */
  outcome: 'switched' | 'aborted';
  /** From the freeze this run wrote to the switch (undefined when this run did not freeze). */
  freezeToSwitchMs?: number;
  verify?: VerifyReport;
}

/**
 * Runs a move through its phases, each recorded in the shard map before the next starts, so a
 * mover killed anywhere can be resumed (--resume) or rolled back (--abort):
 *
 *   started  -> engine.prepare (copy / check the target)              -> copied
 *   copied   -> wait for lag <= maxLag, engine.beforeFreeze (then the
 *               lag again), engine.verifyBeforeFreeze where the engine
 *               has it (clean, or the move aborts with nothing frozen;
 *               then the lag again), every live service can reach the
 *               target (service-gate.ts), freeze (services hold writes) -> frozen
 *   frozen   -> engine.fence: the source refuses everything           -> fenced
 *               (recorded while engine.catchUp runs)
 *   fenced   -> engine.catchUp, then engine.verifyFenced after a
 *               verifyBeforeFreeze, else engine.verify (clean or no
 *               switch), then the compare-and-set switch               -> switched
 *
 * Any failure before the switch aborts the move (the range goes back to the source, the freeze is
 * lifted: vitess#9525/#17326) unless the process dies, in which case the record stays for
 * --resume or --abort. A resumed move in frozen or fenced re-freezes first, with a fresh budget.
 */
export async function runMove(options: MoveRunOptions): Promise<MoveResult> {
  // Progress (shards done, lag) goes to the store's progress records, for the dashboard (move-progress.ts).
  const progress = new MoveProgressWriter(options.store);
  try {
    return await runPhases(options, progress);
  } finally {
    await progress.close();
  }
}

async function runPhases(options: MoveRunOptions, progress: MoveProgressWriter): Promise<MoveResult> {
  const { store, engine } = options;
  const started = Date.now();
  const emit = (moveId: string, phase: MoveEvent['phase'], detail?: Record<string, unknown>) => {
    if (typeof detail?.lag === 'number') progress.note({ step: 'lag', lag: detail.lag });
    options.onEvent?.({ moveId, phase, elapsedMs: Date.now() - started, ...(detail ? { detail } : {}) });
  };
  // The step the engine's shard numbers belong to: the copy (prepare) or the catch-up under the freeze.
  let copyStep: 'copying' | 'catching-up' = 'copying';
  const onProgress: MoveProgressFn = (done, total, rows) => {
    // Totals, rates and the tables in flight go to the move's record for the dashboard; a report
    // with rows always names its tables (none: an empty list), so a finished table does not linger.
    progress.note({
      step: copyStep, shardsDone: done, shardsTotal: total,
      ...(rows?.rowsCopied !== undefined ? { rowsCopied: rows.rowsCopied } : {}),
      ...(rows?.rowsTotal !== undefined ? { rowsTotal: rows.rowsTotal } : {}),
      ...(rows?.bytesCopied !== undefined ? { bytesCopied: rows.bytesCopied } : {}),
      ...(rows?.rowsPerSecond !== undefined ? { rowsPerSecond: rows.rowsPerSecond } : {}),
      ...(rows?.bytesPerSecond !== undefined ? { bytesPerSecond: rows.bytesPerSecond } : {}),
      ...(rows?.etaSeconds !== undefined ? { etaSeconds: rows.etaSeconds } : {}),
      ...(rows !== undefined ? { tables: (rows.tables ?? []).slice(0, MAX_PROGRESS_TABLES).map((t) => ({ table: t.table, rowsCopied: t.rowsCopied, bytesCopied: t.bytesCopied })) } : {}),
    });
    options.onProgress?.(done, total, rows);
  };
  // Verify progress for the dashboard (#28), in every phase that verifies.
  const onVerify: VerifyProgressFn = (done, total, step) => progress.note({ step: step ?? 'verifying', verifiedTables: done, verifyTables: total });
  const cas = (t: (m: ShardMap) => ReturnType<typeof addMove>) => progress.around(async () => {
    const next = await casMoveState(store, t, options.hosts === undefined ? {} : { hosts: options.hosts });
    if (id !== undefined) progress.track(id, next.move(id)?.phase);
    return next;
  });

  let map: ShardMap;
  let id: string | undefined;
  if (options.start !== undefined) {
    if (options.moveId !== undefined || options.abort) throw new ShardKitError('INVALID_ARGUMENT', 'give either a new move or the id of one to resume or abort');
    const start = options.start;
    const now = Date.now();
    map = await cas((m) => addMove(m, { span: start.span, target: start.target, now, ...(options.hosts !== undefined ? { hosts: options.hosts } : {}), ...(start.holdMs !== undefined ? { holdMs: start.holdMs } : {}), ...(start.id !== undefined ? { id: start.id } : {}) }));
    id = map.moves().find((m) => m.startedAt === now && m.range[0] === start.span.first && m.range[1] === start.span.last && (start.id === undefined || m.id === start.id))!.id;
    progress.track(id, 'started');
    emit(id, 'started', { range: [start.span.first, start.span.last], target: start.target });
  } else {
    if (options.moveId === undefined) throw new ShardKitError('INVALID_ARGUMENT', 'no move given');
    id = options.moveId;
    const current = await store.read();
    if (current === undefined) throw new ShardKitError('UNKNOWN_MOVE', `no move ${id}: the topology store holds no shard map`);
    map = current;
    progress.track(id, requireMove(map, id).phase);
  }

  if (options.abort || requireMove(map, id).phase === 'aborting') return abortRun(id, options.abort ? 'aborted by the operator (--abort)' : undefined);

  let resumed = options.start === undefined;
  let frozeAt: number | undefined;
  let verify: VerifyReport | undefined;
  try {
    for (;;) {
      const m = requireMove(map, id);
      switch (m.phase) {
        case 'started': {
          copyStep = 'copying';
          progress.note({ step: 'copying' }, true);
          const detail = await engine.prepare(m, onProgress);
          map = await cas((x) => advanceMove(x, id, ['started'], 'copied', detail));
          emit(id, 'copied', detail);
          await options.afterPhase?.('copied');
          break;
        }
        case 'copied': {
          // Before the engine works on the target again (its lag gate restarts replication there,
          // beforeFreeze makes a new pair's master writable): a target pair failed over since, an
          // emergency one included, whose old master may be back with no sign of it on the server.
          refuseTurnedTarget((await store.read()) ?? map, m, 'freeze');
          const maxLag = options.maxLag ?? engine.maxLag ?? 0;
          const lagWaitMs = options.lagWaitMs ?? 60_000;
          progress.note({ step: 'lag' }, true);
          await waitForLag(engine, m, maxLag, lagWaitMs, (lag) => emit(id, 'copied', { lag }));
          if (engine.beforeFreeze !== undefined) {
            // Work taken out of the freeze; it may take a while, so the lag is checked again after it.
            await engine.beforeFreeze(m);
            progress.note({ step: 'lag' }, true);
            await waitForLag(engine, m, maxLag, lagWaitMs, (lag) => emit(id, 'copied', { lag }));
          }
          if (engine.verifyBeforeFreeze !== undefined) {
            // The full comparison while services still write (vitess#6951: never a cutover of a copy that does not verify).
            const pre = await engine.verifyBeforeFreeze(m, onVerify);
            refuseMismatches(pre);
            onVerify(pre.tables, pre.tables);
            emit(id, 'copied', { verified: true, rows: pre.rows, chunks: pre.chunks });
            progress.note({ step: 'lag' }, true);
            await waitForLag(engine, m, maxLag, lagWaitMs, (lag) => emit(id, 'copied', { lag }));
          }
          // Every running service must be able to reach the target before the range can switch to it.
          progress.note({ step: 'services' }, true);
          await waitForServices(store, m, map.version, options.serviceWaitMs ?? lagWaitMs, (w) => {
            progress.note({ step: 'services' });
            emit(id, 'copied', { servicesWaiting: w });
          });
          // Admission: the freeze starts only when what it waits for fits its budget on the live hosts now.
          progress.note({ step: 'admission' }, true);
          await admitFreeze(engine, m, lagWaitMs, (cost) => {
            progress.note({ step: 'admission' });
            emit(id, 'copied', { admission: cost });
          });
          // No progress write in flight delays the freeze's compare-and-set (frozeAt is the
          // moment it is written). Under the freeze, progress is written again as the engine
          // reports it (an engine that copies there, like SQLite, shows its shards on the
          // dashboard; PostgreSQL's catch-up reports none).
          await progress.hold();
          frozeAt = Date.now();
          try {
            map = await cas((x) => freezeMove(x, id, frozeAt));
          } finally {
            progress.resume();
          }
          emit(id, 'frozen', { holdMs: m.holdMs });
          await options.afterPhase?.('frozen');
          break;
        }
        case 'frozen': {
          if (resumed) {
            frozeAt = Date.now();
            map = await cas((x) => freezeMove(x, id, frozeAt));
            resumed = false;
          }
          await engine.fence(m);
          // The record of the fence is written while the catch-up runs (both under the freeze):
          // the catch-up changes nothing a resumed mover depends on (it fences again anyway, the
          // fence is idempotent), and verify and the switch wait for the record. With a test
          // hook, whose "after fenced" means nothing else has run yet (a mover stopped or killed
          // there, the target killed before the catch-up), the record comes first as before.
          const recorded = (async () => {
            map = await cas((x) => advanceMove(x, id, ['frozen'], 'fenced'));
            emit(id, 'fenced');
            await options.afterPhase?.('fenced');
          })();
          if (options.afterPhase !== undefined) await recorded;
          recorded.catch(() => undefined); // awaited in cutover; this only keeps it from being unhandled meanwhile
          return await cutover(m, recorded);
        }
        case 'fenced': {
          if (resumed) {
            frozeAt = Date.now();
            map = await cas((x) => freezeMove(x, id, frozeAt));
            resumed = false;
          }
          // Only a resumed mover gets here: the fence is idempotent, and it is re-applied before
          // the source is trusted to be still.
          await engine.fence(m);
          return await cutover(m, undefined);
        }
        case 'switched':
          await afterSwitch(m);
          emit(id, 'done');
          return { move: m, outcome: 'switched' };
        case 'aborting':
          return abortRun(id);
      }
    }
  } catch (err) {
    // Never roll back a switched move, and never on a state someone else changed.
    const now = await store.read();
    const m = now?.move(id);
    // The record gone: another process aborted the move under this one (its undo ended this
    // one's copy sessions), or forgot it. Said as such, not as the error that followed.
    const gone = () => new ShardKitError('UNKNOWN_MOVE', `move ${id} was aborted or forgotten by another process while this one ran (${(err as Error).message ?? String(err)}): nothing left to do here`, { cause: err });
    if (m === undefined && id !== undefined) throw gone();
    if (m === undefined || m.phase === 'switched') throw err;
    // 'aborting' already: another process (an operator's --abort, heal) began the abort. This run
    // helps finish it (heal leaves the undo to whoever comes next), and says whose abort it was.
    const theirs = m.phase === 'aborting';
    try {
      await abortRun(id, (err as Error).message ?? String(err));
    } catch (abortErr) {
      // The other process's abort finished first and removed the record.
      if (isShardKitError(abortErr, 'UNKNOWN_MOVE') || (theirs && (await store.read())?.move(id) === undefined)) throw gone();
      throw new ShardKitError('MOVE_ABORT_FAILED', `move ${id} failed (${(err as Error).message}) and so did its abort (${(abortErr as Error).message}): run shards move --abort again`, { cause: err });
    }
    if (theirs) throw gone();
    // Their master now: a source pair failed over during the move is served by its old slave.
    const back = now?.rangeOf(m.range[0])?.master ?? m.source.master;
    if (err instanceof ShardKitError) throw new ShardKitError(err.code, `move ${id} aborted, the shards are back on ${back}: ${err.message}`, { cause: err });
    // A driver's own error (a server that died under the engine: "Client has encountered a
    // connection error"), said with a code; a bug in our code stays INTERNAL.
    const code = err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError ? 'INTERNAL' : 'SHARD_UNAVAILABLE';
    throw new ShardKitError(code, `move ${id} aborted, the shards are back on ${back}: ${(err as Error).message ?? String(err)}`, { cause: err });
  }

  // Under the freeze, fenced: catch-up, verify, the compare-and-set switch. `recorded`: the
  // fence's record (and its hook), still being written when this run has just fenced.
  async function cutover(m: MoveRecord, recorded: Promise<void> | undefined): Promise<MoveResult> {
    const moveId = m.id;
    try {
      copyStep = 'catching-up';
      progress.note({ step: 'catching-up' }, true);
      await engine.catchUp(m, onProgress);
    } finally {
      // A failed catch-up aborts only once the record is written (no compare-and-set races the abort's).
      if (recorded !== undefined) await recorded.catch(() => undefined);
    }
    await recorded;
    progress.note({ step: 'verifying' }, true);
    verify = engine.verifyFenced !== undefined ? await engine.verifyFenced(m, onVerify) : await engine.verify(m, onVerify);
    onVerify(verify.tables, verify.tables);
    refuseMismatches(verify);
    emit(moveId, 'fenced', { verified: true, rows: verify.rows, chunks: verify.chunks });
    await engine.beforeSwitch?.(m);
    await refuseUnknownTarget(store, m);
    map = await cas((x) => switchMove(x, moveId));
    const freezeToSwitchMs = frozeAt === undefined ? undefined : Date.now() - frozeAt;
    emit(moveId, 'switched', freezeToSwitchMs === undefined ? {} : { freezeToSwitchMs });
    await options.afterPhase?.('switched');
    await afterSwitch(requireMove(map, moveId));
    return { move: requireMove(map, moveId), outcome: 'switched', ...(freezeToSwitchMs !== undefined ? { freezeToSwitchMs } : {}), verify };
  }

  // Outside the freeze; the switch stands whatever happens here (drop-moved cleans up again).
  async function afterSwitch(m: MoveRecord): Promise<void> {
    try {
      await engine.afterSwitch?.(m);
    } catch (err) {
      emit(m.id, 'switched', { cleanupError: (err as Error).message });
    }
  }

  async function abortRun(moveId: string, reason?: string): Promise<MoveResult> {
    // First the record says 'aborting' and why (no switch can happen after that), then the engine
    // lifts the fence and removes the copy, then the freeze and the record go.
    map = await cas((x) => beginAbort(x, moveId, Date.now(), reason));
    const m = requireMove(map, moveId);
    emit(moveId, 'aborting');
    await options.afterPhase?.('aborting');
    await engine.undo(asMappedSource(map, m));
    // The record gone: another process ran the same abort (the undo is idempotent) and finished first.
    map = await cas((x) => (x.move(moveId) === undefined ? x.toJSON() : abortMove(x, moveId)));
    emit(moveId, 'aborted');
    return { move: m, outcome: 'aborted' };
  }
}

/** A verify that found differences stops the move (the caller aborts it: the range stays on the source). */
function refuseMismatches(report: VerifyReport): void {
  if (report.mismatches.length === 0) return;
  const first = report.mismatches[0]!;
  throw new ShardKitError('MOVE_VERIFY_MISMATCH', `verify found ${report.mismatches.length} mismatching chunk(s) between source and target (first: shard ${first.shard} ${first.table} keys ${first.fromKey}..${first.toKey}, ${first.sourceRows} vs ${first.targetRows} rows): not switching`);
}

/**
 * The admission check (issue #29): measures what the freeze would cost now and waits (reported
 * about once a second) until it fits the move's hold budget; gives up with nothing frozen.
 */
async function admitFreeze(engine: MoveEngine, move: MoveRecord, waitMs: number, report: (cost: FreezeCost) => void): Promise<void> {
  if (engine.freezeCost === undefined) return;
  const deadline = Date.now() + waitMs;
  let reported = 0;
  for (;;) {
    const cost = await engine.freezeCost(move);
    if (cost.ms <= move.holdMs) return;
    if (Date.now() - reported >= 1000) {
      reported = Date.now();
      report(cost);
    }
    if (Date.now() >= deadline) throw new ShardKitError('SHARD_UNAVAILABLE', `the freeze would take about ${Math.round(cost.ms)} ms on the hosts now (${cost.what}), more than its budget of ${move.holdMs} ms, still after ${waitMs} ms: not freezing (try again at a quieter time, or give a larger hold)`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The lag gate: polls the engine's lag (reported about once a second) until it is at most maxLag. */
async function waitForLag(engine: MoveEngine, move: MoveRecord, maxLag: number, waitMs: number, report: (lag: number) => void): Promise<void> {
  const deadline = Date.now() + waitMs;
  let reported = 0;
  for (;;) {
    const lag = await engine.lag(move);
    if (lag <= maxLag) return;
    if (Date.now() - reported >= 1000) {
      reported = Date.now();
      report(lag);
    }
    if (Date.now() >= deadline) throw new ShardKitError('SHARD_UNAVAILABLE', `the target is still ${lag} behind the source (limit ${maxLag}) after ${waitMs} ms: not freezing`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
