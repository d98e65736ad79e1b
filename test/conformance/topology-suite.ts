/**
 * The TopologyStore conformance suite. Every store (memory, file, and later etcd) runs it:
 *
 *   runTopologySuite({ name: "file", factory: async () => ({ open, spawnWriter, cleanup }), supports: { otherProcess: true } })
 *
 * The factory returns a fresh, isolated backing; `open()` may be called several times and every
 * instance it returns shares that backing (as services sharing one ZooKeeper/etcd key would).
 * `spawnWriter` (required when `supports.otherProcess`) starts a writer in another OS process on
 * the same backing; a store that cannot be reached from another process leaves it out.
 */
import { describe, test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { sampleMap, sampleMapJson, raceIncrements } from './topology-race.js';
import { isShardKitError } from '../../src/errors.js';
import { ShardMap, ShardKitError, addMove, advanceMove, casMoveState, freezeMove, switchMove, type ShardMapJson, type TopologyStore } from '../../src/index.js';

export type WriteOutcome = { ok: true; version: number } | { ok: false; code: string; message: string };

/** A writer running in another process, driven over a line protocol by the store's own test file. */
export interface RemoteTopologyWriter {
  write(map: ShardMapJson, expectedVersion: number): Promise<WriteOutcome>;
  /** Runs `rounds` read-then-CAS increments (see raceIncrements) and returns the versions it won. */
  race(rounds: number, tag: string): Promise<number[]>;
  close(): Promise<void>;
}

export interface TopologyFixture {
  open(): TopologyStore | Promise<TopologyStore>;
  spawnWriter?(): Promise<RemoteTopologyWriter>;
  cleanup?(): Promise<void>;
}

export interface TopologySuiteOptions {
  name: string;
  factory: () => TopologyFixture | Promise<TopologyFixture>;
  /** Features the store offers; the tests for a feature run only when it is declared. */
  supports?: { otherProcess?: boolean };
}

export { sampleMapJson, sampleMap, raceIncrements } from './topology-race.js';

async function codeOf(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    assert.ok(err instanceof ShardKitError, `expected a ShardKitError, got ${String(err)}`);
    return err.code;
  }
  assert.fail('expected an error');
}

/** Records what a listener hears and lets a test wait (bounded) for a version to arrive. */
class Recorder {
  readonly versions: number[] = [];
  readonly maps: ShardMap[] = [];
  private waiters: Array<{ version: number; resolve: () => void }> = [];
  readonly listener = (map: ShardMap): void => {
    this.maps.push(map);
    this.versions.push(map.version);
    this.waiters = this.waiters.filter((w) => (map.version >= w.version ? (w.resolve(), false) : true));
  };

  /** Resolves once a map with at least `version` arrived; fails the test after `ms` (a hang guard, not a speed check). */
  until(version: number, what = 'watch', ms = 15_000): Promise<void> {
    if (this.versions.some((v) => v >= version)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${what}: version ${version} never arrived (saw ${JSON.stringify(this.versions)})`)), ms);
      this.waiters.push({ version, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }
}

function assertIncreasing(versions: number[], what: string): void {
  for (let i = 1; i < versions.length; i++) {
    assert.ok(versions[i]! > versions[i - 1]!, `${what}: version ${versions[i]} arrived after ${versions[i - 1]} (${JSON.stringify(versions)})`);
  }
}

export function runTopologySuite({ name, factory, supports = {} }: TopologySuiteOptions): void {
  describe(`TopologyStore conformance: ${name}`, () => {
    let fixture: TopologyFixture;
    let opened: TopologyStore[] = [];
    const open = async (): Promise<TopologyStore> => {
      const s = await fixture.open();
      opened.push(s);
      return s;
    };

    beforeEach(async () => {
      fixture = await factory();
      opened = [];
    });
    afterEach(async () => {
      for (const s of opened) await s.close();
      await fixture.cleanup?.();
    });

    test('a fresh store holds no map', async () => {
      const store = await open();
      assert.equal(await store.read(), undefined);
    });

    test('the first write expects version 0 and stores version 1', async () => {
      const store = await open();
      const stored = await store.write(sampleMap('a', 41), 0);
      assert.equal(stored.version, 1);
      assert.deepEqual((await store.read())?.toJSON(), sampleMapJson('a', 1));
    });

    test('each write bumps the version by one, whatever version the map carries', async () => {
      const store = await open();
      for (let v = 0; v < 5; v++) {
        const stored = await store.write(sampleMap(`w${v}`, 1000 - v), v);
        assert.equal(stored.version, v + 1);
        assert.equal((await store.read())?.version, v + 1);
      }
      assert.deepEqual((await store.read())?.toJSON(), sampleMapJson('w4', 5));
    });

    test('the JSON form round-trips exactly (ranges, slaves, open flags, mod shards)', async () => {
      const store = await open();
      const json: ShardMapJson = {
        version: 0,
        ranges: [
          { range: [0, 2], master: 'h1', slave: 'h2', open: true },
          { range: [3, 3], master: 'h3' },
          { range: [4, 9], master: 'h4', slave: 'h5', open: false },
        ],
        modShards: { count: 4, ranges: [{ range: [0, 1], master: 'm1' }, { range: [2, 3], master: 'm2', slave: 'm3' }] },
      };
      await store.write(ShardMap.fromJSON(json), 0);
      assert.deepEqual((await store.read())?.toJSON(), { ...json, version: 1 });
    });

    test('a move and the freeze it puts on a range round-trip through the store and reach a watcher', async () => {
      const writer = await open();
      const watcher = await open();
      await writer.write(sampleMap('mv'), 0);
      const rec = new Recorder();
      const unwatch = watcher.watch(rec.listener);
      try {
        const target = { master: 'mv-m9', slave: 'mv-s9' };
        await casMoveState(writer, (m) => addMove(m, { id: 'mv-1', span: { first: 2, last: 5 }, target, now: 1_000 }));
        await casMoveState(writer, (m) => advanceMove(m, 'mv-1', ['started'], 'copied', { rows: 12, pos: '0-1-7' }, 2_000));
        const frozen = await casMoveState(writer, (m) => freezeMove(m, 'mv-1', 3_000));
        assert.equal(frozen.version, 4);
        const json = (await watcher.read())!.toJSON();
        assert.deepEqual(json.ranges.map((r) => [r.range, r.frozen?.id ?? null]), [[[0, 1], null], [[2, 5], 'mv-1'], [[6, 7], null], [[8, 15], null]]);
        assert.deepEqual(json.ranges[1]!.frozen, { id: 'mv-1', source: { master: 'mv-m1', slave: 'mv-s1' }, target, frozenAt: 3_000, holdMs: 400 });
        assert.deepEqual(json.moves, [{
          id: 'mv-1', kind: 'move', range: [2, 5], source: { master: 'mv-m1', slave: 'mv-s1' }, target, phase: 'frozen', holdMs: 400,
          startedAt: 1_000, updatedAt: 3_000, detail: { rows: 12, pos: '0-1-7' },
        }]);
        await rec.until(4, 'freeze');
        assert.equal(rec.maps.at(-1)!.rangeOf(3)?.frozen?.id, 'mv-1');
        await casMoveState(writer, (m) => advanceMove(m, 'mv-1', ['frozen'], 'fenced'));
        const switched = await casMoveState(writer, (m) => switchMove(m, 'mv-1'));
        await rec.until(switched.version, 'switch');
        const after = rec.maps.at(-1)!;
        assert.equal(after.locate(3).master, 'mv-m9');
        assert.equal(after.locate(3).frozen, undefined);
        assert.equal(after.locate(1).master, 'mv-m1');
        assert.equal(after.move('mv-1')?.phase, 'switched');
      } finally {
        unwatch();
      }
    });

    test('move progress goes to its own records: another instance reads them, the map version and its watchers do not move', async () => {
      const writer = await open();
      const reader = await open();
      assert.ok(writer.progress !== undefined && reader.progress !== undefined, 'the store keeps move progress records');
      await writer.write(sampleMap('pr'), 0);
      await casMoveState(writer, (m) => addMove(m, { id: 'pr-1', span: { first: 2, last: 5 }, target: { master: 'pr-m9' }, now: 1_000 }));
      // A service that has read version 2 and watches from there.
      assert.equal((await reader.read())!.version, 2);
      const rec = new Recorder();
      const unwatch = reader.watch(rec.listener);
      try {
        for (let i = 1; i <= 5; i++) await writer.progress.put('pr-1', { phase: 'started', rowsCopied: i * 100, rowsTotal: 500, at: 1_000 + i });
        assert.deepEqual([...(await reader.progress.readAll())], [['pr-1', { phase: 'started', rowsCopied: 500, rowsTotal: 500, at: 1_005 }]]);
        assert.equal((await reader.read())!.version, 2, 'five progress writes made no map version');
        assert.equal((await reader.read())!.move('pr-1')!.progress, undefined);
        // The next map change is the first thing the watcher hears.
        await casMoveState(writer, (m) => advanceMove(m, 'pr-1', ['started'], 'copied', undefined, 2_000));
        await rec.until(3, 'copy step');
        assert.deepEqual(rec.versions, [3]);
        await writer.progress.remove('pr-1');
        assert.equal((await reader.progress.readAll()).size, 0);
      } finally {
        unwatch();
      }
    });

    test('service heartbeats go to their own records: another instance reads them, no map version moves, a bad name is refused', async () => {
      const writer = await open();
      const reader = await open();
      assert.ok(writer.services !== undefined && reader.services !== undefined, 'the store keeps service heartbeats');
      await writer.write(sampleMap('hb'), 0);
      const beat = { at: 5_000, ttlMs: 10_000, mapVersion: 1, missing: ['hb-m9'], hostname: 'web-1', pid: 42 };
      await writer.services.put('web-1.42.ab12', beat);
      await writer.services.put('web-1.42.ab12', { ...beat, at: 6_000, missing: [] });
      assert.deepEqual([...(await reader.services.readAll())], [['web-1.42.ab12', { ...beat, at: 6_000, missing: [] }]]);
      assert.equal((await reader.read())!.version, 1, 'heartbeats made no map version');
      for (const bad of ['../escape', '', 'a/b', '.hidden']) {
        await assert.rejects(writer.services.put(bad, beat), (err) => isShardKitError(err, 'INVALID_ARGUMENT'), `name ${JSON.stringify(bad)}`);
      }
      await assert.rejects(writer.services.put('web-2', { ...beat, ttlMs: -1 }), (err) => isShardKitError(err, 'INVALID_CONFIG'));
      await writer.services.remove('web-1.42.ab12');
      await writer.services.remove('never-there');
      assert.equal((await reader.services.readAll()).size, 0);
    });

    test('host records (#28) go to their own records: another instance and a watcher see them with no map version, secrets and bad names are refused', async () => {
      const writer = await open();
      const reader = await open();
      assert.ok(writer.hosts !== undefined && reader.hosts !== undefined, 'the store keeps host records');
      await writer.write(sampleMap('hr'), 0);
      // A service that has read version 1 and watches from there.
      assert.equal((await reader.read())!.version, 1);
      const rec = new Recorder();
      const unwatch = reader.watch(rec.listener);
      try {
        const host = { address: '10.0.0.9', port: 3307, role: 'master' as const, engine: 'mariadb' as const };
        await writer.hosts.put('MySQL009A', host);
        await writer.hosts.put('MySQL009B', { ...host, port: 3308, role: 'slave', credentialsFrom: 'MySQL001A' });
        assert.deepEqual([...(await reader.hosts.readAll())].sort(), [['MySQL009A', host], ['MySQL009B', { ...host, port: 3308, role: 'slave', credentialsFrom: 'MySQL001A' }]]);
        assert.equal((await reader.read())!.version, 1, 'host records made no map version');
        await assert.rejects(writer.hosts.put('MySQL009C', { ...host, password: 'secret' } as typeof host), (err) => isShardKitError(err, 'INVALID_CONFIG'), 'a password is refused');
        await assert.rejects(writer.hosts.put('../x', host), (err) => isShardKitError(err, 'INVALID_ARGUMENT'));
        await assert.rejects(writer.hosts.put('MySQL009C', { ...host, port: 0 }), (err) => isShardKitError(err, 'INVALID_CONFIG'));
        await writer.hosts.remove('MySQL009A');
        assert.deepEqual([...(await reader.hosts.readAll()).keys()], ['MySQL009B']);
        await casMoveState(writer, (m) => addMove(m, { id: 'hr-1', span: { first: 2, last: 5 }, target: { master: 'hr-m9' }, now: 1_000 }));
        await rec.until(2, 'move added');
        assert.deepEqual(rec.versions, [2], 'the watcher heard the map change only');
      } finally {
        unwatch();
      }
    });

    test('a stale expectedVersion is VERSION_CONFLICT and changes nothing', async () => {
      const store = await open();
      await store.write(sampleMap('one'), 0);
      await store.write(sampleMap('two'), 1);
      let err: unknown;
      try {
        await store.write(sampleMap('stale'), 1);
      } catch (e) {
        err = e;
      }
      assert.ok(err instanceof ShardKitError && err.code === 'VERSION_CONFLICT', String(err));
      assert.equal(err.status, 409);
      assert.deepEqual(err.details, { expectedVersion: 1, actualVersion: 2 });
      assert.deepEqual((await store.read())?.toJSON(), sampleMapJson('two', 2));
    });

    test('an expectedVersion ahead of the store is VERSION_CONFLICT, also on an empty store', async () => {
      const store = await open();
      assert.equal(await codeOf(store.write(sampleMap('x'), 1)), 'VERSION_CONFLICT');
      assert.equal(await store.read(), undefined);
      await store.write(sampleMap('y'), 0);
      assert.equal(await codeOf(store.write(sampleMap('z'), 7)), 'VERSION_CONFLICT');
      assert.deepEqual((await store.read())?.toJSON(), sampleMapJson('y', 1));
    });

    test('a malformed expectedVersion or map is rejected with a stable code and changes nothing', async () => {
      const store = await open();
      await store.write(sampleMap('keep'), 0);
      for (const bad of [-1, 1.5, NaN, Infinity, '1', null, undefined]) {
        assert.equal(await codeOf(store.write(sampleMap('bad'), bad as number)), 'INVALID_ARGUMENT', String(bad));
      }
      const overlapping = { ...sampleMapJson('bad'), ranges: [{ range: [0, 9], master: 'a' }, { range: [5, 15], master: 'b' }] };
      assert.equal(await codeOf(store.write(overlapping as unknown as ShardMap, 1)), 'INVALID_CONFIG');
      assert.deepEqual((await store.read())?.toJSON(), sampleMapJson('keep', 1));
    });

    test('concurrent writes with the same expectedVersion: exactly one wins', async () => {
      const store = await open();
      await store.write(sampleMap('base'), 0);
      const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => store.write(sampleMap(`c${i}`), 1)));
      const won = results.filter((r) => r.status === 'fulfilled');
      assert.equal(won.length, 1);
      for (const r of results) if (r.status === 'rejected') assert.equal((r.reason as ShardKitError).code, 'VERSION_CONFLICT');
      const winner = (won[0] as PromiseFulfilledResult<ShardMap>).value;
      assert.equal(winner.version, 2);
      assert.deepEqual((await store.read())?.toJSON(), winner.toJSON());
    });

    test('two instances on the same backing see each other\'s writes and conflict on stale versions', async () => {
      const a = await open();
      const b = await open();
      await a.write(sampleMap('from-a'), 0);
      assert.deepEqual((await b.read())?.toJSON(), sampleMapJson('from-a', 1));
      await b.write(sampleMap('from-b'), 1);
      assert.deepEqual((await a.read())?.toJSON(), sampleMapJson('from-b', 2));
      assert.equal(await codeOf(a.write(sampleMap('stale-a'), 1)), 'VERSION_CONFLICT');
      assert.equal((await b.read())?.version, 2);
    });

    test('two instances racing read-modify-write lose no update', async () => {
      const a = await open();
      const b = await open();
      const [wa, wb] = await Promise.all([raceIncrements(a, 15, 'a'), raceIncrements(b, 15, 'b')]);
      const all = [...wa, ...wb].sort((x, y) => x - y);
      assert.deepEqual(all, Array.from({ length: 30 }, (_, i) => i + 1));
      assert.equal((await a.read())?.version, 30);
    });

    test('watch hears later writes in version order, not the map current when it subscribed', async () => {
      const store = await open();
      await store.write(sampleMap('before'), 0);
      const rec = new Recorder();
      const stop = store.watch(rec.listener);
      await store.write(sampleMap('after1'), 1);
      await store.write(sampleMap('after2'), 2);
      await rec.until(3);
      stop();
      assert.ok(!rec.versions.includes(1), `saw the pre-subscription map: ${JSON.stringify(rec.versions)}`);
      assertIncreasing(rec.versions, 'watch');
      assert.deepEqual(rec.maps.at(-1)?.toJSON(), sampleMapJson('after2', 3));
    });

    test('watch on one instance hears writes made through another instance', async () => {
      const a = await open();
      const b = await open();
      const rec = new Recorder();
      a.watch(rec.listener);
      await b.write(sampleMap('via-b'), 0);
      await rec.until(1, 'watch on a');
      assert.deepEqual(rec.maps.at(-1)?.toJSON(), sampleMapJson('via-b', 1));
      await b.write(sampleMap('via-b2'), 1);
      await rec.until(2, 'watch on a');
      assertIncreasing(rec.versions, 'watch on a');
    });

    test('rapid writes from two instances: every watcher sees strictly increasing versions ending at the latest', async () => {
      const a = await open();
      const b = await open();
      const ra = new Recorder();
      const rb = new Recorder();
      a.watch(ra.listener);
      b.watch(rb.listener);
      await Promise.all([raceIncrements(a, 20, 'a'), raceIncrements(b, 20, 'b')]);
      await ra.until(40, 'watch on a');
      await rb.until(40, 'watch on b');
      assertIncreasing(ra.versions, 'watch on a');
      assertIncreasing(rb.versions, 'watch on b');
      assert.equal(ra.maps.at(-1)?.version, 40);
      assert.deepEqual(ra.maps.at(-1)?.toJSON(), (await a.read())?.toJSON());
    });

    test('a listener that writes from its callback cannot make another listener see versions out of order', async () => {
      const store = await open();
      const first = new Recorder();
      const second = new Recorder();
      let chained = false;
      store.watch((map) => {
        first.listener(map);
        if (!chained) {
          chained = true;
          void store.write(sampleMap('chained'), map.version);
        }
      });
      store.watch(second.listener);
      await store.write(sampleMap('start'), 0);
      await first.until(2);
      await second.until(2);
      assertIncreasing(first.versions, 'first listener');
      assertIncreasing(second.versions, 'second listener');
    });

    test('a listener that throws does not fail the write or starve other listeners', async () => {
      const store = await open();
      const rec = new Recorder();
      store.watch(() => {
        throw new Error('listener bug');
      });
      store.watch(rec.listener);
      const stored = await store.write(sampleMap('t'), 0);
      assert.equal(stored.version, 1);
      await rec.until(1);
    });

    test('unsubscribing stops delivery to that listener only', async () => {
      const store = await open();
      const gone = new Recorder();
      const kept = new Recorder();
      const stop = store.watch(gone.listener);
      store.watch(kept.listener);
      await store.write(sampleMap('one'), 0);
      await gone.until(1);
      await kept.until(1);
      stop();
      stop();
      await store.write(sampleMap('two'), 1);
      await store.write(sampleMap('three'), 2);
      await kept.until(3);
      assert.deepEqual(gone.versions, [1]);
    });

    test('after close: read, write and watch fail with CLOSED; close twice is fine; other instances go on', async () => {
      const a = await open();
      const b = await open();
      await a.write(sampleMap('x'), 0);
      const rec = new Recorder();
      a.watch(rec.listener);
      await a.close();
      await a.close();
      assert.equal(await codeOf(a.read()), 'CLOSED');
      assert.equal(await codeOf(a.write(sampleMap('y'), 1)), 'CLOSED');
      assert.equal(await codeOf(() => a.watch(() => {})), 'CLOSED');
      const stored = await b.write(sampleMap('z'), 1);
      assert.equal(stored.version, 2);
      assert.deepEqual((await b.read())?.toJSON(), sampleMapJson('z', 2));
      assert.ok(!rec.versions.includes(2), 'a closed store delivered a change');
    });

    if (supports.otherProcess) describe('another process on the same backing', () => {
      const spawn = (): Promise<RemoteTopologyWriter> => {
        assert.ok(fixture.spawnWriter, `${name} declares supports.otherProcess but its fixture has no spawnWriter`);
        return fixture.spawnWriter();
      };

      test('its write is seen by read and by watch', async () => {
        const store = await open();
        const rec = new Recorder();
        store.watch(rec.listener);
        const writer = await spawn();
        try {
          assert.deepEqual(await writer.write(sampleMapJson('remote'), 0), { ok: true, version: 1 });
          await rec.until(1, 'watch of a write by another process');
          assert.deepEqual(rec.maps.at(-1)?.toJSON(), sampleMapJson('remote', 1));
          assert.deepEqual((await store.read())?.toJSON(), sampleMapJson('remote', 1));
          await store.write(sampleMap('local'), 1);
          const stale = await writer.write(sampleMapJson('remote-stale'), 1);
          assert.equal(stale.ok, false);
          assert.equal((stale as { code: string }).code, 'VERSION_CONFLICT');
          assert.deepEqual((await store.read())?.toJSON(), sampleMapJson('local', 2));
        } finally {
          await writer.close();
        }
      });

      test('processes racing read-modify-write lose no update (CAS holds across processes)', async () => {
        const store = await open();
        const rec = new Recorder();
        store.watch(rec.listener);
        const writers = await Promise.all([spawn(), spawn()]);
        try {
          const rounds = 12;
          const results = await Promise.all([...writers.map((w, i) => w.race(rounds, `p${i}`)), raceIncrements(store, rounds, 'local')]);
          const all = results.flat().sort((x, y) => x - y);
          const total = rounds * results.length;
          assert.deepEqual(all, Array.from({ length: total }, (_, i) => i + 1), 'each version won exactly once');
          assert.equal((await store.read())?.version, total);
          await rec.until(total, 'watch during the race');
          assertIncreasing(rec.versions, 'watch during the race');
        } finally {
          await Promise.all(writers.map((w) => w.close()));
        }
      });
    });
  });
}
