import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MemoryTopologyStore, ShardKitError, ShardMap, abortMove, activeFreeze, addMove, advanceMove, casMoveState, forgetMove, freezeMove,
  moveShards, promoteSlave, setOpen, switchMove, type ShardMapJson, type TopologyStore,
} from '../../src/index.js';
import { failoverIds, freezeForFailover, switchFailover } from '../../src/ops/failover/failover-freeze.js';
import { mulberry32 } from '../../src/util/prng.js';

const HOSTS = ['A1', 'A2', 'B1', 'B2', 'C1', 'C2', 'M1', 'M2'];

function baseJson(): ShardMapJson {
  return {
    version: 1,
    ranges: [
      { range: [0, 7], master: 'A1', slave: 'A2', open: true },
      { range: [8, 15], master: 'B1', slave: 'B2', open: true },
    ],
    modShards: { count: 4, ranges: [{ range: [0, 3], master: 'M1', slave: 'M2' }] },
  };
}

async function storeWith(json = baseJson()): Promise<TopologyStore> {
  const store = new MemoryTopologyStore();
  await store.write(ShardMap.fromJSON(json), 0);
  return store;
}

async function code(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    assert.ok(err instanceof ShardKitError, String(err));
    return err.code;
  }
  assert.fail('expected an error');
}

const target = { master: 'C1', slave: 'C2' };

test('bad input to a new move: each gets a clear error and the map is unchanged', async () => {
  const store = await storeWith();
  const before = JSON.stringify((await store.read())!.toJSON());
  const cases: Array<[string, Parameters<typeof addMove>[1], string]> = [
    ['crosses a range boundary', { span: { first: 6, last: 9 }, target }, 'INVALID_ARGUMENT'],
    ['past the map', { span: { first: 14, last: 16 }, target }, 'UNKNOWN_SHARD'],
    ['unknown host', { span: { first: 0, last: 3 }, target: { master: 'Z9' }, hosts: HOSTS }, 'INVALID_ARGUMENT'],
    ['target is the source', { span: { first: 0, last: 3 }, target: { master: 'A1', slave: 'C2' } }, 'INVALID_ARGUMENT'],
    ['target is the source slave', { span: { first: 0, last: 3 }, target: { master: 'A2' } }, 'INVALID_ARGUMENT'],
    ['target master = slave', { span: { first: 0, last: 3 }, target: { master: 'C1', slave: 'C1' } }, 'INVALID_ARGUMENT'],
    ['bad id', { span: { first: 0, last: 3 }, target, id: 'Bad Id!' }, 'INVALID_ARGUMENT'],
    ['hold budget 0', { span: { first: 0, last: 3 }, target, holdMs: 0 }, 'INVALID_ARGUMENT'],
    ['reversed', { span: { first: 3, last: 1 }, target }, 'INVALID_ARGUMENT'],
  ];
  for (const [what, opts, expected] of cases) {
    assert.equal(await code(casMoveState(store, (m) => addMove(m, opts), { hosts: HOSTS })), expected, what);
  }
  assert.equal(JSON.stringify((await store.read())!.toJSON()), before);
  // Unknown move ids, for every transition.
  for (const t of [
    (m: ShardMap) => advanceMove(m, 'nope', ['started'], 'copied'), (m: ShardMap) => freezeMove(m, 'nope'),
    (m: ShardMap) => switchMove(m, 'nope'), (m: ShardMap) => abortMove(m, 'nope'), (m: ShardMap) => forgetMove(m, 'nope'),
  ]) {
    assert.equal(await code(casMoveState(store, t)), 'UNKNOWN_MOVE');
  }
  assert.equal(JSON.stringify((await store.read())!.toJSON()), before);
});

test('a range already held by a move cannot get a second move, a split, a promote or an open/close', async () => {
  const store = await storeWith();
  await casMoveState(store, (m) => addMove(m, { id: 'm1', span: { first: 2, last: 5 }, target }), { hosts: HOSTS });
  const held = (await store.read())!;
  const before = JSON.stringify(held.toJSON());
  assert.equal(await code(casMoveState(store, (m) => addMove(m, { id: 'm2', span: { first: 5, last: 6 }, target }))), 'SHARD_FROZEN');
  assert.equal(await code(casMoveState(store, (m) => addMove(m, { id: 'm1', span: { first: 8, last: 9 }, target }))), 'ALREADY_EXISTS');
  assert.equal(await code(() => moveShards(held, { first: 0, last: 3 }, target)), 'SHARD_FROZEN');
  assert.equal(await code(() => promoteSlave(held, 'A1')), 'SHARD_FROZEN');
  assert.equal(await code(() => setOpen(held, { first: 4, last: 4 }, false)), 'SHARD_FROZEN');
  // Outside the move the map stays editable.
  assert.doesNotThrow(() => moveShards(held, { first: 6, last: 7 }, target));
  assert.doesNotThrow(() => promoteSlave(held, 'B1'));
  await casMoveState(store, (m) => advanceMove(m, 'm1', ['started'], 'copied'));
  await casMoveState(store, (m) => freezeMove(m, 'm1'));
  const frozen = (await store.read())!;
  assert.equal(await code(() => moveShards(frozen, { first: 2, last: 5 }, target)), 'SHARD_FROZEN');
  assert.equal(await code(() => promoteSlave(frozen, 'A1')), 'SHARD_FROZEN');
  assert.notEqual(JSON.stringify(frozen.toJSON()), before);
});

test('the cutover is a compare-and-set on "frozen by this move and on the source", never a blind retry', async () => {
  const store = await storeWith();
  await casMoveState(store, (m) => addMove(m, { id: 'm1', span: { first: 0, last: 3 }, target }), { hosts: HOSTS });
  // Not copied yet: no freeze, no cutover (vitess#6951: never switch before the copy is done).
  assert.equal(await code(casMoveState(store, (m) => freezeMove(m, 'm1'))), 'VERSION_CONFLICT');
  assert.equal(await code(casMoveState(store, (m) => switchMove(m, 'm1'))), 'VERSION_CONFLICT');
  await casMoveState(store, (m) => advanceMove(m, 'm1', ['started'], 'copied'));
  await casMoveState(store, (m) => freezeMove(m, 'm1'));
  // Frozen but not fenced: still refused.
  assert.equal(await code(casMoveState(store, (m) => switchMove(m, 'm1'))), 'VERSION_CONFLICT');
  await casMoveState(store, (m) => advanceMove(m, 'm1', ['frozen'], 'fenced'));
  // Someone aborts (or another mover takes over) between our read and our write: the switch,
  // redone on the newer map, finds its precondition gone and refuses.
  const stale = (await store.read())!;
  await casMoveState(store, (m) => abortMove(m, 'm1'));
  const afterAbort = JSON.stringify((await store.read())!.toJSON());
  let rounds = 0;
  const racing: TopologyStore = {
    read: async () => (rounds++ === 0 ? stale : store.read()),
    write: (next, v) => store.write(next, v),
    watch: (l) => store.watch(l),
    close: async () => {},
  };
  assert.equal(await code(casMoveState(racing, (m) => switchMove(m, 'm1'))), 'UNKNOWN_MOVE');
  assert.equal(rounds, 2, 'the first round lost the CAS and the second re-checked the precondition');
  assert.equal(JSON.stringify((await store.read())!.toJSON()), afterAbort);
  assert.equal((await store.read())!.locate(0).master, 'A1');
});

test('a whole move: freeze carves the range, the switch names the target, forget cleans up; abort restores', async () => {
  const store = await storeWith();
  await casMoveState(store, (m) => addMove(m, { id: 'm1', span: { first: 2, last: 5 }, target, holdMs: 250, now: 10 }), { hosts: HOSTS });
  await casMoveState(store, (m) => advanceMove(m, 'm1', ['started'], 'copied'));
  const frozen = await casMoveState(store, (m) => freezeMove(m, 'm1', 1_000));
  assert.equal(activeFreeze(frozen, 3, 1_000)?.id, 'm1');
  assert.equal(activeFreeze(frozen, 3, 1_249)?.id, 'm1');
  assert.equal(activeFreeze(frozen, 3, 1_250), undefined, 'a freeze past its budget is ignored');
  assert.equal(activeFreeze(frozen, 1, 1_000), undefined);
  assert.equal(frozen.locate(5).master, 'A1', 'frozen shards stay on the source until the switch');
  await casMoveState(store, (m) => advanceMove(m, 'm1', ['frozen'], 'fenced'));
  const switched = await casMoveState(store, (m) => switchMove(m, 'm1'));
  assert.deepEqual(switched.toJSON().ranges.map((r) => [r.range, r.master, r.slave, r.open]), [
    [[0, 1], 'A1', 'A2', true], [[2, 5], 'C1', 'C2', true], [[6, 7], 'A1', 'A2', true], [[8, 15], 'B1', 'B2', true],
  ]);
  // Resuming a switched move is a no-op, not a second switch.
  assert.equal((await casMoveState(store, (m) => switchMove(m, 'm1'))).version, switched.version);
  assert.equal(await code(casMoveState(store, (m) => abortMove(m, 'm1'))), 'VERSION_CONFLICT');
  const done = await casMoveState(store, (m) => forgetMove(m, 'm1'));
  assert.equal(done.moves().length, 0);
  assert.equal(done.toJSON().moves, undefined);

  const store2 = await storeWith();
  await casMoveState(store2, (m) => addMove(m, { id: 'm2', span: { first: 2, last: 5 }, target }));
  await casMoveState(store2, (m) => advanceMove(m, 'm2', ['started'], 'copied'));
  await casMoveState(store2, (m) => freezeMove(m, 'm2'));
  await casMoveState(store2, (m) => advanceMove(m, 'm2', ['frozen'], 'fenced'));
  const aborted = await casMoveState(store2, (m) => abortMove(m, 'm2'));
  assert.deepEqual(aborted.toJSON().ranges, baseJson().ranges, 'abort merges the carved range back');
  assert.equal(aborted.toJSON().moves, undefined);
});

test('a move whose target pair was failed over since it started is refused at the freeze and at the cutover, its record kept: the range never switches to the old master', async () => {
  // The target pair B1/B2 serves 8..15 already, so it can be failed over while the move runs.
  const onB = { master: 'B1', slave: 'B2' };
  const failovers: Array<[string, (m: ShardMap) => ShardMapJson]> = [
    ['emergency', (m) => promoteSlave(m, 'B1')],
    ['promote --drop-old-master', (m) => promoteSlave(m, 'B1', { dropOldMaster: true })],
    ['planned', (m) => {
      const held = ShardMap.fromJSON(freezeForFailover(m, 'B1', 'B2', { holdMs: 2000 }));
      return switchFailover(held, 'B1', failoverIds(held, 'B1'));
    }],
  ];
  for (const [how, failover] of failovers) {
    const store = await storeWith();
    await casMoveState(store, (m) => addMove(m, { id: 'm1', span: { first: 0, last: 3 }, target: onB }), { hosts: HOSTS });
    await casMoveState(store, (m) => advanceMove(m, 'm1', ['started'], 'copied'));
    await casMoveState(store, failover);
    assert.equal(await code(casMoveState(store, (m) => freezeMove(m, 'm1'))), 'VERSION_CONFLICT', how);
    const kept = (await store.read())!;
    assert.deepEqual([kept.move('m1')?.phase, kept.move('m1')?.target], ['copied', onB], how);
    assert.equal(kept.freezeOf(0), undefined, how);

    // Failed over under the freeze: the switch refuses, the abort gives the range back to the source.
    const frozen = await storeWith();
    await casMoveState(frozen, (m) => addMove(m, { id: 'm1', span: { first: 0, last: 3 }, target: onB }), { hosts: HOSTS });
    await casMoveState(frozen, (m) => advanceMove(m, 'm1', ['started'], 'copied'));
    await casMoveState(frozen, (m) => freezeMove(m, 'm1'));
    await casMoveState(frozen, (m) => advanceMove(m, 'm1', ['frozen'], 'fenced'));
    await casMoveState(frozen, failover);
    assert.equal(await code(casMoveState(frozen, (m) => switchMove(m, 'm1'))), 'VERSION_CONFLICT', how);
    assert.equal((await frozen.read())!.locate(0).master, 'A1', how);
    const aborted = await casMoveState(frozen, (m) => abortMove(m, 'm1'));
    assert.deepEqual([aborted.locate(0).master, aborted.freezeOf(0), aborted.moves().length], ['A1', undefined, 0], how);
  }
});

test('the map refuses inconsistent move state in its JSON', () => {
  const json = baseJson();
  const freeze = { id: 'x', source: { master: 'A1', slave: 'A2' }, target, frozenAt: 1, holdMs: 400 };
  const move = { id: 'x', kind: 'move' as const, range: [0, 7] as [number, number], source: { master: 'A1', slave: 'A2' }, target, phase: 'frozen' as const, holdMs: 400, startedAt: 1, updatedAt: 1 };
  assert.throws(() => ShardMap.fromJSON({ ...json, ranges: [{ ...json.ranges[0]!, frozen: freeze }, json.ranges[1]!] }), /not a move in progress/);
  assert.throws(() => ShardMap.fromJSON({ ...json, ranges: [{ ...json.ranges[0]!, frozen: freeze }, json.ranges[1]!], moves: [{ ...move, range: [0, 3] }] }), /which moves 0..3/);
  assert.throws(() => ShardMap.fromJSON({ ...json, moves: [move, { ...move, id: 'y', range: [5, 9] }] }), /overlap/);
  assert.throws(() => ShardMap.fromJSON({ ...json, moves: [move, move] }), /twice/);
  assert.throws(() => ShardMap.fromJSON({ ...json, moves: [{ ...move, target: { master: 'A1' } }] }), /same source and target/);
  assert.throws(() => ShardMap.fromJSON({ ...json, moves: [move] }, { hosts: ['A1', 'A2', 'B1', 'B2', 'M1', 'M2'] }), /C1/);
  const ok = ShardMap.fromJSON({ ...json, ranges: [{ ...json.ranges[0]!, frozen: freeze }, json.ranges[1]!], moves: [move] });
  assert.equal(ok.locate(0).frozen?.id, 'x');
});

test('model: random move operations against an oracle keep the map valid and every shard served once (seeded)', async () => {
  const seed = Number(process.env.SEED ?? Date.now() % 100_000);
  console.log(`model seed ${seed}`);
  // mulberry32, not `state % n` of a power-of-two LCG: that LCG's low bits repeat with short
  // periods (bit k every 2^(k+1) draws), so the small draws below were correlated and about 0.7% of
  // seeds (9, 184, 244, 298, ...) never fenced and switched a move even in 5000 steps.
  const random = mulberry32(seed);
  const rand = (n: number) => Math.floor(random() * n);
  const store = await storeWith();
  // Oracle: which pair serves each shard, and the live moves.
  const owner: string[] = Array.from({ length: 16 }, (_, s) => (s < 8 ? 'A' : 'B'));
  const live = new Map<string, { first: number; last: number; phase: string; to: string }>();
  const pairs = ['A', 'B', 'C'];
  const done = new Map<number, number>();
  // At least 300 steps, and on until every operation has succeeded at least once: with some seeds
  // no move reached 'fenced' and then 'switch' within 300 random steps (seed 51146), which said
  // nothing about the code. 5000 steps bound it.
  const allDone = () => [0, 1, 2, 3, 4].every((o) => (done.get(o) ?? 0) > 0);
  for (let step = 0; step < 300 || (!allDone() && step < 5000); step++) {
    const op = rand(5);
    const ids = [...live.keys()];
    const id = ids.length > 0 && rand(3) > 0 ? ids[rand(ids.length)]! : `m${rand(6)}`;
    let ok = true;
    try {
      if (op === 0) {
        const first = rand(16);
        const last = Math.min(15, first + rand(4));
        const to = pairs[rand(3)]!;
        await casMoveState(store, (m) => addMove(m, { id, span: { first, last }, target: { master: `${to}1`, slave: `${to}2` } }), { hosts: HOSTS });
        live.set(id, { first, last, phase: 'started', to });
      } else if (op === 1) {
        await casMoveState(store, (m) => advanceMove(m, id, ['started'], 'copied'));
        live.get(id)!.phase = 'copied';
      } else if (op === 2) {
        await casMoveState(store, (m) => freezeMove(m, id));
        await casMoveState(store, (m) => advanceMove(m, id, ['frozen'], 'fenced'));
        live.get(id)!.phase = 'fenced';
      } else if (op === 3) {
        await casMoveState(store, (m) => switchMove(m, id));
        const mv = live.get(id)!;
        for (let s = mv.first; s <= mv.last; s++) owner[s] = mv.to;
        await casMoveState(store, (m) => forgetMove(m, id));
        live.delete(id);
      } else {
        await casMoveState(store, (m) => abortMove(m, id));
        live.delete(id);
      }
    } catch (err) {
      assert.ok(err instanceof ShardKitError, `seed ${seed} step ${step}: ${String(err)}`);
      ok = false;
    }
    if (ok) done.set(op, (done.get(op) ?? 0) + 1);
    const map = (await store.read())!;
    for (let s = 0; s < 16; s++) assert.equal(map.locate(s).master, `${owner[s]}1`, `seed ${seed} step ${step} shard ${s} (op ${op} ${ok})`);
    assert.deepEqual(map.moves().map((m) => m.id).sort(), [...live.keys()].sort(), `seed ${seed} step ${step}`);
    for (const m of map.moves()) assert.equal(m.phase, live.get(m.id)!.phase);
  }
  for (let op = 0; op < 5; op++) assert.ok((done.get(op) ?? 0) > 0, `seed ${seed}: op ${op} never succeeded (${JSON.stringify([...done])})`);
});
