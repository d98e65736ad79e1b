import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MoveEngine } from '../../src/moves/move-engine.js';
import { RestoreInMoveEngine, type RestoredTables, type RestoreInSource, type RestoreInTarget } from '../../src/moves/restore-in-engine.js';
import type { MoveRecord } from '../../src/topology/shard-map.js';

const move = { id: 'restore-2-2-abc123', range: [2, 2], source: { master: 'A' }, target: { master: 'B' }, phase: 'started' } as unknown as MoveRecord;

/** A source and target that record what the engine asks of them, in order. */
function fixture(initial: 'none' | 'loading' | 'loaded', onTarget: RestoredTables) {
  const calls: string[] = [];
  let state = initial;
  const want: RestoredTables = { 'db00002.pins': { rows: 3, checksum: 'x' }, 'db00002.boards': { rows: 1, checksum: 'y' } };
  const source: RestoreInSource = {
    state: async () => state,
    load: async () => {
      calls.push('load');
      state = 'loaded';
      return want;
    },
    expected: async () => want,
    onTarget: async () => {
      calls.push('onTarget');
      return onTarget;
    },
  };
  const inner = {
    kind: 'fake', droppedUnit: 'things',
    fence: async () => void calls.push('fence'),
    undo: async () => void calls.push('inner.undo'),
    dropMoved: async () => 1,
    close: async () => undefined,
  } as unknown as MoveEngine;
  const target: RestoreInTarget = {
    inner,
    checkTarget: async () => void calls.push('check'),
    clearTarget: async () => void calls.push('clear'),
    raiseIds: async () => void calls.push('raise'),
  };
  return { engine: new RestoreInMoveEngine(source, target), calls, want };
}

describe('RestoreInMoveEngine: a restore-in move resumed or rolled back at any point of its load', () => {
  test('a fresh prepare checks the spare, then loads; nothing is cleared (the spare\'s tables are not ours yet)', async () => {
    const { engine, calls } = fixture('none', {});
    const detail = await engine.prepare(move);
    assert.deepEqual(calls, ['check', 'load']);
    assert.deepEqual(detail, { restored: true, tables: 2, rowsRestored: 4 });
  });

  test('a prepare resumed after a load cut short clears that load first, then checks and loads again', async () => {
    const { engine, calls } = fixture('loading', {});
    await engine.prepare(move);
    assert.deepEqual(calls, ['clear', 'check', 'load']);
  });

  test('a prepare resumed after a complete load loads nothing again', async () => {
    const { engine, calls } = fixture('loaded', {});
    await engine.prepare(move);
    assert.deepEqual(calls, []);
  });

  test('an abort clears what any load left (the inner engine drops a copy only after a recorded prepare), then undoes the fence', async () => {
    const cut = fixture('loading', {});
    await cut.engine.undo(move);
    assert.deepEqual(cut.calls, ['clear', 'inner.undo']);
    const never = fixture('none', {});
    await never.engine.undo(move);
    assert.deepEqual(never.calls, ['inner.undo'], 'a move that loaded nothing leaves the spare\'s tables alone (they may be someone else\'s)');
  });

  test('the catch-up under the freeze only raises the ids; verify compares the spare with what the restore produced', async () => {
    const good = fixture('loaded', { 'db00002.pins': { rows: 3, checksum: 'x' }, 'db00002.boards': { rows: 1, checksum: 'y' }, 'db00002.lookups': { rows: 9, checksum: 'z' } });
    await good.engine.catchUp(move);
    assert.deepEqual(good.calls, ['raise']);
    good.calls.length = 0;
    const ok = await good.engine.verify(move);
    assert.deepEqual([ok.tables, ok.rows, ok.mismatches], [2, 4, []], 'tables the restore did not carry (lookups) are not compared');
    const bad = fixture('loaded', { 'db00002.pins': { rows: 3, checksum: 'changed' } });
    const r = await bad.engine.verify(move);
    assert.deepEqual(r.mismatches.map((m) => [m.shard, m.table, m.sourceRows, m.targetRows]), [[2, 'db00002.boards', 1, 0], [2, 'db00002.pins', 3, 3]]);
    assert.equal(await good.engine.lag(), 0);
  });

  test('under the freeze, a clean check made before it by this process stands (nothing writes the spare); without one (a resumed mover, or a check that found mismatches) the spare is compared in full', async () => {
    const same = { 'db00002.pins': { rows: 3, checksum: 'x' }, 'db00002.boards': { rows: 1, checksum: 'y' } };
    const f = fixture('loaded', same);
    const before = await f.engine.verifyBeforeFreeze(move);
    assert.deepEqual(before.mismatches, []);
    const fenced = await f.engine.verifyFenced(move);
    assert.deepEqual(f.calls, ['onTarget'], 'the spare was read once');
    assert.deepEqual([fenced.tables, fenced.rows, fenced.mismatches], [2, 4, []]);
    const resumed = fixture('loaded', same);
    await resumed.engine.verifyFenced(move);
    assert.deepEqual(resumed.calls, ['onTarget'], 'a mover that did not check before the freeze checks under it');
    const bad = fixture('loaded', { 'db00002.pins': { rows: 3, checksum: 'changed' } });
    assert.equal((await bad.engine.verifyBeforeFreeze(move)).mismatches.length, 2);
    assert.equal((await bad.engine.verifyFenced(move)).mismatches.length, 2);
    assert.deepEqual(bad.calls, ['onTarget', 'onTarget']);
  });
});
