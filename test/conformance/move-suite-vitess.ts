/**
 * The move suite's Vitess bug list: each scenario is a bug of Vitess's MoveTables/SwitchTraffic
 * (shared/research/shard-moves.md, issue 17's list) that must not happen here, written
 * once for every engine (runMoveSuite registers them). Each runs two services writing through the
 * move and ends with 0 acknowledged writes lost.
 * - vitess#17326: a failure in the middle of the switch left tables unavailable;
 * - vitess#6951: a switch served a copy that did not match the source;
 * - after the switch: a router with a stale map (its watch paused) wrote to or read from the old
 *   primary, a cancel after the switch, a second switch of the same workflow;
 * - the way back: Vitess keeps a reverse stream so traffic can go back; here it is a new move,
 *   and every write acknowledged on the target comes back with the range.
 * - vitess#9525, with `lagGate`: a switch under heavy lag held writes until a timeout;
 * - vitess#9481, with `openTransactions`: a transaction open across the switch committed on the
 *   old primary afterwards, and its write was lost (the engines' own files test more of it:
 *   test/moves/mariadb-move.test.ts, postgres-move-watch.test.ts). SQLite's driver is synchronous:
 *   a transaction held open in the process would block the fence's own wait.
 * #16563 (the position read before the fence drained) holds by construction, and every
 * scenario's ledger would catch a write lost at the switch.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isShardKitError } from '../../src/errors.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import type { ShardKit } from '../../src/kit/shard-kit.js';
import type { MoveEngine, VerifyReport } from '../../src/moves/move-engine.js';
import type { MoveEvent } from '../../src/moves/move-runner.js';
import type { MoveRecord } from '../../src/topology/shard-map.js';
import type { TopologyStore } from '../../src/topology/topology-store.js';
import { ackedOn } from '../moves/crash-ledger.js';
import { cleanlyAborted, forgetSwitched, suiteMove, underLoad, type MoveSuiteFixture, type MoveSuiteSupports, type Span } from './move-suite.js';

type VerifyName = 'verifyBeforeFreeze' | 'verifyFenced' | 'verify';

/** The engine with one of its verify methods run through `around` (the rest is the engine itself). */
function aroundVerify(engine: MoveEngine, name: VerifyName, around: (run: () => Promise<VerifyReport>) => Promise<VerifyReport>): MoveEngine {
  const wrapped = Object.create(engine) as MoveEngine;
  const original = engine[name]!.bind(engine);
  wrapped[name] = (m: MoveRecord) => around(() => original(m));
  return wrapped;
}

/** A service whose map watch never delivers: it routes by the map it read last, until a fence makes it re-read. */
async function staleService(fx: MoveSuiteFixture): Promise<ShardKit> {
  const live = fx.store();
  const paused: TopologyStore = { read: () => live.read(), write: (m, v) => live.write(m, v), watch: () => () => {}, close: async () => {} };
  return fx.service(paused);
}

async function masterOf(fx: MoveSuiteFixture, shard: number): Promise<string> {
  return (await fx.store().read())!.locate(shard).master;
}

function spanShards(span: Span): number[] {
  return Array.from({ length: span[1] - span[0] + 1 }, (_, i) => span[0] + i);
}

export function vitessScenarios(supports: MoveSuiteSupports, fx: () => MoveSuiteFixture): void {
  if (supports.lagGate === true) {
    test('vitess#9525: while the target lags (its apply stalled) the freeze never starts; the gate gives up, the move aborts, the range serves from the source, nothing left behind, 0 acknowledged writes lost', () => underLoad(fx, 'the lag gate under a stalled target', async ({ f, span, from, to, w }) => {
      const events: MoveEvent[] = [];
      let stall: { release(): Promise<void> } | undefined;
      try {
        await assert.rejects(
          suiteMove(f, {
            start: { span: { first: span[0], last: span[1] }, target: to, holdMs: 30_000 },
            // Stalled until the abort: whatever the machine's speed, the lag never drops under 0.
            maxLag: 0, lagWaitMs: 3000, onEvent: (e) => events.push(e),
            afterPhase: async (phase) => {
              if (phase === 'copied') {
                stall = await f.stallApply!(to.master, span[0]);
                await ackedOn(w.ledger, span, Date.now());
              }
              if (phase === 'aborting') await stall?.release();
            },
          }),
          (err) => isShardKitError(err, 'SHARD_UNAVAILABLE') && /behind the source/.test(err.message),
        );
      } finally {
        await stall?.release();
      }
      assert.ok(events.some((e) => e.phase === 'copied' && typeof e.detail?.lag === 'number' && e.detail.lag > 0), 'the lag was reported while waiting');
      assert.equal(events.filter((e) => e.phase === 'frozen').length, 0, 'never frozen');
      await cleanlyAborted(f, span, from.master, to.master);
      await ackedOn(w.ledger, span, Date.now());
    }));
  }

  if (supports.openTransactions === true) {
    test('vitess#9481: a transaction open on a moving shard when the fence comes commits before it and is on the master the final map names, or fails and is nowhere: never acknowledged and lost', () => underLoad(fx, 'a transaction open across the fence', async ({ f, span, from, to, w }) => {
      // Opened once the copy is done (a transaction open at its start holds PostgreSQL's slot
      // creation back), committed while the fence is on its way or waiting for it: a timer turn
      // after the freeze is recorded. A move that never froze leaves it to commit afterwards.
      let tx: Awaited<ReturnType<NonNullable<MoveSuiteFixture['openWrite']>>> | undefined;
      let committed: Promise<boolean> | undefined;
      const commit = () => tx!.commit().then(() => true, () => false);
      const moved = await suiteMove(f, {
        start: { span: { first: span[0], last: span[1] }, target: to, holdMs: 30_000 },
        afterPhase: async (phase) => {
          if (phase === 'copied') tx = await f.openWrite!(from.master, span[0]);
          if (phase === 'frozen') committed = new Promise((r) => setImmediate(r)).then(commit);
        },
      }).then((r) => r.outcome, (err: unknown) => `failed: ${(err as Error).message}`);
      const ok = await (committed ?? commit());
      const master = await masterOf(f, span[0]);
      const on = async (host: string) => (await f.liveIds(host, span[0])).includes(tx!.localId);
      console.log(`# the open transaction ${ok ? 'committed' : 'failed'}; the move ${moved}`);
      if (ok) assert.ok(await on(master), `the committed row ${span[0]}:${tx!.localId} is on ${master}, the master the map names`);
      else assert.deepEqual([await on(from.master), await on(to.master)], [false, false], 'the failed transaction left its row nowhere');
      await ackedOn(w.ledger, span, Date.now());
    }));
  }

  test('vitess#17326: a failure in the middle of the switch (under the freeze, after the fence and the catch-up) puts the range back on the source: not frozen, not fenced, nothing left on the target, writes go on there, 0 acknowledged writes lost', () => underLoad(fx, 'failure in the middle of the switch', async ({ f, span, from, to, w }) => {
    const engine = f.engine();
    // The check under the freeze is the last step before the compare-and-set: it fails there.
    const failing = aroundVerify(engine, engine.verifyFenced !== undefined ? 'verifyFenced' : 'verify', async (run) => {
      await run();
      throw new Error('injected: the switch failed half-way');
    });
    const events: MoveEvent[] = [];
    await assert.rejects(
      suiteMove(f, { engine: failing, start: { span: { first: span[0], last: span[1] }, target: to, holdMs: 30_000 }, onEvent: (e) => events.push(e) }),
      /injected: the switch failed half-way/,
    );
    const phases = [...new Set(events.map((e) => e.phase))].filter((p) => ['frozen', 'fenced', 'switched', 'aborted'].includes(p));
    assert.deepEqual(phases, ['frozen', 'fenced', 'aborted'], 'frozen and fenced, never switched, aborted');
    await cleanlyAborted(f, span, from.master, to.master);
    // The range serves from the source at once: the abort lifted the freeze (no hold budget to wait out).
    await ackedOn(w.ledger, span, Date.now());
  }));

  test('vitess#6951: a row changed by hand on the target after the copy: verify names it, the move never switches and aborts, the range serves from the source, 0 acknowledged writes lost', () => underLoad(fx, 'a copy that does not verify', async ({ f, span, from, to, w }) => {
    const engine = f.engine();
    // The first comparison the engine makes sees the changed row: before the freeze where the
    // engine verifies there (it then trusts replication for what it compared), else under it.
    const first: VerifyName = engine.verifyBeforeFreeze !== undefined ? 'verifyBeforeFreeze' : 'verify';
    const changed: number[] = [];
    const tampering = aroundVerify(engine, first, async (run) => {
      if (changed.length === 0) {
        changed.push(span[0]);
        await f.changeRow(to.master, span[0]);
      }
      return run();
    });
    const events: MoveEvent[] = [];
    await assert.rejects(
      suiteMove(f, { engine: tampering, start: { span: { first: span[0], last: span[1] }, target: to, holdMs: 30_000 }, onEvent: (e) => events.push(e) }),
      (err) => isShardKitError(err, 'MOVE_VERIFY_MISMATCH') && new RegExp(`shard ${span[0]} pins`).test(err.message),
    );
    assert.deepEqual(changed, [span[0]], 'the row was changed before the comparison');
    assert.equal(events.filter((e) => e.phase === 'switched').length, 0, 'never switched');
    if (first === 'verifyBeforeFreeze') assert.equal(events.filter((e) => e.phase === 'frozen').length, 0, 'never frozen: the copy was refused before the freeze');
    await cleanlyAborted(f, span, from.master, to.master);
    await ackedOn(w.ledger, span, Date.now());
  }));

  test('after the switch: a service with a stale map writes and reads on the target (the old master serves nothing of the range), a cancel is refused, a second switch of the same move changes nothing; 0 acknowledged writes lost', async () => {
    const stale = await staleService(fx());
    try {
      await underLoad(fx, 'after the switch', async ({ f, span, from, to, w }) => {
        // The stale service has read the map: it routes the range to the source from now on.
        const before = await stale.objects.create('pin', { stale: 'before' }, { shard: span[0] });
        assert.equal((await stale.shardMap()).locate(span[0]).master, from.master);
        const result = await suiteMove(f, { start: { span: { first: span[0], last: span[1] }, target: to, holdMs: 30_000 } });
        assert.equal(result.outcome, 'switched');
        assert.deepEqual(result.verify?.mismatches, []);
        await ackedOn(w.ledger, span, Date.now());
        const sourceIds = async () => Object.fromEntries(await Promise.all(spanShards(span).map(async (s) => [s, (await f.liveIds(from.master, s)).length] as const)));
        const onSource = await sourceIds();

        // A live service changes an object of the range on the target; the stale one must read the
        // change (an old master still serving would answer with the copy it kept).
        await f.kits[0]!.objects.patch(before.id, { stale: 'patched after the switch' });
        assert.deepEqual((await stale.objects.get(before.id)).data, { stale: 'patched after the switch' });
        // Its writes to the range, on every shard of it, land on the target.
        for (const s of spanShards(span)) {
          const late = await stale.objects.create('pin', { stale: 'after' }, { shard: s });
          const { localId } = pinterestId.decode(late.id);
          assert.ok((await f.liveIds(to.master, s)).includes(String(localId)), `the stale service's write to shard ${s} is on the target`);
        }
        assert.equal((await stale.shardMap()).locate(span[0]).master, to.master, 'the fence made it re-read the map');
        assert.deepEqual(await sourceIds(), onSource, 'nothing written on the old master after the switch');

        // Cancel after the switch: refused, nothing changes (the way back is a new move).
        const map = (await f.store().read())!.toJSON();
        await assert.rejects(suiteMove(f, { moveId: result.move.id, abort: true }), (err) => isShardKitError(err, 'VERSION_CONFLICT') && /already switched.*move the shards back/.test(err.message));
        assert.deepEqual((await f.store().read())!.toJSON(), map, 'the refused cancel changed nothing');
        // A second switch of the same move (a mover resumed after it switched): done, nothing changes.
        const again = await suiteMove(f, { moveId: result.move.id });
        assert.equal(again.outcome, 'switched');
        assert.deepEqual((await f.store().read())!.toJSON(), map, 'the second switch changed nothing');
        for (const s of spanShards(span)) assert.equal(await masterOf(f, s), to.master);
        await ackedOn(w.ledger, span, Date.now());
      });
    } finally {
      await stale.close();
    }
  });

  test('the way back (Vitess keeps a reverse stream): moved and moved back under load, drop-moved between as the runbook says, each verify clean, every write acknowledged on the target comes back, 0 lost', () => underLoad(fx, 'moved and moved back', async ({ f, span, from, to, w }) => {
    const there = await suiteMove(f, { start: { span: { first: span[0], last: span[1] }, target: to, holdMs: 30_000 } });
    assert.equal(there.outcome, 'switched');
    assert.deepEqual(there.verify?.mismatches, []);
    // Writes acknowledged on the target only: they must come back.
    const switched = Date.now();
    await ackedOn(w.ledger, span, switched);
    const onTarget = w.ledger.acked.filter((a) => a.sentAt !== undefined && a.sentAt > switched && spanShards(span).includes(pinterestId.decode(a.id).shard));
    assert.ok(onTarget.length > 0);
    await forgetSwitched(f);
    const back = await suiteMove(f, { start: { span: { first: span[0], last: span[1] }, target: from, holdMs: 30_000 } });
    assert.equal(back.outcome, 'switched');
    assert.deepEqual(back.verify?.mismatches, []);
    for (const s of spanShards(span)) assert.equal(await masterOf(f, s), from.master);
    for (const a of onTarget) {
      const { shard, localId } = pinterestId.decode(a.id);
      assert.ok((await f.liveIds(from.master, shard)).includes(String(localId)), `write ${shard}:${localId}, acknowledged on the target, came back`);
    }
    await ackedOn(w.ledger, span, Date.now());
  }));
}
