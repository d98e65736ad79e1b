/**
 * Lookups (mod shards) under a freeze, on the embedded SQLite store, with the freeze set in the map
 * by hand (docs/moves.md "Wide-column shards", docs/failover.md): a lookup write is held while its
 * mod shard is frozen (a move that carries mod shards, a planned failover of its host) and goes to
 * the new master after the switch; past the budget it is SHARD_MOVING and nothing is written;
 * reads continue; a lookup statement that meets the fence re-reads the map and goes once to the
 * new master. Mapping writes on a frozen object shard are held the same way.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isShardKitError } from '../../src/errors.js';
import { addMove, advanceMove, casMoveState, freezeMove, switchMove } from '../../src/moves/move-state.js';
import { copyFenced, fenceFile } from '../../src/moves/sqlite/sqlite-move-engine.js';
import { freezeForFailover, failoverIds, switchFailover } from '../../src/ops/failover/failover-freeze.js';
import type { ShardRef } from '../../src/storage/shard-backend.js';
import { MemoryTopologyBacking, MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import type { TopologyStore } from '../../src/topology/topology-store.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { SqliteBackend } from '../../src/storage/sqlite/sqlite-backend.js';
import { makeKit, testSchema } from './kit-fixture.js';
import { keyOn, sharedHostsMap } from './shared-hosts-map.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const lookupRef = (host: string, shard: number): ShardRef => ({ host, shard, fleet: 'lookups' });

/** Settles to 'pending' when `p` has not settled yet (checked after the microtasks run). */
async function state(p: Promise<unknown>): Promise<'pending' | 'fulfilled' | 'rejected'> {
  let s: 'pending' | 'fulfilled' | 'rejected' = 'pending';
  p.then(() => (s = 'fulfilled'), () => (s = 'rejected'));
  await new Promise((r) => setImmediate(r));
  return s;
}

test('planned failover of a host: lookup put/delete and mapping add on its shards are held, reads go on, the writes land on the new master after the switch', async () => {
  const topology = new MemoryTopologyStore();
  const f = makeKit({ topology, shardMap: sharedHostsMap() });
  try {
    const user = await f.kit.objects.create('user', { n: 1 }, { shard: 2 });
    const board = await f.kit.objects.create('board', { n: 1 }, { shard: 3 });
    const k1 = keyOn(2, 'held');
    const k2 = keyOn(2, 'read');
    await f.kit.lookups.put('email', k2, user.id);
    // The failover's freeze of MySQL001A, written as the failover command writes it (a long budget:
    // the writes must be held until the switch below, not refused).
    await casMoveState(topology, (m) => freezeForFailover(m, 'MySQL001A', 'MySQL001B', { holdMs: 60_000 }));
    const put = f.kit.lookups.put('email', k1, user.id);
    const del = f.kit.lookups.delete('email', k2);
    const pinned = f.kit.mappings.add('user_has_boards', user.id, board.id);
    // Reads continue during the freeze: answered from the old master while the writes wait.
    assert.equal(await f.kit.lookups.get('email', k2), user.id);
    assert.equal(await f.kit.lookups.get('email', k1), undefined);
    assert.equal(await state(put), 'pending');
    assert.equal(await state(del), 'pending');
    assert.equal(await state(pinned), 'pending');
    const map = await topology.read();
    await casMoveState(topology, (m) => switchFailover(m, 'MySQL001A', failoverIds(map!, 'MySQL001A')));
    await put;
    assert.equal(await del, false, 'the delete ran on the new master (an empty SQLite directory here), not on the old one');
    await pinned;
    // The held writes went to the new master, nothing to the old one.
    assert.equal(await f.backend.getLookup(lookupRef('MySQL001B', 2), 'lookup_email', k1), user.id);
    assert.equal(await f.backend.getLookup(lookupRef('MySQL001A', 2), 'lookup_email', k1), undefined);
    assert.equal(await f.backend.getLookup(lookupRef('MySQL001A', 2), 'lookup_email', k2), user.id);
    assert.equal(await f.backend.countMappings({ host: 'MySQL001B', shard: 2, fleet: 'objects' }, 'user_has_boards', user.id), 1);
    assert.equal(await f.backend.countMappings({ host: 'MySQL001A', shard: 2, fleet: 'objects' }, 'user_has_boards', user.id), 0);
  } finally {
    await f.cleanup();
  }
});

test('a move that carries mod shards: a lookup write held past the budget is SHARD_MOVING and writes nothing; mod shards the move does not carry are not held', async () => {
  const topology = new MemoryTopologyStore();
  const f = makeKit({ topology, shardMap: sharedHostsMap() });
  try {
    const user = await f.kit.objects.create('user', {}, { shard: 9 });
    const other = await f.kit.objects.create('user', {}, { shard: 9 });
    const key = keyOn(1, 'moving');
    await f.kit.lookups.put('email', key, user.id);
    await casMoveState(topology, (m) => addMove(m, { id: 'carries', span: { first: 0, last: 3 }, target: { master: 'MySQL002A', slave: 'MySQL002B' }, holdMs: 5000 }));
    await casMoveState(topology, (m) => advanceMove(m, 'carries', ['started'], 'copied', { modShards: true }));
    // frozenAt ten minutes ahead: the freeze stays in force however slow the machine is, and each
    // write is still held only its budget from when it arrives (freeze-hold.ts), so the outcome
    // does not depend on how soon after the freeze the writes are sent.
    await casMoveState(topology, (m) => freezeMove(m, 'carries', Date.now() + 600_000));
    const held = Promise.allSettled([f.kit.lookups.put('email', key, other.id), f.kit.lookups.delete('email', key)]);
    // Mod shard 5 is on the same host but outside the span: not carried, not held.
    await f.kit.lookups.put('email', keyOn(5, 'free'), user.id);
    assert.equal(await state(held), 'pending');
    // Reads go on while the writes wait.
    assert.equal(await f.kit.lookups.get('email', key), user.id);
    for (const r of await held) {
      assert.equal(r.status, 'rejected');
      assert.ok(isShardKitError(r.reason, 'SHARD_MOVING') && r.reason.details?.retryAfterSeconds === 1, String(r.reason));
    }
    assert.equal(await f.kit.lookups.get('email', key), user.id, 'neither held write was applied');
  } finally {
    await f.cleanup();
  }
});

test('a move whose copy found no mod shards (no detail.modShards) does not hold lookup writes', async () => {
  const topology = new MemoryTopologyStore();
  const f = makeKit({ topology, shardMap: sharedHostsMap() });
  try {
    const user = await f.kit.objects.create('user', {}, { shard: 9 });
    await casMoveState(topology, (m) => addMove(m, { id: 'objects-only', span: { first: 0, last: 3 }, target: { master: 'MySQL002A', slave: 'MySQL002B' }, holdMs: 60_000 }));
    await casMoveState(topology, (m) => advanceMove(m, 'objects-only', ['started'], 'copied'));
    await casMoveState(topology, (m) => freezeMove(m, 'objects-only'));
    await f.kit.lookups.put('email', keyOn(1, 'free'), user.id);
    assert.equal(await f.backend.getLookup(lookupRef('MySQL001A', 1), 'lookup_email', keyOn(1, 'free')), user.id);
  } finally {
    await f.cleanup();
  }
});

test('a service whose map missed a move carrying mod shard 2: its lookup put, get and delete meet the fence, re-read the map and go once to the target', async () => {
  const root = mkdtempSync(join(tmpdir(), 'shardkit-lookup-fence-'));
  const backing = new MemoryTopologyBacking(sharedHostsMap());
  const mem = new MemoryTopologyStore({ backing });
  // A paused watch: the service sees the map only when it re-reads the store.
  const paused: TopologyStore = { read: () => mem.read(), write: (m, v) => mem.write(m, v), watch: () => () => {}, close: () => mem.close() };
  const backend = new SqliteBackend({ root, schema: testSchema, maxOpenShards: 16 });
  const kit = new ShardKit({ backend, schema: testSchema, topology: paused });
  try {
    await kit.ready();
    const user = await kit.objects.create('user', {}, { shard: 9 });
    const [kept, gone, fresh] = [keyOn(2, 'kept'), keyOn(2, 'gone'), keyOn(2, 'fresh')];
    await kit.lookups.put('email', kept, user.id);
    await kit.lookups.put('email', gone, user.id);
    // The move, by hand as the SQLite engine does it, on the mod shard's file only.
    const src = backend.shardPath(lookupRef('MySQL001A', 2));
    const dst = backend.shardPath(lookupRef('MySQL002A', 2));
    await casMoveState(mem, (m) => addMove(m, { id: 'carries', span: { first: 0, last: 3 }, target: { master: 'MySQL002A', slave: 'MySQL002B' }, holdMs: 60_000 }));
    await casMoveState(mem, (m) => advanceMove(m, 'carries', ['started'], 'copied', { modShards: true }));
    await casMoveState(mem, (m) => freezeMove(m, 'carries'));
    fenceFile(src);
    await copyFenced(src, dst);
    await casMoveState(mem, (m) => advanceMove(m, 'carries', ['frozen'], 'fenced'));
    await casMoveState(mem, (m) => switchMove(m, 'carries'));
    assert.equal((await kit.shardMap()).locateModShard(2).master, 'MySQL001A', 'the service has not seen the switch');
    assert.equal(await kit.lookups.get('email', kept), user.id);
    await kit.lookups.put('email', fresh, user.id);
    assert.equal(await kit.lookups.delete('email', gone), true);
    assert.equal(await backend.getLookup(lookupRef('MySQL002A', 2), 'lookup_email', fresh), user.id);
    assert.equal(await backend.getLookup(lookupRef('MySQL002A', 2), 'lookup_email', gone), undefined);
  } finally {
    await kit.close();
    await backend.close();
    await mem.close();
    rmSync(root, { recursive: true, force: true });
  }
});
