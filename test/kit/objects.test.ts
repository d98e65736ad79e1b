import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { isShardKitError, type ErrorCode } from '../../src/errors.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import type { ShardBackend } from '../../src/storage/shard-backend.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { defaultShardMapJson, ShardMap } from '../../src/topology/shard-map.js';
import { makeKit, snapshot, testConfig, testSchema } from './kit-fixture.js';

async function expectCode(p: Promise<unknown>, code: ErrorCode): Promise<void> {
  await assert.rejects(p, (err) => {
    assert.ok(isShardKitError(err), `expected ShardKitError ${code}, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return true;
  });
}

test('create composes a Pinterest ID from shard, type and local id; get returns the object', async () => {
  const f = makeKit();
  try {
    const pin = await f.kit.objects.create('pin', { details: 'New Star Wars character', link: 'http://webpage.com/asdf' }, { shard: 13 });
    assert.deepEqual(pinterestId.decode(pin.id), { shard: 13, type: 1, localId: 1 });
    assert.equal(pin.type, 'pin');
    assert.equal(pin.shard, 13);
    const got = await f.kit.objects.get(pin.id);
    assert.deepEqual(got.data, { details: 'New Star Wars character', link: 'http://webpage.com/asdf' });
    assert.equal(got.etag, pin.etag);
    assert.equal(got.createdAt.getTime(), pin.createdAt.getTime());
    // The decimal string form is the same object.
    assert.deepEqual((await f.kit.objects.get(pin.id.toString())).data, got.data);
    // Shard 13 sits on the second host of the 16-shard, 2-pair map, in its own file.
    assert.ok(existsSync(join(f.root, 'MySQL002A', 'db00013.sqlite')));
    assert.deepEqual(JSON.parse(JSON.stringify(got)), { id: pin.id.toString(), type: 'pin', shard: 13, data: got.data, createdAt: got.createdAt.toISOString() });
    assert.deepEqual(JSON.parse(got.toWireJson()), JSON.parse(JSON.stringify(got)));
  } finally {
    await f.cleanup();
  }
});

test('IDs above 2^53 round-trip exactly through the library', async () => {
  const f = makeKit({ shardMap: ShardMap.fromJSON(defaultShardMapJson({ shards: 4096, pairs: 2 })) });
  try {
    const board = await f.kit.objects.create('board', { name: 'b' }, { shard: 3429 });
    assert.ok(board.id > 2n ** 53n);
    const pin = await f.kit.objects.create('pin', { board_id: board.id.toString() }, { near: board.id });
    await f.kit.mappings.add('board_has_pins', board.id, pin.id, { sequence: 1 });
    const page = await f.kit.mappings.list('board_has_pins', board.id.toString());
    assert.equal(page.items[0]!.id, pin.id);
    await f.kit.lookups.put('username', 'big', pin.id);
    assert.equal(await f.kit.lookups.get('username', 'big'), pin.id);
    assert.equal((await f.kit.objects.get(pin.id)).id, pin.id);
    assert.equal((await f.kit.objects.get(pin.id)).data.board_id, board.id.toString());
  } finally {
    await f.cleanup();
  }
});

test('placement: near puts an object on the related shard; default is a uniformly chosen open shard', async () => {
  let r = 0;
  const f = makeKit({ random: () => r });
  try {
    const board = await f.kit.objects.create('board', {}, { shard: 5 });
    const pin = await f.kit.objects.create('pin', {}, { near: board.id });
    assert.equal(pin.shard, 5);
    const shards = new Set<number>();
    for (let i = 0; i < 16; i++) {
      r = (i + 0.5) / 16;
      shards.add((await f.kit.objects.create('user', {})).shard);
    }
    assert.deepEqual([...shards].sort((a, b) => a - b), Array.from({ length: 16 }, (_, i) => i));
    await expectCode(f.kit.objects.create('pin', {}, { near: board.id, shard: 1 }), 'INVALID_ARGUMENT');
    await expectCode(f.kit.objects.create('pin', {}, { shard: 16 }), 'UNKNOWN_SHARD');
  } finally {
    await f.cleanup();
  }
});

test('closed ranges receive no new objects unless placed near an object there', async () => {
  const json = testConfig.shardMap;
  const map = ShardMap.fromJSON({ ...json, ranges: [{ ...json.ranges[0]!, open: false }, json.ranges[1]!] });
  const f = makeKit({ shardMap: map, random: () => 0 });
  try {
    const u = await f.kit.objects.create('user', {});
    assert.equal(u.shard, 8);
    await expectCode(f.kit.objects.create('user', {}, { shard: 2 }), 'SHARD_CLOSED');
  } finally {
    await f.cleanup();
  }
});

test('getMany: request order, missing and deleted left undefined, one backend call per shard', async () => {
  const f = makeKit();
  try {
    const a = await f.kit.objects.create('pin', { n: 'a' }, { shard: 1 });
    const b = await f.kit.objects.create('pin', { n: 'b' }, { shard: 9 });
    const c = await f.kit.objects.create('board', { n: 'c' }, { shard: 1 });
    const d = await f.kit.objects.create('pin', { n: 'd' }, { shard: 1 });
    await f.kit.objects.delete(d.id);
    const missing = pinterestId.encode({ shard: 9, type: 1, localId: 999 });
    const calls: number[] = [];
    const counting: ShardBackend = new Proxy(f.backend, {
      get(target, prop, receiver) {
        if (prop === 'getObjects') return (ref: { shard: number }, keys: unknown[]) => {
          calls.push(ref.shard);
          return target.getObjects(ref as never, keys as never);
        };
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const kit = new ShardKit({ backend: counting, schema: testSchema, shardMap: ShardMap.fromJSON(testConfig.shardMap) });
    const got = await kit.objects.getMany([b.id, a.id.toString(), missing, c.id, d.id, a.id]);
    assert.deepEqual(got.map((o) => o?.data.n), ['b', 'a', undefined, 'c', undefined, 'a']);
    assert.deepEqual(calls.sort(), [1, 9]);
    assert.deepEqual(await kit.objects.getMany([]), []);
    await expectCode(kit.objects.getMany([a.id, 'nope']), 'INVALID_ID');
  } finally {
    await f.cleanup();
  }
});

test('update: read-modify-write; undefined keeps the object; ifMatch guards against lost updates', async () => {
  const f = makeKit();
  try {
    const o = await f.kit.objects.create('pin', { likes: 0, title: 't' });
    const u = await f.kit.objects.update(o.id, (d) => ({ ...d, likes: (d.likes as number) + 1 }));
    assert.deepEqual(u.data, { likes: 1, title: 't' });
    assert.notEqual(u.etag, o.etag);
    const same = await f.kit.objects.update(o.id, () => undefined);
    assert.equal(same.etag, u.etag);
    await expectCode(f.kit.objects.update(o.id, (d) => d, { ifMatch: o.etag }), 'PRECONDITION_FAILED');
    const ok = await f.kit.objects.update(o.id, (d) => ({ ...d, title: 'x' }), { ifMatch: [o.etag, u.etag] });
    assert.equal(ok.data.title, 'x');
    await f.kit.objects.update(o.id, (d) => ({ ...d, any: true }), { ifMatch: '*' });
    const patched = await f.kit.objects.patch(o.id, { title: null, nested: { a: 1 } });
    assert.deepEqual(patched.data, { likes: 1, any: true, nested: { a: 1 } });
    const boom = new Error('caller bug');
    await assert.rejects(f.kit.objects.update(o.id, () => {
      throw boom;
    }), (e) => e === boom);
    await expectCode(f.kit.objects.update(o.id, (() => Promise.resolve({})) as never), 'INVALID_ARGUMENT');
    await expectCode(f.kit.objects.update(o.id, () => ({ active: false })), 'INVALID_ARGUMENT');
    assert.deepEqual((await f.kit.objects.get(o.id)).data, patched.data);
  } finally {
    await f.cleanup();
  }
});

test('ifNoneMatch: an etag it names, or \'*\' on a current object, refuses the update or delete; nothing changes', async () => {
  const f = makeKit();
  try {
    const o = await f.kit.objects.create('pin', { n: 1 });
    for (const ifNoneMatch of ['*', o.etag, ['other', o.etag]]) {
      await expectCode(f.kit.objects.update(o.id, () => ({ n: 2 }), { ifNoneMatch }), 'PRECONDITION_FAILED');
      await expectCode(f.kit.objects.delete(o.id, { ifNoneMatch }), 'PRECONDITION_FAILED');
      await expectCode(f.kit.objects.delete(o.id, { hard: true, ifNoneMatch }), 'PRECONDITION_FAILED');
    }
    assert.equal((await f.kit.objects.get(o.id)).etag, o.etag);
    const u = await f.kit.objects.update(o.id, () => ({ n: 2 }), { ifNoneMatch: 'other' });
    assert.deepEqual(u.data, { n: 2 });
    await f.kit.objects.delete(o.id, { ifNoneMatch: o.etag });
    await expectCode(f.kit.objects.get(o.id), 'NOT_FOUND');
    // A soft-deleted object has no current etag: '*' holds, and a hard delete purges its row.
    await f.kit.objects.delete(o.id, { hard: true, ifNoneMatch: '*' });
    await expectCode(f.kit.objects.delete(o.id, { hard: true }), 'NOT_FOUND');
  } finally {
    await f.cleanup();
  }
});

test('100 concurrent update increments give exactly 100', async () => {
  const f = makeKit();
  try {
    const o = await f.kit.objects.create('pin', { count: 0 });
    await Promise.all(Array.from({ length: 100 }, () => f.kit.objects.update(o.id, (d) => ({ ...d, count: (d.count as number) + 1 }))));
    assert.equal((await f.kit.objects.get(o.id)).data.count, 100);
  } finally {
    await f.cleanup();
  }
});

test('soft delete marks "active": false and every read treats the object as missing; hard delete removes the row', async () => {
  const f = makeKit();
  try {
    const o = await f.kit.objects.create('comment', { text: 'hi' }, { shard: 2 });
    await f.kit.objects.delete(o.id);
    await expectCode(f.kit.objects.get(o.id), 'NOT_FOUND');
    assert.deepEqual(await f.kit.objects.getMany([o.id]), [undefined]);
    await expectCode(f.kit.objects.update(o.id, (d) => d), 'NOT_FOUND');
    await expectCode(f.kit.objects.delete(o.id), 'NOT_FOUND');
    const [row] = await f.backend.getObjects({ host: 'MySQL001A', shard: 2, fleet: 'objects' }, [{ table: 'comments', localId: 1 }]);
    assert.deepEqual(JSON.parse(row!.data), { text: 'hi', active: false });
    await f.kit.objects.delete(o.id, { hard: true });
    assert.equal((await f.backend.getObjects({ host: 'MySQL001A', shard: 2, fleet: 'objects' }, [{ table: 'comments', localId: 1 }]))[0], undefined);
    await expectCode(f.kit.objects.delete(o.id, { hard: true }), 'NOT_FOUND');
    // The local id is not reused by the next object.
    const next = await f.kit.objects.create('comment', {}, { shard: 2 });
    assert.equal(pinterestId.decode(next.id).localId, 2);
  } finally {
    await f.cleanup();
  }
});

test('bad IDs and arguments get stable codes and write nothing', async () => {
  const f = makeKit();
  try {
    const pin = await f.kit.objects.create('pin', { a: 1 }, { shard: 3 });
    const before = snapshot(f.root);
    const badIds: Array<[unknown, ErrorCode]> = [
      ['abc', 'INVALID_ID'], ['-1', 'INVALID_ID'], ['', 'INVALID_ID'], ['1.5', 'INVALID_ID'], [' 1', 'INVALID_ID'],
      ['18446744073709551616', 'INVALID_ID'], [String(1n << 63n), 'INVALID_ID'], [-5n, 'INVALID_ID'], [12, 'INVALID_ID'], [null, 'INVALID_ID'],
      [pinterestId.encode({ shard: 3, type: 999, localId: 1 }), 'UNKNOWN_TYPE'],
      [pinterestId.encode({ shard: 60000, type: 1, localId: 1 }), 'UNKNOWN_SHARD'],
    ];
    for (const [id, code] of badIds) {
      await expectCode(f.kit.objects.get(id as string), code);
      await expectCode(f.kit.objects.update(id as string, (d) => d), code);
      await expectCode(f.kit.objects.delete(id as string), code);
      await expectCode(f.kit.objects.delete(id as string, { hard: true }), code);
      await expectCode(f.kit.objects.create('pin', {}, { near: id as string }), code);
      await expectCode(f.kit.objects.getMany([pin.id, id as string]), code);
      await expectCode(f.kit.mappings.add('board_has_pins', id as string, pin.id), code);
      await expectCode(f.kit.lookups.put('email', 'a@b', id as string), code);
    }
    await expectCode(f.kit.objects.create('pinz', {}), 'UNKNOWN_TYPE');
    for (const data of [null, [], 'x', 5, { active: false }, { n: 1n }]) await expectCode(f.kit.objects.create('pin', data as never), 'INVALID_ARGUMENT');
    for (const shard of [-1, 1.5, 'x', 70000]) await expectCode(f.kit.objects.create('pin', {}, { shard: shard as number }), 'INVALID_ARGUMENT');
    await expectCode(f.kit.objects.patch(pin.id, [] as never), 'INVALID_ARGUMENT');
    await expectCode(f.kit.objects.patch(pin.id, { active: false }), 'INVALID_ARGUMENT');
    assert.equal(snapshot(f.root), before);
    assert.deepEqual((await f.kit.objects.get(pin.id)).data, { a: 1 });
  } finally {
    await f.cleanup();
  }
});

test('new data and patches may nest 100 levels deep, not 101; numbers JSON cannot hold are refused; nothing is written', async () => {
  const f = makeKit();
  try {
    type Deep = { a?: Deep };
    const deep = (levels: number): Deep => (levels === 1 ? {} : { a: deep(levels - 1) });
    const depth = (d: Deep | undefined): number => (d === undefined ? 0 : 1 + depth(d.a));
    const ok = await f.kit.objects.create('pin', deep(100) as never);
    assert.equal(depth((await f.kit.objects.get(ok.id)).data as Deep), 100);
    const pin = await f.kit.objects.create('pin', { n: 1 });
    // A patch of 99 levels under one key makes data 100 deep: allowed.
    const patched = await f.kit.objects.patch(pin.id, { x: deep(99) } as never);
    assert.equal(depth((patched.data as { x: Deep }).x), 99);
    const before = snapshot(f.root);
    await expectCode(f.kit.objects.create('pin', deep(101) as never), 'INVALID_ARGUMENT');
    await expectCode(f.kit.objects.patch(pin.id, deep(101) as never), 'INVALID_ARGUMENT');
    await expectCode(f.kit.objects.patch(pin.id, { x: { a: deep(99) } } as never), 'INVALID_ARGUMENT');
    // A cycle is named as such (JSON.stringify's check runs before the depth walk).
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await assert.rejects(f.kit.objects.create('pin', cyclic as never), /not serializable as JSON: .*circular/i);
    // Nesting that overflows JSON.stringify's stack (as a request's JSON can: it parses 10,000
    // levels of arrays) is named as the depth limit, not as V8's stack message.
    const tower = JSON.parse(`{"x":${'['.repeat(10_000)}${']'.repeat(10_000)}}`) as never;
    await assert.rejects(f.kit.objects.create('pin', tower), (err: Error & { code?: string }) => err.code === 'INVALID_ARGUMENT' && err.message === 'data nests deeper than 100 levels');
    await assert.rejects(f.kit.objects.createMany('pin', [{ data: { ok: 1 } }, { data: tower }]), (err: Error & { code?: string }) => err.code === 'INVALID_ARGUMENT' && /nests deeper than 100 levels/.test(err.message));
    for (const n of [Infinity, -Infinity, NaN]) {
      await expectCode(f.kit.objects.create('pin', { n }), 'INVALID_ARGUMENT');
      await expectCode(f.kit.objects.update(pin.id, (d) => ({ ...d, n })), 'INVALID_ARGUMENT');
      await expectCode(f.kit.objects.patch(pin.id, { list: [1, [n]] }), 'INVALID_ARGUMENT');
    }
    assert.equal(snapshot(f.root), before, 'refused writes must not change the shard files');
    assert.deepEqual(Object.keys((await f.kit.objects.get(pin.id)).data).sort(), ['n', 'x']);
  } finally {
    await f.cleanup();
  }
});

test('an object stored deeper than 100 levels (before the limit existed) can still be updated and patched', async () => {
  const f = makeKit();
  try {
    type Deep = { a?: Deep };
    const deep = (levels: number): Deep => (levels === 1 ? {} : { a: deep(levels - 1) });
    const pin = await f.kit.objects.create('pin', { n: 1 });
    // Written as an older version would have: 150 levels, straight through the backend.
    const loc = pinterestId.decode(pin.id);
    await f.kit.backend.updateObject({ host: (await f.kit.shardMap()).locate(loc.shard).master, shard: loc.shard, fleet: 'objects' }, 'pins', loc.localId, () => JSON.stringify({ n: 1, old: deep(150) }));
    const patched = await f.kit.objects.patch(pin.id, { n: 2 });
    assert.equal((patched.data as { n: number }).n, 2);
    const updated = await f.kit.objects.update(pin.id, (d) => ({ ...d, n: 3 }));
    assert.equal((updated.data as { n: number }).n, 3);
    // Still refused there: numbers JSON cannot hold, and patches deeper than 100.
    await expectCode(f.kit.objects.update(pin.id, (d) => ({ ...d, n: Infinity })), 'INVALID_ARGUMENT');
    await expectCode(f.kit.objects.patch(pin.id, deep(101) as never), 'INVALID_ARGUMENT');
  } finally {
    await f.cleanup();
  }
});

test('an object over 8 MiB of JSON is PAYLOAD_TOO_LARGE on create, update and patch, and nothing changes; an update function returning null is INVALID_ARGUMENT', async () => {
  const f = makeKit();
  try {
    const big = 'x'.repeat(4 * 1024 * 1024);
    await expectCode(f.kit.objects.create('pin', { a: big, b: big, c: 'x' }), 'PAYLOAD_TOO_LARGE');
    // Multi-byte text counts in UTF-8 bytes: 3 MiB of "é" is 6 MiB, with two such fields 12 MiB.
    const accents = 'é'.repeat(3 * 1024 * 1024);
    await expectCode(f.kit.objects.create('pin', { a: accents, b: accents }), 'PAYLOAD_TOO_LARGE');
    const pin = await f.kit.objects.create('pin', { a: big }, { shard: 3 });
    await expectCode(f.kit.objects.patch(pin.id, { b: big, c: 'x' }), 'PAYLOAD_TOO_LARGE');
    await expectCode(f.kit.objects.update(pin.id, (d) => ({ ...d, b: big, c: 'x' })), 'PAYLOAD_TOO_LARGE');
    await expectCode(f.kit.objects.update(pin.id, () => null as unknown as undefined), 'INVALID_ARGUMENT');
    assert.deepEqual(Object.keys((await f.kit.objects.get(pin.id)).data), ['a']);
    // Just under the limit is fine.
    await f.kit.objects.patch(pin.id, { b: 'x'.repeat(4 * 1024 * 1024 - 100) });
  } finally {
    await f.cleanup();
  }
});
