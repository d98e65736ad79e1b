/**
 * What a ShardKit with a cache must do, run once per cache kind (memory, Redis, memcached):
 * fresh reads after every kind of write, request order in getMany, fresh mapping lists and
 * counts, no stale fill after a concurrent invalidation, and reads and writes that go on when
 * the cache fails.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Cache } from '../../src/cache/index.js';
import { isShardKitError } from '../../src/errors.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { makeCachedKit, type CachedKitFixture } from './cached-kit.js';

export interface KitCacheCasesOptions {
  name: string;
  open(): Cache | Promise<Cache>;
  /** Makes every call of `cache` fail from now on (stops its server, or closes it). */
  breakCache(cache: Cache): Promise<void>;
  /** Undoes breakCache for the next tests (restarts the server). */
  repairCache?(): Promise<void>;
}

async function isNotFound(p: Promise<unknown>): Promise<void> {
  await assert.rejects(p, (err) => isShardKitError(err, 'NOT_FOUND'));
}

export function runKitCacheCases({ name, open, breakCache, repairCache }: KitCacheCasesOptions): void {
  describe(`ShardKit with a ${name} cache`, () => {
    async function withKit(fn: (f: CachedKitFixture, cache: Cache, keyPrefix: string) => Promise<void>, options: { ttlSeconds?: number } = {}): Promise<void> {
      const cache = await open();
      // Every test gets its own keys: SQLite dirs are new per test, so IDs repeat.
      const keyPrefix = `t${randomUUID().slice(0, 8)}:`;
      const f = makeCachedKit(cache, { keyPrefix, ...options });
      try {
        await fn(f, cache, keyPrefix);
      } finally {
        await f.cleanup();
        await cache.close();
      }
    }

    test('a get is served from the cache once filled (a write that bypasses the cache is not seen)', () => withKit(async ({ kit, plain }) => {
      const pin = await kit.objects.create('pin', { v: 1 }, { shard: 3 });
      assert.deepEqual((await kit.objects.get(pin.id)).data, { v: 1 });
      assert.deepEqual(kit.cacheStats(), { hits: 0, misses: 1, errors: 0, fills: 1, skippedFills: 0, invalidations: 0 });
      await plain.objects.update(pin.id, () => ({ v: 2 }));
      const cached = await kit.objects.get(pin.id);
      assert.deepEqual(cached.data, { v: 1 }, 'second read came from the cache');
      assert.equal(cached.createdAt.getTime(), pin.createdAt.getTime());
      assert.equal(cached.etag, pin.etag);
      assert.equal(cached.toWireJson(), pin.toWireJson());
      assert.equal(kit.cacheStats()!.hits, 1);
    }));

    test('reads after update, patch, soft delete and hard delete show the new state', () => withKit(async ({ kit }) => {
      const a = await kit.objects.create('pin', { v: 1, keep: 'x' }, { shard: 1 });
      const b = await kit.objects.create('pin', { v: 1 }, { shard: 2 });
      await kit.objects.get(a.id);
      await kit.objects.getMany([a.id, b.id]);

      await kit.objects.update(a.id, (d) => ({ ...d, v: 2 }));
      assert.deepEqual((await kit.objects.get(a.id)).data, { v: 2, keep: 'x' }, 'after update');

      await kit.objects.patch(a.id, { v: 3, keep: null });
      assert.deepEqual((await kit.objects.get(a.id)).data, { v: 3 }, 'after patch');
      assert.deepEqual((await kit.objects.getMany([a.id]))[0]?.data, { v: 3 }, 'getMany after patch');

      await kit.objects.delete(a.id);
      await isNotFound(kit.objects.get(a.id));
      assert.deepEqual(await kit.objects.getMany([a.id]), [undefined], 'getMany after soft delete');

      await kit.objects.get(b.id);
      await kit.objects.delete(b.id, { hard: true });
      await isNotFound(kit.objects.get(b.id));
      assert.deepEqual(await kit.objects.getMany([b.id]), [undefined], 'getMany after hard delete');
      // Deleted objects are read from the backend every time, never cached as present.
      const before = kit.cacheStats()!;
      await isNotFound(kit.objects.get(b.id));
      assert.equal(kit.cacheStats()!.misses, before.misses + 1);
    }));

    test('an entry the kit could not have written (not JSON, not an object, a deleted object, a bad time) is a miss: the shard answers, and the entry is replaced', () => withKit(async ({ kit }, cache, keyPrefix) => {
      const pin = await kit.objects.create('pin', { v: 1 }, { shard: 3 });
      const key = `${keyPrefix}o:${pin.id}`;
      for (const bad of ['1\n{garbage', `${pin.createdAt.getTime()}\n{"v":9,"active":false}`, `${pin.createdAt.getTime()}\n[1,2]`, `${pin.createdAt.getTime()}\nnull`, `-5\n{"v":9}`, '{"v":9}']) {
        await cache.setMany([[key, bad]], 60);
        const got = await kit.objects.get(pin.id);
        assert.deepEqual(got.data, { v: 1 }, `read from the shard, not ${JSON.stringify(bad)}`);
        assert.equal(got.toWireJson(), pin.toWireJson());
        const [many] = await kit.objects.getMany([pin.id]);
        assert.deepEqual(many?.data, { v: 1 });
        const [left] = await cache.getMany([key]);
        assert.notEqual(left, bad, 'the miss filled the entry again');
      }
    }));

    test('getMany with hits, misses, unknown and repeated IDs keeps request order', () => withKit(async ({ kit }) => {
      const objs = [];
      for (let i = 0; i < 6; i++) objs.push(await kit.objects.create('pin', { i }, { shard: i * 2 }));
      // Fill the cache for 0, 2 and 4 only.
      await kit.objects.getMany([objs[0]!.id, objs[2]!.id, objs[4]!.id]);
      const missing = pinterestId.encode({ shard: 5, type: 1, localId: 999 });
      const stats0 = kit.cacheStats()!;
      const got = await kit.objects.getMany([objs[5]!.id, objs[0]!.id, missing, objs[4]!.id, objs[1]!.id, objs[0]!.id, objs[3]!.id, objs[2]!.id]);
      assert.deepEqual(got.map((o) => (o === undefined ? null : o.data.i)), [5, 0, null, 4, 1, 0, 3, 2]);
      const stats1 = kit.cacheStats()!;
      assert.equal(stats1.hits - stats0.hits, 4, 'objects 0, 4, 0, 2 were hits');
      assert.equal(stats1.misses - stats0.misses, 4, 'objects 5, missing, 1, 3 were misses');
      // What the misses read is now cached: all hits but the missing one.
      const again = await kit.objects.getMany([objs[3]!.id, missing, objs[5]!.id, objs[1]!.id]);
      assert.deepEqual(again.map((o) => (o === undefined ? null : o.data.i)), [3, null, 5, 1]);
      assert.equal(kit.cacheStats()!.hits - stats1.hits, 3);
    }));

    test('mapping lists and counts are cached, and fresh after add and remove', () => withKit(async ({ kit, plain }) => {
      const board = await kit.objects.create('board', { name: 'b' }, { shard: 4 });
      const pins = [];
      for (let i = 0; i < 5; i++) pins.push(await kit.objects.create('pin', { i }, { near: board.id }));
      for (let i = 0; i < 3; i++) await kit.mappings.add('board_has_pins', board.id, pins[i]!.id, { sequence: 10 + i });
      const ids = async (opts: { limit?: number; cursor?: string | null } = {}) => (await kit.mappings.list('board_has_pins', board.id, opts)).items.map((e) => e.id);
      assert.deepEqual(await ids(), [pins[2]!.id, pins[1]!.id, pins[0]!.id]);
      assert.equal(await kit.mappings.count('board_has_pins', board.id), 3);
      const first = await kit.mappings.list('board_has_pins', board.id, { limit: 2 });
      assert.deepEqual(await ids({ limit: 2, cursor: first.next }), [pins[0]!.id]);

      // A write that bypasses the cache is not seen: the lists come from the cache.
      await plain.mappings.add('board_has_pins', board.id, pins[4]!.id, { sequence: 1 });
      const hits = kit.cacheStats()!.hits;
      assert.deepEqual(await ids(), [pins[2]!.id, pins[1]!.id, pins[0]!.id]);
      assert.equal(await kit.mappings.count('board_has_pins', board.id), 3);
      assert.deepEqual(await ids({ limit: 2, cursor: first.next }), [pins[0]!.id]);
      assert.equal(kit.cacheStats()!.hits, hits + 3);

      await kit.mappings.add('board_has_pins', board.id, pins[3]!.id, { sequence: 20 });
      assert.deepEqual(await ids(), [pins[3]!.id, pins[2]!.id, pins[1]!.id, pins[0]!.id, pins[4]!.id], 'after add');
      assert.equal(await kit.mappings.count('board_has_pins', board.id), 5, 'count after add');
      assert.deepEqual(await ids({ limit: 2, cursor: first.next }), [pins[0]!.id, pins[4]!.id], 'second page after add');

      assert.equal(await kit.mappings.remove('board_has_pins', board.id, pins[2]!.id), true);
      assert.deepEqual(await ids(), [pins[3]!.id, pins[1]!.id, pins[0]!.id, pins[4]!.id], 'after remove');
      assert.equal(await kit.mappings.count('board_has_pins', board.id), 4, 'count after remove');

      // Another list (another from) is not invalidated by these writes, and the join reads through.
      const joined = await kit.join('board_has_pins', board.id, { limit: 2 });
      assert.deepEqual(joined.objects.map((o) => o.data.i), [3, 1]);
    }));

    test('a fill that races a write in this process is dropped (no stale entry)', () => withKit(async ({ kit, gate }) => {
      const pin = await kit.objects.create('pin', { v: 1 }, { shard: 6 });
      // The read misses, reads v1 from its shard, then waits while an update commits and invalidates.
      const held = gate.arm('getObjects');
      const reading = kit.objects.get(pin.id);
      await held.reached;
      await kit.objects.update(pin.id, () => ({ v: 2 }));
      held.release();
      assert.deepEqual((await reading).data, { v: 1 }, 'the racing read itself saw the old row');
      assert.deepEqual((await kit.objects.get(pin.id)).data, { v: 2 }, 'the old row was not put back in the cache');
      assert.equal(kit.cacheStats()!.skippedFills, 1);

      // The same through getMany (of an object not cached yet, so that it misses).
      const pin2 = await kit.objects.create('pin', { v: 1 }, { shard: 7 });
      const held2 = gate.arm('getObjects');
      const reading2 = kit.objects.getMany([pin2.id, pin.id]);
      await held2.reached;
      await kit.objects.patch(pin2.id, { v: 3 });
      held2.release();
      assert.deepEqual((await reading2).map((o) => o?.data.v), [1, 2]);
      assert.deepEqual((await kit.objects.getMany([pin2.id, pin.id])).map((o) => o?.data.v), [3, 2]);
      assert.equal(kit.cacheStats()!.skippedFills, 2);

      // And a mapping page read before an add.
      const board = await kit.objects.create('board', {}, { shard: 6 });
      await kit.mappings.add('board_has_pins', board.id, pin.id, { sequence: 1 });
      const other = await kit.objects.create('pin', {}, { shard: 6 });
      await kit.mappings.add('board_has_pins', board.id, other.id, { sequence: 2 });
      await kit.mappings.remove('board_has_pins', board.id, other.id);
      const held3 = gate.arm('listMappings');
      const listing = kit.mappings.list('board_has_pins', board.id);
      await held3.reached;
      await kit.mappings.add('board_has_pins', board.id, other.id, { sequence: 3 });
      held3.release();
      assert.equal((await listing).items.length, 1);
      assert.deepEqual((await kit.mappings.list('board_has_pins', board.id)).items.map((e) => e.id), [other.id, pin.id]);
    }));

    test('entries written around the cache are replaced after their TTL', () => withKit(async ({ kit, plain }) => {
      const pin = await kit.objects.create('pin', { v: 1 }, { shard: 7 });
      await kit.objects.get(pin.id);
      await plain.objects.update(pin.id, () => ({ v: 2 }));
      for (let i = 0; i < 100; i++) {
        if ((await kit.objects.get(pin.id)).data.v === 2) return;
        await sleep(200);
      }
      assert.fail('the stale entry outlived its 1-second TTL by 20 s');
    }, { ttlSeconds: 1 }));

    test('when the cache fails, reads and writes still succeed, cache-error events are emitted and errors counted', () => withKit(async ({ kit, cacheErrors }, cache) => {
      const pin = await kit.objects.create('pin', { v: 1 }, { shard: 8 });
      const board = await kit.objects.create('board', {}, { shard: 8 });
      await kit.objects.get(pin.id);
      await breakCache(cache);
      try {
        assert.deepEqual((await kit.objects.get(pin.id)).data, { v: 1 });
        assert.deepEqual((await kit.objects.getMany([pin.id, board.id])).map((o) => o?.type), ['pin', 'board']);
        assert.deepEqual((await kit.objects.update(pin.id, () => ({ v: 2 }))).data, { v: 2 });
        assert.deepEqual((await kit.objects.get(pin.id)).data, { v: 2 });
        await kit.objects.patch(pin.id, { v: 3 });
        await kit.mappings.add('board_has_pins', board.id, pin.id, { sequence: 1 });
        assert.equal((await kit.mappings.list('board_has_pins', board.id)).items.length, 1);
        assert.equal(await kit.mappings.count('board_has_pins', board.id), 1);
        assert.equal(await kit.mappings.remove('board_has_pins', board.id, pin.id), true);
        await kit.objects.delete(pin.id);
        await isNotFound(kit.objects.get(pin.id));
        const ops = new Set(cacheErrors.map((e) => e.op));
        assert.ok(ops.has('get') && ops.has('invalidate'), `saw ${[...ops].join(', ')}`);
        assert.ok(cacheErrors.every((e) => e.error instanceof Error));
        assert.equal(kit.cacheStats()!.errors, cacheErrors.length);
        assert.ok(kit.cacheStats()!.errors >= 10);
      } finally {
        await repairCache?.();
      }
    }));
  });
}
