/**
 * Two processes finishing one abort: an operator's `--abort` ends a running mover's copy, and the
 * mover, seeing the move 'aborting', helps finish it. Whichever of the two removes the record
 * first, the other must not fail: the operator's abort reports 'aborted', the mover stops with
 * UNKNOWN_MOVE ("aborted by another process"). Before, the slower one's last compare-and-set met
 * a record already gone and `--abort` failed with UNKNOWN_MOVE (a fresh-clone CI run, PostgreSQL).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isShardKitError, ShardKitError, ShardMap, type MoveRecord, type ShardMapJson } from '../../src/index.js';
import type { MoveEngine } from '../../src/moves/move-engine.js';
import { runMove } from '../../src/moves/move-runner.js';
import { MemoryTopologyStore } from '../../src/topology/index.js';

const base: ShardMapJson = {
  version: 1,
  ranges: [
    { range: [0, 7], master: 'A1', slave: 'A2', open: true },
    { range: [8, 15], master: 'B1', slave: 'B2', open: true },
  ],
  modShards: { count: 4, ranges: [{ range: [0, 3], master: 'A1', slave: 'A2' }] },
};
const hosts = ['A1', 'A2', 'B1', 'B2'];

function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/**
 * A scripted engine: the copy runs until the abort's undo ends it (as PostgreSQL's undo ends the
 * copy's sessions); `onUndo` holds an undo where the test says.
 */
function scripted(copyEnded: Promise<void>, onUndo: (m: MoveRecord) => Promise<void>): MoveEngine {
  return {
    kind: 'scripted',
    prepare: async () => {
      await copyEnded;
      throw new ShardKitError('SHARD_UNAVAILABLE', 'terminating connection due to administrator command');
    },
    lag: async () => 0,
    fence: async () => undefined,
    catchUp: async () => undefined,
    verify: async () => ({ tables: 0, rows: 0, chunks: 0, mismatches: [] }),
    undo: onUndo,
    close: async () => undefined,
  } as unknown as MoveEngine;
}

for (const first of ['mover', 'operator'] as const) {
  test(`--abort while a mover copies, the ${first} finishing the abort first: --abort reports 'aborted', the mover stops with UNKNOWN_MOVE, the range is back on its source with no record`, async () => {
    const store = new MemoryTopologyStore();
    await store.write(ShardMap.fromJSON(base), 0);
    const copyEnded = gate();
    const operatorDone = gate();
    const moverInUndo = gate();
    const moverDone = gate();
    let undos = 0;
    // When the operator is to finish first, the mover's undo waits until the operator's abort is through.
    const moverEngine = scripted(copyEnded.wait, async () => {
      undos++;
      moverInUndo.open();
      if (first === 'operator') await operatorDone.wait;
    });
    const operatorEngine = scripted(copyEnded.wait, async () => {
      undos++;
      copyEnded.open(); // the undo ends the copy's sessions
      // Both are in their undo; the slower one ends it after the other removed the record.
      await moverInUndo.wait;
      if (first === 'mover') await moverDone.wait;
    });
    let copying!: () => void;
    const inCopy = new Promise<void>((resolve) => (copying = resolve));
    const mover = runMove({ store, engine: { ...moverEngine, prepare: async (m, p) => { copying(); return moverEngine.prepare(m, p); } }, hosts, start: { span: { first: 2, last: 3 }, target: { master: 'B1', slave: 'B2' } } })
      .then(() => undefined, (err: unknown) => err)
      .finally(() => moverDone.open());
    await inCopy;
    const id = (await store.read())!.moves()[0]!.id;
    const aborted = await runMove({ store, engine: operatorEngine, hosts, moveId: id, abort: true }).finally(() => operatorDone.open());
    assert.equal(aborted.outcome, 'aborted');
    const err = await mover;
    assert.ok(isShardKitError(err, 'UNKNOWN_MOVE') && /another process/.test(err.message), `the mover says another process aborted the move: ${String(err)}`);
    const after = (await store.read())!;
    assert.deepEqual(after.moves(), []);
    assert.equal(after.locate(2).master, 'A1');
    assert.equal(after.locate(3).master, 'A1');
    assert.equal(undos, 2, 'both ran the (idempotent) undo');
    await store.close();
  });
}
