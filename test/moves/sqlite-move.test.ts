/**
 * Shard moves on the embedded default (SQLite host directories), end to end in one process:
 * two "services" (ShardKits with their own backends over the same files, following one topology
 * backing) write while the mover runs; a third service's watch is paused across the cutover.
 * The scenarios every engine shares run here through test/conformance/move-suite.ts.
 * @server-free: the suite's ledger (test/failover/ledger.ts) names the dev cluster only as a type.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { isShardKitError, ShardKitError } from '../../src/errors.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { SqliteBackend } from '../../src/storage/sqlite/sqlite-backend.js';
import { MemoryTopologyBacking, MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap } from '../../src/topology/shard-map.js';
import type { TopologyStore } from '../../src/topology/topology-store.js';
import { addMove, advanceMove, casMoveState, forgetMove, freezeMove } from '../../src/moves/move-state.js';
import { runMove, type MoveEvent } from '../../src/moves/move-runner.js';
import { createSqliteMoveEngine, compareFiles, type SqliteMoveEngine } from '../../src/moves/sqlite/index.js';
import type { MoveEngine } from '../../src/moves/move-engine.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { fleetTables } from '../../src/storage/shard-names.js';
import { snapshot, testConfig, testSchema } from '../kit/kit-fixture.js';
import { runMoveSuite } from '../conformance/move-suite.js';

const HOSTS = Object.keys(testConfig.hosts);
const TARGET = { master: 'MySQL002A', slave: 'MySQL002B' };
const SPAN = { first: 0, last: 3 };

interface World {
  root: string;
  backing: MemoryTopologyBacking;
  store: TopologyStore;
  services: ShardKit[];
  backends: SqliteBackend[];
  engine: SqliteMoveEngine;
  /** A service whose watch never delivers (a paused watch): it only sees the map when it re-reads. */
  stale(): Promise<ShardKit>;
  path(host: string, shard: number): string;
  cleanup(): Promise<void>;
}

async function world(): Promise<World> {
  const root = mkdtempSync(join(tmpdir(), 'shardkit-move-'));
  const backing = new MemoryTopologyBacking(ShardMap.fromJSON(testConfig.shardMap));
  const stores: TopologyStore[] = [];
  const backends: SqliteBackend[] = [];
  const kits: ShardKit[] = [];
  const service = async (paused: boolean): Promise<ShardKit> => {
    const backend = new SqliteBackend({ root, schema: testSchema, maxOpenShards: 64 });
    const mem = new MemoryTopologyStore({ backing });
    const topology: TopologyStore = paused ? { read: () => mem.read(), write: (m, v) => mem.write(m, v), watch: () => () => {}, close: () => mem.close() } : mem;
    stores.push(topology);
    backends.push(backend);
    const kit = new ShardKit({ backend, schema: testSchema, topology });
    await kit.ready();
    kits.push(kit);
    return kit;
  };
  const services = [await service(false), await service(false)];
  const store = new MemoryTopologyStore({ backing });
  stores.push(store);
  const pathOf = (host: string, shard: number) => backends[0]!.shardPath({ host, shard, fleet: 'objects' });
  return {
    root, backing, store, services, backends,
    engine: createSqliteMoveEngine({ shardPath: pathOf }),
    stale: () => service(true),
    path: pathOf,
    cleanup: async () => {
      for (const k of kits) await k.close();
      for (const b of backends) await b.close();
      for (const s of stores) await s.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

function rowsIn(path: string, table: string): number {
  if (!existsSync(path)) return 0;
  const db = new Database(path, { readonly: true });
  try {
    const t = (db.prepare("SELECT name FROM sqlite_master WHERE type='table' AND (name = ? OR name = ?)").pluck().all(table, `moved__${table}`) as string[])[0];
    return t === undefined ? 0 : Number(db.prepare(`SELECT count(*) FROM "${t}"`).pluck().get());
  } finally {
    db.close();
  }
}

/** Local ids in `table` of a shard file, with its fenced copy (moved__) unless `withFenced` is false. */
function localIdsIn(path: string, table: string, withFenced = true): Set<number> {
  const out = new Set<number>();
  if (!existsSync(path)) return out;
  const db = new Database(path, { readonly: true });
  try {
    for (const t of db.prepare("SELECT name FROM sqlite_master WHERE type='table' AND (name = ? OR name = ?)").pluck().all(table, withFenced ? `moved__${table}` : table) as string[]) {
      for (const id of db.prepare(`SELECT local_id FROM "${t}"`).pluck().all() as number[]) out.add(id);
    }
  } finally {
    db.close();
  }
  return out;
}

test('a move under two writing services: every acknowledged write is on the target, none lands on the source after the cutover', async () => {
  const w = await world();
  try {
    // Boards on every shard, so writers have parents on moving and staying shards.
    const boards: bigint[] = [];
    for (let s = 0; s < 16; s++) boards.push((await w.services[0]!.objects.create('board', { s }, { shard: s })).id);
    interface Ack { id: bigint; v: number; at: number }
    const ledger = new Map<bigint, Ack>();
    const mappingLedger: Array<{ board: bigint; pin: bigint; at: number }> = [];
    const errors = new Map<string, number>();
    let stop = false;
    const writer = async (kit: ShardKit, seed: number) => {
      let i = 0;
      while (!stop) {
        i++;
        const board = boards[(seed * 7 + i) % 8 < 6 ? (i % 4) : 4 + (i % 12)]!;
        try {
          const pin = await kit.objects.create('pin', { v: 0, w: seed }, { near: board });
          ledger.set(pin.id, { id: pin.id, v: 0, at: Date.now() });
          await kit.mappings.add('board_has_pins', board, pin.id);
          mappingLedger.push({ board, pin: pin.id, at: Date.now() });
          await kit.objects.patch(pin.id, { v: 1 });
          ledger.set(pin.id, { id: pin.id, v: 1, at: Date.now() });
        } catch (err) {
          const code = err instanceof ShardKitError ? err.code : String(err);
          errors.set(code, (errors.get(code) ?? 0) + 1);
          if (code !== 'SHARD_MOVING') throw err;
        }
        if (i % 8 === 0) await new Promise((r) => setImmediate(r));
      }
    };
    const writers = [writer(w.services[0]!, 1), writer(w.services[1]!, 2)];
    // Let some writes land before the move starts (outcome-based: wait for a count, not a time).
    while (ledger.size < 50) await new Promise((r) => setTimeout(r, 5));
    const events: MoveEvent[] = [];
    let switchedAt = 0;
    const result = await runMove({
      store: w.store, engine: w.engine, hosts: HOSTS, start: { span: SPAN, target: TARGET },
      onEvent: (e) => {
        events.push(e);
        if (e.phase === 'switched') switchedAt = Date.now();
      },
    });
    const after = ledger.size;
    while (ledger.size < after + 50) await new Promise((r) => setTimeout(r, 5));
    stop = true;
    await Promise.all(writers);
    assert.equal(result.outcome, 'switched');
    assert.deepEqual(events.map((e) => e.phase), ['started', 'copied', 'frozen', 'fenced', 'fenced', 'switched']);
    assert.equal(result.verify?.mismatches.length, 0);
    assert.ok(result.verify!.rows > 0);
    const map = (await w.store.read())!;
    assert.equal(map.locate(2).master, 'MySQL002A');
    assert.equal(map.locate(4).master, 'MySQL001A');
    assert.equal(map.move(result.move.id)?.phase, 'switched');

    // Every acknowledged write, read through a fresh service: present with its last acknowledged value.
    const fresh = w.services[0]!;
    let moved = 0;
    for (const ack of ledger.values()) {
      const obj = await fresh.objects.get(ack.id);
      assert.ok((obj.data as { v: number }).v >= ack.v, `pin ${ack.id} lost its acknowledged patch`);
      const shard = pinterestId.decode(ack.id).shard;
      if (shard <= 3) {
        moved++;
        // On the target file itself...
        assert.ok(localIdsIn(w.path('MySQL002A', shard), 'pins').has(pinterestId.decode(ack.id).localId));
      }
    }
    assert.ok(moved > 0, 'some writes went to the moving shards');
    for (const m of mappingLedger) {
      const page = await fresh.mappings.list('board_has_pins', m.board, { limit: 1000 });
      assert.ok(page.items.some((x) => x.id === m.pin), `mapping ${m.board} -> ${m.pin} lost`);
    }
    // The source files are fenced and hold no row the target lacks: nothing landed there after the cutover.
    for (let s = 0; s <= 3; s++) {
      const src = localIdsIn(w.path('MySQL001A', s), 'pins');
      const dst = localIdsIn(w.path('MySQL002A', s), 'pins');
      for (const id of src) assert.ok(dst.has(id), `shard ${s} local id ${id} is on the source only`);
      assert.ok(dst.size >= src.size);
    }
    // Writes to other shards of the source host never appear on the target.
    for (let s = 4; s <= 7; s++) assert.equal(existsSync(w.path('MySQL002A', s)), false);
    assert.deepEqual([...errors.keys()].filter((c) => c !== 'SHARD_MOVING'), []);
    console.log(JSON.stringify(events.map((e) => [e.phase, e.elapsedMs])));
    console.log(`ledger: ${ledger.size} acknowledged pins (${moved} on moving shards), ${mappingLedger.length} mapping adds, 0 lost; freeze to switch ${result.freezeToSwitchMs} ms; errors ${JSON.stringify([...errors])}`);
  } finally {
    await w.cleanup();
  }
});

test('moved there, back, and there again: a service that still holds a handle on the first, fenced file reads and writes the new one (no SHARD_MOVING)', async () => {
  // Found by a fresh-clone CI run of the move suite's oracle: after "moved and moved back", a
  // service's LRU kept its handle on MySQL002A's first copy of shard 1, fenced when the shard went
  // back. The next move to MySQL002A wrote a new file at that path; the service's read went to the
  // old handle, met the fence, re-read the map (MySQL002A, no move in flight) and answered
  // SHARD_MOVING, where the shard lived right there.
  const w = await world();
  try {
    const [kit] = w.services;
    const one = { first: 1, last: 1 };
    const pin = await kit!.objects.create('pin', { n: 1 }, { shard: 1 });
    const move = async (target: { master: string; slave: string }) => {
      const r = await runMove({ store: w.store, engine: w.engine, hosts: HOSTS, start: { span: one, target } });
      assert.equal(r.outcome, 'switched');
      for (const m of (await w.store.read())!.moves().filter((x) => x.phase === 'switched')) {
        if ((await w.store.read())!.locate(m.range[0]).master !== m.source.master) await w.engine.dropMoved(m);
        await casMoveState(w.store, (x) => forgetMove(x, m.id));
      }
    };
    await move(TARGET);
    assert.deepEqual((await kit!.objects.get(pin.id)).data, { n: 1 }); // a handle on MySQL002A's file
    await move({ master: 'MySQL001A', slave: 'MySQL001B' });
    assert.deepEqual((await kit!.objects.get(pin.id)).data, { n: 1 }); // on MySQL001A; the MySQL002A handle stays cached
    await move(TARGET);
    assert.equal((await kit!.shardMap()).locate(1).master, 'MySQL002A');
    assert.deepEqual((await kit!.objects.get(pin.id)).data, { n: 1 });
    const late = await kit!.objects.create('pin', { n: 2 }, { shard: 1 });
    assert.ok(localIdsIn(w.path('MySQL002A', 1), 'pins', false).has(pinterestId.decode(late.id).localId));
  } finally {
    await w.cleanup();
  }
});

test('a service whose watch is paused across the cutover meets the fence, re-reads the map and writes to the target', async () => {
  const w = await world();
  try {
    const stale = await w.stale();
    const board = await stale.objects.create('board', {}, { shard: 2 });
    await runMove({ store: w.store, engine: w.engine, hosts: HOSTS, start: { span: SPAN, target: TARGET } });
    const sourceBefore = rowsIn(w.path('MySQL001A', 2), 'pins');
    // Its map still says MySQL001A for shard 2; the write meets the fenced file and is retried on MySQL002A.
    const pin = await stale.objects.create('pin', { late: true }, { near: board.id });
    assert.equal(rowsIn(w.path('MySQL001A', 2), 'pins'), sourceBefore);
    assert.ok(localIdsIn(w.path('MySQL002A', 2), 'pins').has(pinterestId.decode(pin.id).localId));
    assert.equal((await stale.shardMap()).locate(2).master, 'MySQL002A');
    // A stale service that never opened shard 1 before the cutover: its first handle on the
    // fenced file must refuse it, not re-create empty tables there and write into them.
    const oldMapService = await (async () => {
      const backend = new SqliteBackend({ root: w.root, schema: testSchema, maxOpenShards: 64 });
      w.backends.push(backend);
      const frozenTopology: TopologyStore = { read: async () => ShardMap.fromJSON(testConfig.shardMap), write: async () => { throw new Error('read-only'); }, watch: () => () => {}, close: async () => {} };
      // Reads the old map first; afterwards refresh() reads the live one.
      let first = true;
      const live = new MemoryTopologyStore({ backing: w.backing });
      const topology: TopologyStore = { ...frozenTopology, read: async () => (first ? ((first = false), frozenTopology.read()) : live.read()) };
      const kit = new ShardKit({ backend, schema: testSchema, topology });
      await kit.ready();
      return kit;
    })();
    assert.equal((await oldMapService.shardMap()).locate(1).master, 'MySQL001A');
    const late = await oldMapService.objects.create('pin', { fresh: true }, { shard: 1 });
    assert.ok(localIdsIn(w.path('MySQL002A', 1), 'pins').has(pinterestId.decode(late.id).localId));
    assert.equal(localIdsIn(w.path('MySQL001A', 1), 'pins').size, 0, 'nothing written to the fenced source file');
    await oldMapService.close();
    // Reads too: a fresh stale service reads the moved board from the target.
    const stale2 = await w.stale();
    assert.deepEqual((await stale2.objects.get(board.id)).data, {});
  } finally {
    await w.cleanup();
  }
});

test('reads continue during a freeze; a write held past the budget gets SHARD_MOVING and is written nowhere; an expired freeze is ignored', async () => {
  const w = await world();
  try {
    const kit = w.services[0]!;
    const board = await kit.objects.create('board', { a: 1 }, { shard: 1 });
    await casMoveState(w.store, (m) => addMove(m, { id: 'hold', span: SPAN, target: TARGET, holdMs: 3000 }));
    await casMoveState(w.store, (m) => advanceMove(m, 'hold', ['started'], 'copied'));
    const before = snapshot(w.root);
    await casMoveState(w.store, (m) => freezeMove(m, 'hold'));
    // Both start at once, well inside the budget; nobody switches, so both run out of it.
    const [patched, created] = await Promise.allSettled([kit.objects.patch(board.id, { a: 2 }), kit.objects.create('pin', {}, { near: board.id })]);
    for (const r of [patched, created]) {
      assert.equal(r.status, 'rejected');
      const e = (r as PromiseRejectedResult).reason;
      assert.ok(isShardKitError(e, 'SHARD_MOVING') && e.status === 503 && (e.details as { retryAfterSeconds: number }).retryAfterSeconds === 1, String(e));
    }
    assert.deepEqual((await kit.objects.get(board.id)).data, { a: 1 }, 'reads continue');
    assert.equal(snapshot(w.root), before, 'nothing was written');
    // Writes to other shards are not held.
    await kit.objects.create('board', {}, { shard: 5 });
    // The freeze is now older than its budget: a service that sees it now ignores it (a crashed mover blocks nothing).
    const fresh = await w.stale();
    await fresh.objects.patch(board.id, { a: 3 });
    assert.deepEqual((await kit.objects.get(board.id)).data, { a: 3 });
  } finally {
    await w.cleanup();
  }
});

test('a write held by the freeze is released to the new master when the switch comes', async () => {
  const w = await world();
  try {
    const kit = w.services[0]!;
    const board = await kit.objects.create('board', {}, { shard: 3 });
    // A long budget, so the hold cannot run out on a slow machine: the switch releases it.
    await casMoveState(w.store, (m) => addMove(m, { id: 'rel', span: SPAN, target: TARGET, holdMs: 60_000 }));
    await casMoveState(w.store, (m) => advanceMove(m, 'rel', ['started'], 'copied'));
    await casMoveState(w.store, (m) => freezeMove(m, 'rel'));
    let settled = false;
    const held = kit.objects.create('pin', { held: true }, { near: board.id }).finally(() => (settled = true));
    // Let it reach the hold (it is waiting on the map, not on storage).
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    assert.equal(settled, false, 'the write waits for the switch');
    const result = await runMove({ store: w.store, engine: w.engine, moveId: 'rel' });
    assert.equal(result.outcome, 'switched');
    const pin = await held;
    assert.equal(pinterestId.decode(pin.id).shard, 3);
    assert.ok(localIdsIn(w.path('MySQL002A', 3), 'pins').has(pinterestId.decode(pin.id).localId));
    assert.equal(localIdsIn(w.path('MySQL001A', 3), 'pins').size, 0);
  } finally {
    await w.cleanup();
  }
});

describe('the move suite on SQLite (test/conformance/move-suite.ts)', () => {
  let w: World;
  const objectTables = fleetTables(testSchema, 'objects');
  /** Tables of a shard's file: live ones, or the ones the fence set aside (renamed moved__*). */
  const tablesOf = (host: string, shard: number, aside: boolean): string[] => {
    const path = w.path(host, shard);
    if (!existsSync(path)) return [];
    const db = new Database(path, { readonly: true });
    try {
      const names = db.prepare("SELECT name FROM sqlite_master WHERE type='table'").pluck().all() as string[];
      return aside ? names.filter((t) => t.startsWith('moved__')) : names.filter((t) => objectTables.includes(t));
    } finally {
      db.close();
    }
  };
  before(async () => {
    w = await world();
  });
  after(async () => {
    await w?.cleanup();
  });
  runMoveSuite({ moverDies: ['copied', 'frozen', 'fenced'], killServers: false }, () => ({
    pairs: [{ master: 'MySQL001A', slave: 'MySQL001B' }, TARGET],
    hosts: HOSTS,
    kits: w.services,
    store: () => w.store,
    engine: () => w.engine,
    liveIds: async (host, shard) => (tablesOf(host, shard, false).includes('pins') ? [...localIdsIn(w.path(host, shard), 'pins', false)].map(String) : []),
    objectTablesOn: async (host, shard) => tablesOf(host, shard, false),
    fencedAside: async (host, shard) => tablesOf(host, shard, true),
    service: async (topology) => {
      const kit = new ShardKit({ backend: new SqliteBackend({ root: w.root, schema: testSchema, maxOpenShards: 64 }), schema: testSchema, topology, ownsResources: true });
      await kit.ready();
      return kit;
    },
    changeRow: async (host, shard) => {
      const db = new Database(w.path(host, shard));
      try {
        assert.equal(db.prepare(`UPDATE pins SET data = '{"changed":"by hand"}' WHERE local_id = (SELECT min(local_id) FROM pins)`).run().changes, 1);
      } finally {
        db.close();
      }
    },
    leftOnTarget: async () => [],
    leftBehind: async () => [],
    ranges: { moverDies: { span: [0, 3], load: [0, 1, 2, 3, 4, 5] } },
  }));
});

test('verify finds a row changed by hand on the target and the mover refuses to switch (the range goes back to the source)', async () => {
  const w = await world();
  try {
    const kit = w.services[0]!;
    const board = await kit.objects.create('board', { n: 1 }, { shard: 1 });
    for (let i = 0; i < 30; i++) await kit.objects.create('pin', { i }, { near: board.id });
    const tampering: MoveEngine = Object.create(w.engine) as MoveEngine;
    tampering.catchUp = async (m, p) => {
      await w.engine.catchUp(m, p);
      const db = new Database(w.path('MySQL002A', 1));
      db.prepare("UPDATE pins SET data = '{\"i\":999}' WHERE local_id = 17").run();
      db.close();
      const report = compareFiles(1, w.path('MySQL001A', 1), w.path('MySQL002A', 1));
      assert.deepEqual(report.mismatches, [{ shard: 1, table: 'pins', fromKey: '-inf', toKey: '30', sourceRows: 30, targetRows: 30 }]);
    };
    await assert.rejects(
      runMove({ store: w.store, engine: tampering, start: { span: SPAN, target: TARGET } }),
      (e) => isShardKitError(e, 'MOVE_VERIFY_MISMATCH') && /aborted.*verify found 1 mismatching chunk.*shard 1 pins/.test(e.message),
    );
    const map = (await w.store.read())!;
    assert.equal(map.locate(1).master, 'MySQL001A');
    assert.equal(map.moves().length, 0);
    assert.equal(existsSync(w.path('MySQL002A', 1)), false);
    assert.deepEqual((await kit.objects.get(board.id)).data, { n: 1 });
    await kit.objects.patch(board.id, { n: 2 });
  } finally {
    await w.cleanup();
  }
});

test('a target that already holds a file of a moving shard is refused (ALREADY_EXISTS), and the abort leaves that file and its rows alone', async () => {
  const w = await world();
  try {
    const kit = w.services[0]!;
    const board = await kit.objects.create('board', { n: 1 }, { shard: 1 });
    const before = localIdsIn(w.path('MySQL001A', 1), 'boards');
    // Someone else's data for shard 1 on the target (an earlier copy restored by hand, say).
    const theirs = w.path(TARGET.master, 1);
    mkdirSync(dirname(theirs), { recursive: true });
    const src = new Database(w.path('MySQL001A', 1), { readonly: true });
    try {
      await src.backup(theirs);
    } finally {
      src.close();
    }
    const rowsBefore = rowsIn(theirs, 'boards');
    assert.ok(rowsBefore > 0);
    await assert.rejects(
      runMove({ store: w.store, engine: w.engine, start: { span: SPAN, target: TARGET } }),
      (e) => isShardKitError(e, 'ALREADY_EXISTS') && /already exists on the target MySQL002A/.test(e.message),
    );
    assert.equal(existsSync(theirs), true, 'the target\'s own file is still there');
    assert.equal(rowsIn(theirs, 'boards'), rowsBefore);
    const map = (await w.store.read())!;
    assert.equal(map.locate(1).master, 'MySQL001A');
    assert.equal(map.moves().length, 0);
    assert.deepEqual(localIdsIn(w.path('MySQL001A', 1), 'boards'), before);
    await kit.objects.patch(board.id, { n: 2 });
    assert.deepEqual((await kit.objects.get(board.id)).data, { n: 2 });
  } finally {
    await w.cleanup();
  }
});
