/**
 * `shards move RANGE --resume/--abort` take the move recorded for RANGE. A switched move waits
 * for drop-moved and can share its range with a later move back (an operator's review, session
 * 12): the unfinished one is the one to resume or abort, whatever order the map lists them in.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryTopologyStore, ShardMap, addMove, advanceMove, casMoveState, freezeMove, switchMove } from '../../src/index.js';
import { moveFor } from '../../src/cli/actions/shards.js';

test('--resume/--abort of a range pick its unfinished move, not a switched one of the same range', async () => {
  const store = new MemoryTopologyStore();
  try {
    await store.write(ShardMap.fromJSON({
      version: 1,
      ranges: [{ range: [0, 7], master: 'A1', slave: 'A2', open: true }, { range: [8, 15], master: 'B1', slave: 'B2', open: true }],
      modShards: { count: 4, ranges: [{ range: [0, 3], master: 'M1', slave: 'M2' }] },
    }), 0);
    // 4..7 moved to C and switched (its fenced copy still on A, for drop-moved), then moved back.
    await casMoveState(store, (m) => addMove(m, { id: 'away', span: { first: 4, last: 7 }, target: { master: 'C1', slave: 'C2' } }));
    await casMoveState(store, (m) => advanceMove(m, 'away', ['started'], 'copied'));
    await casMoveState(store, (m) => freezeMove(m, 'away'));
    await casMoveState(store, (m) => advanceMove(m, 'away', ['frozen'], 'fenced'));
    await casMoveState(store, (m) => switchMove(m, 'away'));
    const back = await casMoveState(store, (m) => addMove(m, { id: 'back', span: { first: 4, last: 7 }, target: { master: 'A1', slave: 'A2' } }));
    assert.deepEqual(back.moves().map((m) => [m.id, m.phase]), [['away', 'switched'], ['back', 'started']]);
    assert.equal(moveFor(back, { first: 4, last: 7 }).id, 'back');
    // Only the switched one recorded: --resume finds it (and says it is done).
    const only = await casMoveState(store, (m) => ({ ...m.toJSON(), moves: m.toJSON().moves!.filter((x) => x.id === 'away') }));
    assert.equal(moveFor(only, { first: 4, last: 7 }).id, 'away');
    assert.throws(() => moveFor(only, { first: 0, last: 3 }), /UNKNOWN_MOVE|no move of shards 0..3/);
  } finally {
    await store.close();
  }
});
