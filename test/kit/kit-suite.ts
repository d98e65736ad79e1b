/**
 * The ShardKit-level suite: objects, mappings, joins, lookups, caches and bad input, run as one
 * suite on every backend (kit-sqlite/kit-mariadb/kit-postgres.test.ts, one server set per file).
 * Cases never assume empty shards (the servers are shared by the file's tests) and never ask
 * which database they talk to.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryCache } from '../../src/cache/index.js';
import { isShardKitError, type ErrorCode } from '../../src/errors.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import type { ShardKit } from '../../src/kit/shard-kit.js';
import { buildApp } from '../../src/http/app.js';
import { HOSTILE_STRINGS } from '../conformance/storage-suite.js';
import { OBJECT_SHARDS, HOST_A, HOST_B, type KitTarget } from './kit-targets.js';

async function expectCode(p: Promise<unknown>, code: ErrorCode): Promise<void> {
  await assert.rejects(p, (err) => {
    assert.ok(isShardKitError(err), `expected ShardKitError ${code}, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return true;
  });
}

export function runKitSuite(name: string, start: () => Promise<KitTarget>): void {
  describe(`ShardKit on ${name}`, () => {
    let target: KitTarget;
    before(async () => {
      target = await start();
    });
    after(async () => {
      await target?.stop();
    });

    /** A fresh kit for one case, closed (with its backend) afterwards. */
    async function withKit(fn: (kit: ShardKit) => Promise<void>, options: { cache?: MemoryCache } = {}): Promise<void> {
      const kit = await target.open(options);
      try {
        await fn(kit);
      } finally {
        await kit.close();
      }
    }

    test('objects: create composes the ID; get, getMany in request order; createdAt round-trips', () => withKit(async (kit) => {
      const pin = await kit.objects.create('pin', { details: 'New Star Wars character', link: 'http://webpage.com/asdf' }, { shard: 2 });
      const d = pinterestId.decode(pin.id);
      assert.deepEqual([d.shard, d.type], [2, 1]);
      assert.ok(d.localId > 0);
      const got = await kit.objects.get(pin.id.toString());
      assert.deepEqual(got.data, { details: 'New Star Wars character', link: 'http://webpage.com/asdf' });
      assert.equal(got.createdAt.getTime(), pin.createdAt.getTime());
      assert.equal(got.etag, pin.etag);
      const board = await kit.objects.create('board', { name: 'b' }, { near: pin.id });
      assert.equal(board.shard, 2);
      const missing = pinterestId.encode({ shard: 2, type: 1, localId: d.localId + 1_000_000 });
      const many = await kit.objects.getMany([board.id, missing, pin.id]);
      assert.deepEqual(many.map((o) => o?.type), ['board', undefined, 'pin']);
    }));

    test('createMany: objects of one shard in one transaction, every shard, request order; bad items write nothing', () => withKit(async (kit) => {
      const board = await kit.objects.create('board', { name: 'batch' }, { shard: 1 });
      const items = [
        { data: { n: 0 }, shard: 2 },
        { data: { n: 1 }, near: board.id.toString() },
        { data: { n: 2 }, shard: 2 },
        { data: { n: 3 }, shard: 0 },
        { data: { n: 4 }, shard: 3 },
      ];
      const made = await kit.objects.createMany('pin', items);
      assert.deepEqual(made.map((o) => o.data), items.map((i) => i.data));
      assert.deepEqual([made[0]!.shard, made[1]!.shard, made[2]!.shard, made[4]!.shard], [2, 1, 2, 3]);
      assert.equal(new Set(made.map((o) => o.id)).size, 5);
      const read = await kit.objects.getMany(made.map((o) => o.id));
      assert.deepEqual(read.map((o) => o?.data), items.map((i) => i.data));
      // Checked before anything is written: a bad item anywhere rejects the whole call.
      const before = await kit.objects.createMany('pin', [{ data: { probe: true }, shard: 2 }]);
      const next = pinterestId.decode(before[0]!.id).localId;
      await expectCode(kit.objects.createMany('pin', [{ data: { ok: 1 }, shard: 2 }, { data: { bad: 1 }, near: 'x' }]), 'INVALID_ID');
      await expectCode(kit.objects.createMany('pin', [{ data: { ok: 1 }, shard: 2 }, { data: { bad: 1 }, shard: 99999 }]), 'INVALID_ARGUMENT');
      await expectCode(kit.objects.createMany('nope', [{ data: {} }]), 'UNKNOWN_TYPE');
      await expectCode(kit.objects.createMany('pin', Array.from({ length: 1001 }, () => ({ data: {} }))), 'INVALID_ARGUMENT');
      await expectCode(kit.objects.createMany('pin', [{ data: [] as unknown as Record<string, never> }]), 'INVALID_ARGUMENT');
      const after = await kit.objects.create('pin', { after: true }, { shard: 2 });
      assert.ok(pinterestId.decode(after.id).localId > next);
      const onShard2 = await kit.objects.getMany(Array.from({ length: pinterestId.decode(after.id).localId - next - 1 }, (_, k) => pinterestId.encode({ shard: 2, type: 1, localId: next + 1 + k })));
      assert.deepEqual(onShard2.filter((o) => o !== undefined && (o.data as { ok?: number; bad?: number }).ok !== undefined), [], 'nothing of the refused calls was written');
      assert.deepEqual(await kit.objects.createMany('pin', []), []);
    }));

    test('IDs above 2^53 round-trip exactly: objects, getMany, update, mappings, lookups', () => withKit(async (kit) => {
      const big = OBJECT_SHARDS[HOST_B];
      const board = await kit.objects.create('board', { name: 'big' }, { shard: big[0]! });
      const pins = [];
      for (const shard of big) pins.push(await kit.objects.create('pin', { shard }, { shard }));
      for (const o of [board, ...pins]) assert.ok(o.id > 2n ** 53n && BigInt(Number(o.id)) !== o.id, String(o.id));
      assert.deepEqual((await kit.objects.getMany(pins.map((p) => p.id.toString()))).map((o) => o?.id), pins.map((p) => p.id));
      assert.equal((await kit.objects.update(pins[3]!.id, (x) => ({ ...x, u: 1 }))).data.u, 1);
      for (const [i, p] of pins.entries()) await kit.mappings.add('board_has_pins', board.id, p.id, { sequence: i });
      assert.deepEqual((await kit.mappings.list('board_has_pins', board.id, { order: 'asc' })).items.map((it) => it.id), pins.map((p) => p.id));
      const key = `big-${board.id}`;
      await kit.lookups.put('ip', key, pins[2]!.id);
      assert.equal(await kit.lookups.get('ip', key), pins[2]!.id);
    }));

    test('update is read-modify-write: 50 concurrent increments give exactly 50; undefined keeps the object; ifMatch guards', () => withKit(async (kit) => {
      const pin = await kit.objects.create('pin', { count: 0 });
      await Promise.all(Array.from({ length: 50 }, () => kit.objects.update(pin.id, (x) => ({ ...x, count: (x.count as number) + 1 }))));
      const now = await kit.objects.get(pin.id);
      assert.equal(now.data.count, 50);
      assert.equal((await kit.objects.update(pin.id, () => undefined)).etag, now.etag);
      await expectCode(kit.objects.update(pin.id, (x) => ({ ...x, count: 0 }), { ifMatch: pin.etag }), 'PRECONDITION_FAILED');
      assert.equal((await kit.objects.update(pin.id, (x) => ({ ...x, count: 0 }), { ifMatch: now.etag })).data.count, 0);
    }));

    test('soft delete hides the object; hard delete removes the row; local ids are never reused', () => withKit(async (kit) => {
      const board = await kit.objects.create('board', {});
      const a = await kit.objects.create('pin', { n: 1 }, { near: board.id });
      const b = await kit.objects.create('pin', { n: 2 }, { near: board.id });
      await kit.objects.delete(a.id);
      await expectCode(kit.objects.get(a.id), 'NOT_FOUND');
      await kit.objects.delete(b.id, { hard: true });
      await expectCode(kit.objects.get(b.id), 'NOT_FOUND');
      await expectCode(kit.objects.delete(b.id, { hard: true }), 'NOT_FOUND');
      const c = await kit.objects.create('pin', {}, { near: board.id });
      assert.ok(pinterestId.decode(c.id).localId > pinterestId.decode(b.id).localId);
      assert.deepEqual((await kit.objects.getMany([a.id, b.id, c.id])).map((o) => o?.id), [undefined, undefined, c.id]);
    }));

    test('mappings: add/list/count/remove; the same pair again moves it; cursors walk both orders once with ties', () => withKit(async (kit) => {
      const board = await kit.objects.create('board', {});
      const pins = [];
      for (let i = 0; i < 7; i++) pins.push(await kit.objects.create('pin', { i }, { shard: i % 4 }));
      for (const [i, p] of pins.entries()) await kit.mappings.add('board_has_pins', board.id, p.id, { sequence: 1000 + (i % 3) });
      await kit.mappings.add('board_has_pins', board.id, pins[0]!.id, { sequence: 999 });
      assert.equal(await kit.mappings.count('board_has_pins', board.id), 7);
      const key = (id: bigint, seq: number) => [seq, id] as const;
      const expected = pins.map((p, i) => key(p.id, i === 0 ? 999 : 1000 + (i % 3)))
        .sort((x, y) => x[0] - y[0] || (x[1] < y[1] ? -1 : 1)).map((x) => x[1]);
      for (const order of ['asc', 'desc'] as const) {
        const seen: bigint[] = [];
        let cursor: string | null = null;
        do {
          const page = await kit.mappings.list('board_has_pins', board.id, { limit: 2, order, cursor });
          seen.push(...page.items.map((it) => it.id));
          cursor = page.next;
        } while (cursor !== null);
        assert.deepEqual(seen, order === 'asc' ? expected : [...expected].reverse(), order);
      }
      assert.equal(await kit.mappings.remove('board_has_pins', board.id, pins[4]!.id), true);
      assert.equal(await kit.mappings.remove('board_has_pins', board.id, pins[4]!.id), false);
      assert.equal(await kit.mappings.count('board_has_pins', board.id), 6);
    }));

    test('join: a page of the mapping, then the objects across shards, skipping deleted ones', () => withKit(async (kit) => {
      const board = await kit.objects.create('board', {});
      const pins = [];
      for (let i = 0; i < 4; i++) pins.push(await kit.objects.create('pin', { i }, { shard: OBJECT_SHARDS.HOSTA[i]! }));
      pins.push(await kit.objects.create('pin', { i: 4 }, { shard: OBJECT_SHARDS[HOST_B][1]! }));
      for (const [i, p] of pins.entries()) await kit.mappings.add('board_has_pins', board.id, p.id, { sequence: i });
      await kit.objects.delete(pins[1]!.id);
      const first = await kit.join('board_has_pins', board.id, { order: 'asc', limit: 3 });
      assert.deepEqual(first.objects.map((o) => o.data.i), [0, 2]);
      const second = await kit.join('board_has_pins', board.id, { order: 'asc', limit: 3, cursor: first.next });
      assert.deepEqual(second.objects.map((o) => o.data.i), [3, 4]);
      assert.equal(second.next, null);
    }));

    test('lookups: put overwrites, get is exact (case, hostile keys), delete reports whether the key existed', () => withKit(async (kit) => {
      const user = await kit.objects.create('user', {});
      const other = await kit.objects.create('user', {});
      const suffix = `@${user.id}.example`;
      await kit.lookups.put('email', `ann${suffix}`, user.id);
      await kit.lookups.put('email', `ann${suffix}`, other.id);
      assert.equal(await kit.lookups.get('email', `ann${suffix}`), other.id);
      assert.equal(await kit.lookups.get('email', `ANN${suffix}`), undefined);
      const keys = HOSTILE_STRINGS.filter((k) => Buffer.byteLength(k) < 900);
      for (const [i, k] of keys.entries()) await kit.lookups.put('username', `${k}${suffix}`, i % 2 ? user.id : other.id);
      for (const [i, k] of keys.entries()) assert.equal(await kit.lookups.get('username', `${k}${suffix}`), i % 2 ? user.id : other.id, JSON.stringify(k));
      assert.equal(await kit.lookups.delete('email', `ann${suffix}`), true);
      assert.equal(await kit.lookups.delete('email', `ann${suffix}`), false);
      assert.equal(await kit.lookups.get('email', `ann${suffix}`), undefined);
    }));

    test('hostile JSON is stored and read back verbatim', () => withKit(async (kit) => {
      const data: Record<string, string> = {};
      HOSTILE_STRINGS.forEach((s, i) => {
        data[s] = s;
        data[`k${i}`] = s;
      });
      const obj = await kit.objects.create('user', data);
      assert.deepEqual((await kit.objects.get(obj.id)).data, data);
      const updated = await kit.objects.update(obj.id, (x) => ({ ...x, "'; DROP TABLE users; --": 'a\u0000b\\' }));
      assert.equal((await kit.objects.get(obj.id)).data["'; DROP TABLE users; --"], 'a\u0000b\\');
      assert.equal(updated.etag, (await kit.objects.get(obj.id)).etag);
    }));

    test('a cache reads through and every write invalidates what it changed', async () => {
      const cache = new MemoryCache();
      await withKit(async (kit) => {
        const board = await kit.objects.create('board', { v: 1 });
        const pin = await kit.objects.create('pin', {}, { near: board.id });
        assert.equal((await kit.objects.get(board.id)).data.v, 1);
        await kit.objects.update(board.id, () => ({ v: 2 }));
        assert.equal((await kit.objects.get(board.id)).data.v, 2);
        assert.equal((await kit.mappings.list('board_has_pins', board.id)).items.length, 0);
        await kit.mappings.add('board_has_pins', board.id, pin.id);
        assert.deepEqual((await kit.mappings.list('board_has_pins', board.id)).items.map((it) => it.id), [pin.id]);
        assert.equal(await kit.mappings.count('board_has_pins', board.id), 1);
        await kit.mappings.remove('board_has_pins', board.id, pin.id);
        assert.equal(await kit.mappings.count('board_has_pins', board.id), 0);
        await kit.objects.delete(board.id);
        await expectCode(kit.objects.get(board.id), 'NOT_FOUND');
      }, { cache });
    });

    test('/metrics: storage latency per host and kind, and each host\'s pool (in use, idle, waiting) after real calls', () => withKit(async (kit) => {
      const app = await buildApp({ kit, dashboard: false });
      try {
        const pin = await kit.objects.create('pin', { n: 1 }, { shard: 1 });
        await kit.objects.get(pin.id);
        await kit.objects.update(pin.id, (d) => ({ ...d, n: 2 }));
        const res = await app.inject({ method: 'GET', url: '/metrics' });
        assert.equal(res.statusCode, 200);
        const series = (name: string, labels: string) => res.body.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
        const value = (name: string, labels: string) => Number(series(name, labels)?.split(' ').pop());
        if (!target.serverPools) {
          // An embedded backend has no host pools: no storage series at all.
          assert.doesNotMatch(res.body, /^shardkit_storage_\w+\{/m);
          return;
        }
        for (const op of ['read', 'write', 'batch']) {
          assert.ok(value('shardkit_storage_duration_seconds_count', `host="${HOST_A}",op="${op}"`) >= 1, `${op} on ${HOST_A}: ${series('shardkit_storage_duration_seconds_count', `host="${HOST_A}",op="${op}"`)}`);
          assert.equal(value('shardkit_storage_duration_seconds_bucket', `le="+Inf",host="${HOST_A}",op="${op}"`), value('shardkit_storage_duration_seconds_count', `host="${HOST_A}",op="${op}"`));
        }
        assert.equal(value('shardkit_storage_pool_connections_in_use', `host="${HOST_A}"`), 0, 'every connection given back');
        assert.ok(value('shardkit_storage_pool_connections_idle', `host="${HOST_A}"`) >= 1);
        assert.equal(value('shardkit_storage_pool_waiting', `host="${HOST_A}"`), 0);
        // Calls issued together, none answered yet: each one is checked out or waiting for a connection.
        const reads = Array.from({ length: 12 }, () => kit.objects.get(pin.id));
        const during = kit.storageMetrics().find((h) => h.host === HOST_A)!.pool;
        assert.equal(during.inUse + during.waiting, reads.length, JSON.stringify(during));
        await Promise.all(reads);
        assert.equal(kit.storageMetrics().find((h) => h.host === HOST_A)!.pool.inUse, 0);
      } finally {
        await app.close();
      }
    }));

    test('bad IDs, names and arguments get stable codes and write nothing', () => withKit(async (kit) => {
      const pin = await kit.objects.create('pin', { a: 1 }, { shard: 3 });
      const board = await kit.objects.create('board', {}, { shard: 3 });
      const before = await target.snapshot();
      const badIds: Array<[unknown, ErrorCode]> = [
        ['abc', 'INVALID_ID'], ['-1', 'INVALID_ID'], ['', 'INVALID_ID'], ['18446744073709551616', 'INVALID_ID'], [String(1n << 63n), 'INVALID_ID'], [12, 'INVALID_ID'],
        [pinterestId.encode({ shard: 3, type: 999, localId: 1 }), 'UNKNOWN_TYPE'],
        [pinterestId.encode({ shard: 60000, type: 1, localId: 1 }), 'UNKNOWN_SHARD'],
      ];
      for (const [id, code] of badIds) {
        await expectCode(kit.objects.get(id as string), code);
        await expectCode(kit.objects.update(id as string, (d) => d), code);
        await expectCode(kit.objects.delete(id as string, { hard: true }), code);
        await expectCode(kit.objects.create('pin', {}, { near: id as string }), code);
        await expectCode(kit.objects.getMany([pin.id, id as string]), code);
        await expectCode(kit.mappings.add('board_has_pins', id as string, pin.id), code);
        await expectCode(kit.lookups.put('email', 'a@b', id as string), code);
      }
      await expectCode(kit.objects.create('pinz', {}), 'UNKNOWN_TYPE');
      for (const data of [null, [], 'x', 5, { n: 1n }]) await expectCode(kit.objects.create('pin', data as never), 'INVALID_ARGUMENT');
      for (const shard of [-1, 1.5, 70000]) await expectCode(kit.objects.create('pin', {}, { shard }), 'INVALID_ARGUMENT');
      await expectCode(kit.mappings.add('no_such_mapping', board.id, pin.id), 'UNKNOWN_MAPPING');
      // Ends of the wrong type: board_has_pins goes from a board to a pin.
      await expectCode(kit.mappings.add('board_has_pins', pin.id, board.id), 'INVALID_ARGUMENT');
      await expectCode(kit.mappings.list('board_has_pins', board.id, { cursor: 'garbage' }), 'INVALID_ARGUMENT');
      await expectCode(kit.lookups.put('nokeyspace', 'k', pin.id), 'UNKNOWN_KEYSPACE');
      await expectCode(kit.lookups.put('email', '', pin.id), 'INVALID_ARGUMENT');
      await expectCode(kit.lookups.put('email', 'x'.repeat(1025), pin.id), 'INVALID_ARGUMENT');
      assert.equal(await target.snapshot(), before);
      assert.deepEqual((await kit.objects.get(pin.id)).data, { a: 1 });
      // The digest does see a write (else the check above would prove nothing).
      await kit.lookups.put('email', `seen@${pin.id}`, pin.id);
      assert.notEqual(await target.snapshot(), before);
    }));
  });
}
