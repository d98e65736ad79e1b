import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isShardKitError, type ErrorCode } from '../../src/errors.js';
import { decodeCursor, encodeCursor } from '../../src/kit/cursor-codec.js';
import type { MappingEntry } from '../../src/kit/types.js';
import { makeKit, snapshot } from './kit-fixture.js';

async function expectCode(p: Promise<unknown>, code: ErrorCode): Promise<void> {
  await assert.rejects(p, (err) => {
    assert.ok(isShardKitError(err), `expected ShardKitError ${code}, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return true;
  });
}

test('add/list/count/remove; the same pair again moves it instead of duplicating it', async () => {
  const f = makeKit();
  try {
    const board = await f.kit.objects.create('board', {}, { shard: 4 });
    const pins = [];
    for (let i = 0; i < 5; i++) pins.push(await f.kit.objects.create('pin', { i }, { shard: i * 3 }));
    for (const [i, p] of pins.entries()) await f.kit.mappings.add('board_has_pins', board.id, p.id, { sequence: 100 + i });
    await f.kit.mappings.add('board_has_pins', board.id, pins[0]!.id, { sequence: 500 });
    assert.equal(await f.kit.mappings.count('board_has_pins', board.id), 5);
    const page = await f.kit.mappings.list('board_has_pins', board.id);
    assert.deepEqual(page.items.map((x) => x.id), [pins[0]!.id, pins[4]!.id, pins[3]!.id, pins[2]!.id, pins[1]!.id]);
    assert.equal(page.next, null);
    assert.deepEqual((await f.kit.mappings.list('board_has_pins', board.id, { order: 'asc', limit: 2 })).items, [
      { id: pins[1]!.id, sequence: 101 },
      { id: pins[2]!.id, sequence: 102 },
    ]);
    assert.equal(await f.kit.mappings.remove('board_has_pins', board.id, pins[2]!.id), true);
    assert.equal(await f.kit.mappings.remove('board_has_pins', board.id, pins[2]!.id), false);
    assert.equal(await f.kit.mappings.count('board_has_pins', board.id), 4);
    // Stored on the shard of `from`, one direction only.
    assert.equal(await f.kit.mappings.count('pin_owned_by_board', pins[0]!.id), 0);
  } finally {
    await f.cleanup();
  }
});

test('the default sequence is the time of the add (newest first in the default order)', async () => {
  const f = makeKit();
  try {
    const u = await f.kit.objects.create('user', {});
    const before = Date.now();
    const p = await f.kit.objects.create('pin', {});
    await f.kit.mappings.add('user_likes_pins', u.id, p.id);
    const [item] = (await f.kit.mappings.list('user_likes_pins', u.id)).items;
    assert.ok(item!.sequence >= before && item!.sequence <= Date.now());
  } finally {
    await f.cleanup();
  }
});

test('keyset cursors walk the whole list once in both orders, with ties on sequence', async () => {
  const f = makeKit();
  try {
    const u = await f.kit.objects.create('user', {});
    const others = [];
    for (let i = 0; i < 37; i++) others.push(await f.kit.objects.create('user', {}, { shard: i % 16 }));
    for (const [i, o] of others.entries()) await f.kit.mappings.add('user_follows_user', u.id, o.id, { sequence: Math.floor(i / 5) });
    for (const order of ['asc', 'desc'] as const) {
      const full = (await f.kit.mappings.list('user_follows_user', u.id, { order, limit: 1000 })).items;
      assert.equal(full.length, 37);
      const seen: MappingEntry[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page = await f.kit.mappings.list('user_follows_user', u.id, { order, limit: 10, cursor });
        seen.push(...page.items);
        cursor = page.next;
        pages++;
      } while (cursor !== null);
      assert.equal(pages, 4);
      assert.deepEqual(seen, full);
      const sorted = [...full].sort((a, b) => a.sequence - b.sequence || (a.id < b.id ? -1 : 1));
      assert.deepEqual(full, order === 'asc' ? sorted : sorted.reverse());
    }
    // A page that ends exactly at the end of the list says so.
    const exact = await f.kit.mappings.list('user_follows_user', u.id, { limit: 37 });
    assert.equal(exact.next, null);
  } finally {
    await f.cleanup();
  }
});

test('join: a page of the mapping, then the objects, skipping deleted ones', async () => {
  const f = makeKit();
  try {
    const board = await f.kit.objects.create('board', {});
    const pins = [];
    for (let i = 0; i < 6; i++) {
      const p = await f.kit.objects.create('pin', { i }, { shard: (i * 5) % 16 });
      pins.push(p);
      await f.kit.mappings.add('board_has_pins', board.id, p.id, { sequence: i });
    }
    await f.kit.objects.delete(pins[4]!.id);
    const first = await f.kit.join('board_has_pins', board.id, { limit: 3 });
    assert.deepEqual(first.objects.map((o) => o.data.i), [5, 3]);
    const second = await f.kit.join('board_has_pins', board.id, { limit: 3, cursor: first.next });
    assert.deepEqual(second.objects.map((o) => o.data.i), [2, 1, 0]);
    assert.equal(second.next, null);
  } finally {
    await f.cleanup();
  }
});

test('cursors: garbage and cursors of the other order are INVALID_ARGUMENT', async () => {
  const f = makeKit();
  try {
    const u = await f.kit.objects.create('user', {});
    const list = { mapping: 'user_follows_user', from: u.id };
    const asc = encodeCursor({ sequence: 5, toId: 7n }, 'asc', list);
    assert.deepEqual(decodeCursor(asc, 'asc', list), { sequence: 5, toId: 7n });
    const neg = encodeCursor({ sequence: -5, toId: (1n << 63n) - 1n }, 'desc', list);
    assert.deepEqual(decodeCursor(neg, 'desc', list), { sequence: -5, toId: (1n << 63n) - 1n });
    const tampered = Buffer.from(asc, 'base64url');
    tampered[0] = 9;
    const huge = Buffer.from(asc, 'base64url');
    huge.writeBigUInt64BE(1n << 63n, 10);
    const bigSeq = Buffer.from(asc, 'base64url');
    bigSeq.writeBigInt64BE(1n << 60n, 2);
    const retagged = Buffer.from(asc, 'base64url');
    retagged.writeUInt32BE((retagged.readUInt32BE(18) ^ 1) >>> 0, 18);
    // A version 1 (untagged) cursor padded to the version 2 length, and a version 2 one cut to the old length.
    const v1Long = Buffer.from(asc, 'base64url');
    v1Long[0] = 1;
    const v2Short = Buffer.from(asc, 'base64url').subarray(0, 18);
    for (const cursor of ['', 'x', 'garbage!!', `${asc}A`, asc.slice(1), `${asc.slice(0, -1)}=`, 'A'.repeat(24), 'A'.repeat(30), tampered.toString('base64url'),
      huge.toString('base64url'), bigSeq.toString('base64url'), retagged.toString('base64url'), v1Long.toString('base64url'), v2Short.toString('base64url'),
      '////////////////////////', 5 as unknown as string]) {
      await expectCode(f.kit.mappings.list('user_follows_user', u.id, { order: 'asc', cursor }), 'INVALID_ARGUMENT');
    }
    await expectCode(f.kit.mappings.list('user_follows_user', u.id, { order: 'desc', cursor: asc }), 'INVALID_ARGUMENT');
  } finally {
    await f.cleanup();
  }
});

test('a cursor is bound to its list: another from ID or another mapping is INVALID_ARGUMENT, in list and join alike', async () => {
  const f = makeKit();
  try {
    const [a, b] = [await f.kit.objects.create('user', {}), await f.kit.objects.create('user', {})];
    const pins = [];
    for (let i = 0; i < 4; i++) pins.push(await f.kit.objects.create('pin', { i }));
    for (const [i, p] of pins.entries()) {
      await f.kit.mappings.add('user_likes_pins', a.id, p.id, { sequence: i });
      await f.kit.mappings.add('user_likes_pins', b.id, p.id, { sequence: i });
    }
    for (const [i, u] of [a, b].entries()) await f.kit.mappings.add('user_follows_user', a.id, u.id, { sequence: i + 10 });
    const first = await f.kit.mappings.list('user_likes_pins', a.id, { limit: 2 });
    assert.ok(first.next);
    // Its own list pages on; the same position in another list is refused, not served silently.
    assert.deepEqual((await f.kit.mappings.list('user_likes_pins', a.id, { limit: 2, cursor: first.next })).items.map((x) => x.sequence), [1, 0]);
    for (const [name, from] of [['user_likes_pins', b.id], ['user_follows_user', a.id]] as const) {
      await assert.rejects(f.kit.mappings.list(name, from, { limit: 2, cursor: first.next }), (e: unknown) => {
        assert.equal((e as { code?: string }).code, 'INVALID_ARGUMENT');
        assert.match((e as Error).message, /belongs to another list/);
        return true;
      });
      await expectCode(f.kit.join(name, from, { limit: 2, cursor: first.next }), 'INVALID_ARGUMENT');
    }
    // Cursors handed out before lists were tagged (version 1: 18 bytes, no tag) still page on.
    const v1 = Buffer.alloc(18);
    v1[0] = 1;
    v1[1] = 1;
    v1.writeBigInt64BE(2n, 2);
    v1.writeBigUInt64BE(pins[2]!.id, 10);
    assert.deepEqual((await f.kit.mappings.list('user_likes_pins', b.id, { limit: 5, cursor: v1.toString('base64url') })).items.map((x) => x.sequence), [1, 0]);
  } finally {
    await f.cleanup();
  }
});

test('mapping ends must have the declared types; unknown mappings and bad options are refused, nothing written', async () => {
  const f = makeKit();
  try {
    const u = await f.kit.objects.create('user', {});
    const p = await f.kit.objects.create('pin', {});
    const before = snapshot(f.root);
    await expectCode(f.kit.mappings.add('user_likes_pins', p.id, u.id), 'INVALID_ARGUMENT');
    await expectCode(f.kit.mappings.add('user_likes_pins', u.id, u.id), 'INVALID_ARGUMENT');
    await expectCode(f.kit.mappings.add('nope', u.id, p.id), 'UNKNOWN_MAPPING');
    await expectCode(f.kit.mappings.add('user_likes_pins', u.id, p.id, { sequence: 1.5 }), 'INVALID_ARGUMENT');
    await expectCode(f.kit.mappings.add('user_likes_pins', u.id, p.id, { sequence: 2 ** 60 }), 'INVALID_ARGUMENT');
    await expectCode(f.kit.mappings.add('user_likes_pins', u.id, 'x'), 'INVALID_ID');
    await expectCode(f.kit.mappings.list('user_likes_pins', p.id), 'INVALID_ARGUMENT');
    await expectCode(f.kit.mappings.count('__proto__', u.id), 'UNKNOWN_MAPPING');
    for (const limit of [0, -1, 1001, 1.5]) await expectCode(f.kit.mappings.list('user_likes_pins', u.id, { limit }), 'INVALID_ARGUMENT');
    await expectCode(f.kit.mappings.list('user_likes_pins', u.id, { order: 'sideways' as 'asc' }), 'INVALID_ARGUMENT');
    await expectCode(f.kit.mappings.remove('user_likes_pins', u.id, '-1'), 'INVALID_ID');
    assert.equal(snapshot(f.root), before);
  } finally {
    await f.cleanup();
  }
});
