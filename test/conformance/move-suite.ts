/**
 * The shard-move scenarios every move engine must pass, written once (abstract-level's one suite
 * for every implementation): a test file builds one fixture over its engine's hosts (one cluster
 * for the whole file) and calls runMoveSuite inside its describe(). Scenarios switch on what the
 * fixture declares it supports, never on the engine's name:
 * - a mover that stops dead after a phase (in process), then --resume or --abort converges;
 * - bad input: nothing changes, a typed error;
 * - with `killServers`: the source master killed at the lag gate, the target master killed at the
 *   catch-up, the source master killed right after the fence;
 * - the Vitess bug list (move-suite-vitess.ts) and the ledger under two services with an oracle
 *   of random operations (move-suite-oracle.ts), on every engine.
 * Every scenario runs two services writing through it and ends with 0 acknowledged writes lost
 * (a ledger, each write looked up on the master the final map names). Scenarios take the range's
 * direction from the map, so they hold in any order beside the engine's own tests.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isShardKitError, type ErrorCode } from '../../src/errors.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import type { ShardKit } from '../../src/kit/shard-kit.js';
import type { MoveEngine } from '../../src/moves/move-engine.js';
import { runMove, type MoveEvent, type MoveRunOptions } from '../../src/moves/move-runner.js';
import { casMoveState, forgetMove } from '../../src/moves/move-state.js';
import type { HostPair, MovePhase } from '../../src/topology/shard-map.js';
import type { TopologyStore } from '../../src/topology/topology-store.js';
import type { Ledger } from '../failover/ledger.js';
import { ackedOn, leftAborting, lostWrites, startLoad } from '../moves/crash-ledger.js';
import { oracleScenario } from './move-suite-oracle.js';
import { vitessScenarios } from './move-suite-vitess.js';

export type Span = [number, number];

/** A range to move in one scenario, and the shards the two services write to meanwhile (the range's and some staying). */
export interface SuiteRange {
  span: Span;
  load: number[];
}

/** Engine checks around a target master that dies and comes back during a move (planted before the move). */
export interface TargetRestartCheck {
  /** The restarted target, before --abort: what it must (not) have applied. */
  afterRestart(ledger: Ledger): Promise<void>;
  afterAbort(): Promise<void>;
  cleanup(): Promise<void>;
}

/** What an engine declares; the suite picks its scenarios from it. */
export interface MoveSuiteSupports {
  /** Phases after which a mover may stop dead in process and another finish its move (an engine whose fence lives in the mover's sessions needs a killed process instead, tested in its own file). */
  moverDies: MovePhase[];
  /** Kill -9 and restart of a master (the fixture's `servers`). */
  killServers: boolean;
  /** The fence lives in the source's sessions (a lock), so a restarted source serves before any --abort. */
  fenceDiesWithSource?: boolean;
  /** The engine replicates before the freeze and gates it on lag (the fixture's `stallApply`). */
  lagGate?: boolean;
  /** A transaction can stay open on the source across the fence's arrival (the fixture's `openWrite`; a server engine). */
  openTransactions?: boolean;
}

export interface MoveSuiteFixture {
  /** The two master/slave pairs moves go between. */
  pairs: [HostPair, HostPair];
  /** Hosts the config declares. */
  hosts: string[];
  /** Two services writing (each a ShardKit following the same topology). */
  kits: ShardKit[];
  store(): TopologyStore;
  /** A move engine over the fixture's hosts (the fixture closes what it hands out). */
  engine(): MoveEngine;
  /** Options every runMove of this engine takes (maxLag where the engine has no default). */
  runOptions?: Partial<MoveRunOptions>;
  /** A new service (a ShardKit with its own backend) following `topology`; closing it closes what it opened. */
  service(topology: TopologyStore): Promise<ShardKit>;
  /** Changes the data of one pin of the shard on `host` by hand, outside any replication (what verify must catch). */
  changeRow(host: string, shard: number): Promise<void>;
  /** Local ids of a shard's pins in its live table on a host ([] when the host has no such table). */
  liveIds(host: string, shard: number): Promise<string[]>;
  /** The shard's object tables live on a host. */
  objectTablesOn(host: string, shard: number): Promise<string[]>;
  /** The shard's tables the fence set aside on a host. */
  fencedAside(host: string, shard: number): Promise<string[]>;
  /** Replication left for a move on the target (connections, subscriptions): [] once an abort's target side ran. */
  leftOnTarget(target: string): Promise<string[]>;
  /** Whatever a move leaves behind on either side once aborted or switched ([] when clean). */
  leftBehind(source: string, target: string): Promise<string[]>;
  /** With `lagGate`: stops the target applying the source's changes to the shard (a lock on its pins) until released. */
  stallApply?(target: string, shard: number): Promise<{ release(): Promise<void> }>;
  /** With `openTransactions`: a transaction on `host` that has inserted a pin into the shard and is still open. */
  openWrite?(host: string, shard: number): Promise<{ localId: string; commit(): Promise<void> }>;
  /** With `killServers`: kill -9 and restart of a master, and what the scenarios read then. */
  servers?: {
    kill(host: string): Promise<void>;
    start(host: string): Promise<void>;
    /** The rows (`shard:localId`) the fenced source holds of `shards`. */
    fencedRows(source: HostPair, shards: number[]): Promise<string[]>;
    /** Engine checks around the target killed at the catch-up. */
    targetRestart?(source: HostPair, target: HostPair, span: Span): Promise<TargetRestartCheck>;
  };
  ranges: {
    moverDies: SuiteRange;
    sourceAtLagGate?: SuiteRange;
    targetAtCatchUp?: SuiteRange;
    sourceAfterFence?: SuiteRange;
  };
}

/** Runs a move with the fixture's engine and options. */
export function suiteMove(fx: MoveSuiteFixture, options: Omit<MoveRunOptions, 'store' | 'engine' | 'hosts'> & { engine?: MoveEngine }) {
  return runMove({ store: fx.store(), engine: fx.engine(), hosts: fx.hosts, ...fx.runOptions, ...options });
}

async function map(fx: MoveSuiteFixture) {
  return (await fx.store().read())!;
}

/** The range's pairs as the map has them now: from its master's pair to the other one. */
export async function direction(fx: MoveSuiteFixture, span: Span): Promise<{ from: HostPair; to: HostPair }> {
  const m = await map(fx);
  const source = m.locate(span[0]).master;
  for (let s = span[0]; s <= span[1]; s++) assert.equal(m.locate(s).master, source, `shards ${span.join('..')} are on one master`);
  const [a, b] = fx.pairs;
  return source === a.master ? { from: a, to: b } : { from: b, to: a };
}

/**
 * Moves that switched are dropped (their fenced copies) and forgotten, so that a scenario's move
 * is its range's only record. A range moved back since is only forgotten: drop-moved refuses a
 * source that masters it again.
 */
export async function forgetSwitched(fx: MoveSuiteFixture): Promise<void> {
  for (const m of (await map(fx)).moves().filter((x) => x.phase === 'switched')) {
    if ((await map(fx)).locate(m.range[0]).master !== m.source.master) await fx.engine().dropMoved(m);
    await casMoveState(fx.store(), (x) => forgetMove(x, m.id));
  }
}

/** Every acknowledged write is on the master the final map names; only after a scenario's body passed (a failed one may leave rows fenced aside). */
export async function noneLost(fx: MoveSuiteFixture, ledger: Ledger, what: string): Promise<void> {
  const m = await map(fx);
  assert.deepEqual(await lostWrites(ledger, m, (host, shard) => fx.liveIds(host, shard)), [], 'every acknowledged write is on the master the map names');
  console.log(`${what}: ${ledger.acked.length} acknowledged writes, 0 lost, errors ${JSON.stringify([...ledger.errors])}`);
}

/** A completed abort: no open record, no freeze, nothing of the range on the target or set aside, the source live. */
export async function cleanlyAborted(fx: MoveSuiteFixture, span: Span, source: string, target: string): Promise<void> {
  const m = await map(fx);
  assert.deepEqual(m.moves().filter((x) => x.range[0] === span[0] && x.phase !== 'switched'), []);
  for (let s = span[0]; s <= span[1]; s++) {
    assert.equal(m.locate(s).master, source);
    assert.equal(m.rangeOf(s)?.frozen, undefined, `shard ${s} is not frozen`);
    assert.ok((await fx.objectTablesOn(source, s)).includes('pins'), `shard ${s} is live on the source`);
    assert.deepEqual(await fx.fencedAside(source, s), [], `nothing of shard ${s} set aside on the source`);
    assert.deepEqual(await fx.objectTablesOn(target, s), [], `no copy of shard ${s} on the target`);
  }
  assert.deepEqual(await fx.leftBehind(source, target), [], 'nothing of the move left behind');
}

/** A new move of the range succeeds, verify clean, nothing left behind. */
export async function moveAgain(fx: MoveSuiteFixture, span: Span, from: HostPair, to: HostPair): Promise<void> {
  const result = await suiteMove(fx, { start: { span: { first: span[0], last: span[1] }, target: to, holdMs: 30_000 } });
  assert.equal(result.outcome, 'switched');
  assert.deepEqual(result.verify?.mismatches, []);
  const m = await map(fx);
  for (let s = span[0]; s <= span[1]; s++) assert.equal(m.locate(s).master, to.master);
  assert.deepEqual(await fx.leftBehind(from.master, to.master), []);
}

/**
 * A new move of `span` to `to` that a crash makes fail (from `afterPhase`, or inside the engine),
 * then fail its abort too (a host is down): MOVE_ABORT_FAILED, the record left 'aborting'.
 */
export async function abortFails(fx: MoveSuiteFixture, span: Span, to: HostPair, holdMs: number, events: MoveEvent[], afterPhase: (phase: MovePhase) => Promise<void>, engine?: MoveEngine): Promise<void> {
  await assert.rejects(
    suiteMove(fx, {
      ...(engine !== undefined ? { engine } : {}),
      start: { span: { first: span[0], last: span[1] }, target: to, holdMs },
      onEvent: (e) => events.push(e),
      afterPhase,
    }),
    (err) => isShardKitError(err, 'MOVE_ABORT_FAILED') && /--abort again/.test(err.message),
  );
}

/**
 * The source master dies before the freeze (`crash` kills it: from the lag gate's afterPhase, or
 * from inside the engine's copy): the runner aborts, cannot reach the source and leaves the record
 * 'aborting'; the target's side of the abort ran. Restarted, the source serves, --abort completes,
 * and a new move succeeds. 0 acknowledged writes lost. Engines call it for their own crash points.
 */
export async function sourceDiesBeforeFreeze(fx: MoveSuiteFixture, range: SuiteRange, what: string, crash: { engine?: MoveEngine; atLagGate: boolean }): Promise<void> {
  const kill = fx.servers!;
  await forgetSwitched(fx);
  const { span } = range;
  const { from, to } = await direction(fx, span);
  const w = startLoad(fx.kits, range.load);
  const events: MoveEvent[] = [];
  try {
    await ackedOn(w.ledger, range.load, Date.now());
    await abortFails(fx, span, to, 30_000, events, async (phase) => {
      if (phase === 'copied' && crash.atLagGate) await kill.kill(from.master);
    }, crash.engine);
    assert.equal(events.filter((e) => e.phase === 'frozen').length, 0, 'never frozen');
    assert.ok(events.some((e) => e.phase === 'copied'), 'copied, then stopped at the lag gate');
    const id = leftAborting(await map(fx), span, from.master);
    // The target's side of the abort ran: its replication and the copy are gone already.
    assert.deepEqual(await fx.leftOnTarget(to.master), []);
    for (let s = span[0]; s <= span[1]; s++) assert.deepEqual(await fx.objectTablesOn(to.master, s), []);

    const restarted = Date.now();
    await kill.start(from.master);
    // The range never froze: with its master back, the moving shards serve again, before any --abort.
    await ackedOn(w.ledger, range.load, restarted);
    const aborted = await suiteMove(fx, { moveId: id, abort: true });
    assert.equal(aborted.outcome, 'aborted');
    await cleanlyAborted(fx, span, from.master, to.master);
    await moveAgain(fx, span, from, to);
    await ackedOn(w.ledger, span, Date.now());
  } finally {
    await kill.start(from.master);
    await w.stop();
  }
  await noneLost(fx, w.ledger, what);
}

/** What a scenario under load works with: the fixture, its range and the pairs it goes between now, the running load. */
export interface LoadedScenario {
  f: MoveSuiteFixture;
  span: Span;
  load: number[];
  from: HostPair;
  to: HostPair;
  w: ReturnType<typeof startLoad>;
}

/**
 * A scenario on the suite's range (`ranges.moverDies`) under two services' writes: switched
 * moves forgotten first, the load acknowledged on every loaded shard before `body`, stopped after
 * it, then 0 acknowledged writes lost.
 */
export async function underLoad(fx: () => MoveSuiteFixture, what: string, body: (s: LoadedScenario) => Promise<void>): Promise<void> {
  const f = fx();
  await forgetSwitched(f);
  const { span, load } = f.ranges.moverDies;
  const { from, to } = await direction(f, span);
  const w = startLoad(f.kits, load);
  try {
    await ackedOn(w.ledger, load, Date.now());
    await body({ f, span, load, from, to, w });
  } finally {
    await w.stop();
  }
  await noneLost(f, w.ledger, what);
}

/** Registers the scenarios `supports` allows, inside the caller's describe(); `fx` is read once the caller's before() built it. */
export function runMoveSuite(supports: MoveSuiteSupports, fx: () => MoveSuiteFixture): void {
  for (const phase of supports.moverDies) {
    for (const then of ['resume', 'abort'] as const) {
      test(`a mover that stops dead after phase ${phase}: --${then} converges, 0 acknowledged writes lost`, () => underLoad(fx, `mover dead after ${phase}, then --${then}`, async ({ f, span, from, to, w }) => {
        // The first mover stops dead after recording `phase` (never resolves: as if killed -9).
        let dead = false;
        const first = suiteMove(f, {
          start: { span: { first: span[0], last: span[1] }, target: to, holdMs: 30_000 },
          afterPhase: (p) => (p === phase ? ((dead = true), new Promise<void>(() => {})) : undefined),
        });
        void first.catch(() => {});
        while (!dead) await new Promise((r) => setTimeout(r, 5));
        const id = (await map(f)).moves().find((x) => x.range[0] === span[0] && x.phase !== 'switched')!;
        assert.equal(id.phase, phase);
        const result = await suiteMove(f, { moveId: id.id, abort: then === 'abort' });
        const m = await map(f);
        for (let s = span[0]; s <= span[1]; s++) assert.equal(m.rangeOf(s)?.frozen, undefined, `shard ${s} is not frozen`);
        if (then === 'resume') {
          assert.equal(result.outcome, 'switched');
          assert.deepEqual(result.verify?.mismatches, []);
          for (let s = span[0]; s <= span[1]; s++) assert.equal(m.locate(s).master, to.master);
        } else {
          assert.equal(result.outcome, 'aborted');
          assert.equal(m.move(id.id), undefined);
          await cleanlyAborted(f, span, from.master, to.master);
        }
        // Either way the range takes writes again where the map says.
        await ackedOn(w.ledger, span, Date.now());
      }));
    }
  }

  vitessScenarios(supports, fx);
  oracleScenario(fx);

  test('bad input: a move to the source itself, to an unknown host or of shards outside the map is refused with a typed error, nothing changed', async () => {
    const f = fx();
    const span = f.ranges.moverDies.span;
    const { from, to } = await direction(f, span);
    const before = (await map(f)).toJSON();
    const refused = async (start: NonNullable<MoveRunOptions['start']>, code: ErrorCode, text: RegExp) => {
      await assert.rejects(suiteMove(f, { start }), (err) => isShardKitError(err, code) && text.test(err.message));
      assert.deepEqual((await map(f)).toJSON(), before, 'the shard map is unchanged');
    };
    const first = { first: span[0], last: span[1] };
    await refused({ span: first, target: from }, 'INVALID_ARGUMENT', new RegExp(from.master));
    await refused({ span: first, target: { master: 'NoSuchHost', slave: to.slave } }, 'INVALID_ARGUMENT', /NoSuchHost/);
    await refused({ span: { first: 0, last: 1 << 20 }, target: to }, 'UNKNOWN_SHARD', /not all in the shard map/);
    for (let s = span[0]; s <= span[1]; s++) assert.deepEqual(await f.objectTablesOn(to.master, s), [], `nothing of shard ${s} on ${to.master}`);
  });

  if (supports.killServers) {
    test('kill -9 of the source master at the lag gate: the move aborts, --abort completes once it is back, a new move succeeds, 0 acknowledged writes lost', async () => {
      const f = fx();
      await sourceDiesBeforeFreeze(f, f.ranges.sourceAtLagGate!, 'source killed at the lag gate', { atLagGate: true });
    });

    test('kill -9 of the target master during the catch-up: no switch, the source serves again (fence undone, freeze expired), --abort completes once the target is back, a new move verifies clean', async () => {
      const f = fx();
      const kill = f.servers!;
      await forgetSwitched(f);
      const { span, load } = f.ranges.targetAtCatchUp!;
      const { from, to } = await direction(f, span);
      const shards = load.filter((s) => s >= span[0] && s <= span[1]);
      const w = startLoad(f.kits, load);
      const events: MoveEvent[] = [];
      let atFence: string[] = [];
      let atAbort: string[] = [];
      let fencedAt = 0;
      let abortingAt = 0;
      const check = await kill.targetRestart?.(from, to, span);
      try {
        await ackedOn(w.ledger, load, Date.now());
        await abortFails(f, span, to, 5000, events, async (phase) => {
          if (phase === 'fenced') {
            fencedAt = Date.now();
            atFence = await kill.fencedRows(from, shards);
            // The catch-up comes next: the target dies before it.
            await kill.kill(to.master);
          }
          if (phase === 'aborting') {
            abortingAt = Date.now();
            atAbort = await kill.fencedRows(from, shards);
          }
        });
        assert.equal(events.filter((e) => e.phase === 'switched').length, 0, 'never switched');
        assert.ok(atFence.length >= 20, `the source held shards ${span.join('..')} at the fence (${atFence.length} rows)`);
        assert.deepEqual(atAbort, atFence, 'nothing was written on the fenced source');
        // Every write acknowledged while the source was fenced had committed before the fence.
        const fencedAcks = w.ledger.acked.filter((a) => a.at > fencedAt && a.at < abortingAt).map((a) => pinterestId.decode(a.id)).filter((p) => p.shard >= span[0] && p.shard <= span[1]);
        for (const p of fencedAcks) assert.ok(atFence.includes(`${p.shard}:${p.localId}`), `write ${p.shard}:${p.localId} acknowledged after the fence is in the fenced copy`);

        leftAborting(await map(f), span, from.master);
        // The source serves again although the target is down: the fence is undone...
        for (let s = span[0]; s <= span[1]; s++) {
          assert.ok((await f.objectTablesOn(from.master, s)).includes('pins'), `shard ${s} is live on the source again`);
          assert.deepEqual(await f.fencedAside(from.master, s), []);
        }
        // ...and the freeze expires by its hold budget: the services write there without any --abort.
        await ackedOn(w.ledger, span, Date.now());

        await kill.start(to.master);
        await check?.afterRestart(w.ledger);
        const id = (await map(f)).moves().find((x) => x.range[0] === span[0] && x.phase !== 'switched')!.id;
        const aborted = await suiteMove(f, { moveId: id, abort: true });
        assert.equal(aborted.outcome, 'aborted');
        await cleanlyAborted(f, span, from.master, to.master);
        await check?.afterAbort();
        await moveAgain(f, span, from, to);
        await ackedOn(w.ledger, span, Date.now());
      } finally {
        await kill.start(to.master);
        await w.stop();
        await check?.cleanup();
      }
      await noneLost(f, w.ledger, 'target killed at the catch-up');
    });

    test('kill -9 of the source master right after the fence: no switch, nothing acknowledged lost or left on the target, --abort completes once it is back, a new move verifies clean', async () => {
      const f = fx();
      const kill = f.servers!;
      await forgetSwitched(f);
      const { span, load } = f.ranges.sourceAfterFence!;
      assert.deepEqual((await map(f)).moves(), [], 'this move is the only record');
      const { from, to } = await direction(f, span);
      const w = startLoad(f.kits, load);
      const events: MoveEvent[] = [];
      try {
        await ackedOn(w.ledger, load, Date.now());
        await abortFails(f, span, to, 5000, events, async (phase) => {
          // The fence holds on the source: it dies before the catch-up.
          if (phase === 'fenced') await kill.kill(from.master);
        });
        assert.equal(events.filter((e) => e.phase === 'fenced').length, 1, 'the fence was recorded');
        assert.equal(events.filter((e) => e.phase === 'switched').length, 0, 'never switched');
        const id = leftAborting(await map(f), span, from.master);
        // The target's side of the abort ran: no replication, no copy of the moving shards.
        assert.deepEqual(await f.leftOnTarget(to.master), []);
        for (let s = span[0]; s <= span[1]; s++) assert.deepEqual(await f.objectTablesOn(to.master, s), []);

        const restarted = Date.now();
        await kill.start(from.master);
        if (supports.fenceDiesWithSource === true) {
          // The fence lived in the mover's sessions on the dead server: the tables are live, and
          // once the freeze has expired by its budget the services write there without any --abort.
          for (let s = span[0]; s <= span[1]; s++) {
            assert.ok((await f.objectTablesOn(from.master, s)).includes('pins'), `shard ${s} is live on the restarted source`);
            assert.deepEqual(await f.fencedAside(from.master, s), []);
          }
          await ackedOn(w.ledger, load, restarted);
        }
        const aborted = await suiteMove(f, { moveId: id, abort: true });
        assert.equal(aborted.outcome, 'aborted');
        await cleanlyAborted(f, span, from.master, to.master);
        await ackedOn(w.ledger, span, Date.now());
        await moveAgain(f, span, from, to);
        await ackedOn(w.ledger, span, Date.now());
      } finally {
        await kill.start(from.master);
        await w.stop();
      }
      await noneLost(f, w.ledger, 'source killed after the fence');
    });
  }
}
