/**
 * A dead source master and a move of its shards: the move is marked 'aborting' (heal does it
 * before failing over; `shards move --abort` does it too), the pair can then fail over, and the
 * abort's undo runs on the range's new master. Before, promoteSlave refused any unswitched move,
 * so the pair stayed down until both hosts came back for the abort (the heal review, defect 2).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardKitError, ShardMap, addMove, advanceMove, beginAbort, freezeMove, promoteSlave, switchMove, type ShardMapJson } from '../../src/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { abortMovesFrom, asMappedSource, casAbortMovesFrom } from '../../src/moves/move-state.js';
import { FileTopologyStore, MemoryTopologyStore } from '../../src/topology/index.js';

const base: ShardMapJson = {
  version: 1,
  ranges: [
    { range: [0, 7], master: 'A1', slave: 'A2', open: true },
    { range: [8, 15], master: 'B1', slave: 'B2', open: true },
  ],
  modShards: { count: 4, ranges: [{ range: [0, 3], master: 'A1', slave: 'A2' }] },
};
const target = { master: 'C1', slave: 'C2' };
const map = (json: ShardMapJson) => ShardMap.fromJSON(json);

function refusedCode(f: () => unknown): string | undefined {
  try {
    f();
  } catch (err) {
    assert.ok(err instanceof ShardKitError, String(err));
    return err.code;
  }
  return undefined;
}

test('a running move of a pair\'s shards keeps it from failing over; once aborting, it fails over and the move stays recorded', () => {
  let json = addMove(map(base), { id: 'm1', span: { first: 2, last: 3 }, target });
  json = advanceMove(map(json), 'm1', ['started'], 'copied');
  assert.equal(refusedCode(() => promoteSlave(map(json), 'A1')), 'SHARD_FROZEN');
  json = beginAbort(map(json), 'm1', 1, 'A1 died');
  const after = map(promoteSlave(map(json), 'A1'));
  assert.equal(after.locate(2).master, 'A2');
  assert.equal(after.moves()[0]!.phase, 'aborting');
  // The undo runs on the range's master now, the move's own record unchanged.
  const undo = asMappedSource(after, after.moves()[0]!);
  assert.deepEqual(undo.source, { master: 'A2', slave: 'A1' });
  assert.deepEqual(after.moves()[0]!.source.master, 'A1');
  // Other map edits still wait for the abort to finish.
  assert.equal(refusedCode(() => advanceMove(after, 'm1', ['copied'], 'frozen')), 'VERSION_CONFLICT');
});

test('abortMovesFrom marks the unswitched moves of the dead master\'s shards, frozen ones included, and no others', () => {
  let json = addMove(map(base), { id: 'm1', span: { first: 0, last: 1 }, target });
  json = addMove(map(json), { id: 'm2', span: { first: 4, last: 5 }, target: { master: 'D1', slave: 'D2' } });
  json = advanceMove(map(json), 'm2', ['started'], 'copied');
  json = freezeMove(map(json), 'm2', 1000);
  json = addMove(map(json), { id: 'm3', span: { first: 8, last: 9 }, target: { master: 'E1', slave: 'E2' } });
  json = addMove(map(json), { id: 'm4', span: { first: 6, last: 6 }, target: { master: 'F1', slave: 'F2' } });
  json = advanceMove(map(json), 'm4', ['started'], 'copied');
  json = freezeMove(map(json), 'm4', 1000);
  json = advanceMove(map(json), 'm4', ['frozen'], 'fenced');
  json = switchMove(map(json), 'm4');
  const { json: out, ids } = abortMovesFrom(map(json), 'A1', 'A1 died', 5);
  assert.deepEqual(ids.sort(), ['m1', 'm2']);
  const phases = Object.fromEntries(map(out).moves().map((m) => [m.id, m.phase]));
  assert.deepEqual(phases, { m1: 'aborting', m2: 'aborting', m3: 'started', m4: 'switched' });
  assert.equal(map(out).moves().find((m) => m.id === 'm1')!.detail?.abortReason, 'A1 died');
  // Now A1's pair fails over; B1's move is untouched and still keeps B1 from failing over.
  assert.equal(map(promoteSlave(map(out), 'A1')).locate(0).master, 'A2');
  assert.equal(refusedCode(() => promoteSlave(map(out), 'B1')), 'SHARD_FROZEN');
  // Nothing to mark: the same map, no ids.
  assert.deepEqual(abortMovesFrom(map(out), 'A1', 'again').ids, []);
});

test('casAbortMovesFrom writes the marks to the store (memory and file), so the failover that follows is allowed; an empty store marks nothing', async () => {
  // Before: heal marked them through changeShardMap, which writes only when ranges change: the
  // ids were reported, nothing was written, and every failover of the dead master was refused.
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-abort-marks-'));
  try {
    for (const store of [new MemoryTopologyStore(), new FileTopologyStore({ path: join(dir, 'topology.json') })]) {
      assert.deepEqual(await casAbortMovesFrom(store, 'A1', 'A1 died'), []);
      const json = advanceMove(map(addMove(map(base), { id: 'm1', span: { first: 2, last: 3 }, target })), 'm1', ['started'], 'copied');
      await store.write(map(json), 0);
      assert.deepEqual(await casAbortMovesFrom(store, 'A1', 'A1 died'), ['m1']);
      const stored = (await store.read())!;
      assert.equal(stored.moves()[0]!.phase, 'aborting');
      assert.equal(map(promoteSlave(stored, 'A1')).locate(2).master, 'A2');
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
