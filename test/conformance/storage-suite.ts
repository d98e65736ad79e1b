/**
 * The conformance suite every ShardBackend passes (SQLite, MySQL, PostgreSQL, ...), in the
 * abstract-level style: a factory returns a fresh, isolated backend; tests switch on
 * `backend.supports`, never on names. Run it from test/storage/<backend>.test.ts:
 *
 *   runStorageSuite({ name: 'sqlite', factory: async () => ({ backend, schema, hosts, cleanup }) });
 *
 * Requirements on the fixture: at least two hosts, a schema with at least two types, one
 * mapping and two keyspaces (resolveSchema(defaultConfig()) is fine).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isShardKitError, type ErrorCode } from '../../src/errors.js';
import { MAX_PAIRS_PER_CALL, type Fleet, type MappingItem, type SchemaDef, type ShardBackend, type ShardRef } from '../../src/storage/shard-backend.js';

export interface StorageFixture {
  backend: ShardBackend;
  schema: SchemaDef;
  hosts: string[];
  cleanup(): Promise<void> | void;
}

export interface StorageSuiteOptions {
  name: string;
  factory: () => Promise<StorageFixture> | StorageFixture;
}

/** 2^63 - 1: the largest id every engine stores exactly (signed 64-bit columns). */
const MAX_ID = (1n << 63n) - 1n;
const SEED_PIN = 241294492511762325n;

/** Strings that break naive quoting, encodings or collations. */
export const HOSTILE_STRINGS: string[] = [
  "'",
  '"',
  '\\',
  "'; DROP TABLE pins; --",
  '" OR 1=1 --',
  'a\u0000b',
  '\u0000',
  'line\nbreak\r\ttab',
  'ünïcödé',
  'Ünïcödé',
  'e\u0301', // e + combining accent: not normalised, distinct from é
  '\u00e9',
  '日本語のキー',
  '🦄🏳️‍🌈',
  '\u202eRTL',
  'a',
  'A',
  'a ', // trailing space must stay significant (no PAD SPACE collation)
  ' a',
  '%_*?',
  '${x}{{y}}',
  '../../etc/passwd',
  'x'.repeat(1024),
  'é'.repeat(512), // 1024 UTF-8 bytes
];

export function runStorageSuite({ name, factory }: StorageSuiteOptions): void {
  describe(`storage conformance: ${name}`, () => {
    /** Runs `fn` against a fresh fixture and always cleans up. */
    const it = (title: string, fn: (f: StorageFixture & Helpers) => Promise<void>) =>
      test(title, async () => {
        const fixture = await factory();
        assert.ok(fixture.hosts.length >= 2, 'the fixture must provide at least two hosts');
        assert.ok(fixture.schema.types.length >= 2, 'the fixture schema needs two types');
        assert.ok(fixture.schema.mappings.length >= 1, 'the fixture schema needs a mapping');
        assert.ok(fixture.schema.keyspaces.length >= 2, 'the fixture schema needs two keyspaces');
        try {
          await fn({ ...fixture, ...helpers(fixture) });
        } finally {
          await fixture.backend.close();
          await fixture.cleanup();
        }
      });

    it('createShard is idempotent and the shard is listed on its host', async ({ backend, hosts, objRef, prepare }) => {
      const ref = objRef(7);
      await backend.createShard(ref);
      await backend.createShard(ref);
      assert.deepEqual(await backend.listShards(hosts[0]!, 'objects'), [7]);
      await prepare(ref);
      assert.deepEqual(await backend.listShards(hosts[0]!, 'objects'), [7]);
    });

    it('listShards is per host and per fleet, ascending', async ({ backend, hosts, objRef, lookupRef }) => {
      assert.deepEqual(await backend.listShards(hosts[0]!, 'objects'), []);
      for (const s of [12, 3, 400]) await backend.createShard(objRef(s));
      await backend.createShard(lookupRef(9));
      assert.deepEqual(await backend.listShards(hosts[0]!, 'objects'), [3, 12, 400]);
      assert.deepEqual(await backend.listShards(hosts[0]!, 'lookups'), []);
      assert.deepEqual(await backend.listShards(hosts[1]!, 'lookups'), [9]);
      assert.deepEqual(await backend.listShards(hosts[1]!, 'objects'), []);
    });

    it('a host that serves both fleets lists each fleet separately', async ({ backend, hosts }) => {
      await backend.createShard({ host: hosts[0]!, shard: 5, fleet: 'objects' });
      await backend.createShard({ host: hosts[0]!, shard: 5, fleet: 'lookups' });
      await backend.createShard({ host: hosts[0]!, shard: 6, fleet: 'lookups' });
      assert.deepEqual(await backend.listShards(hosts[0]!, 'objects'), [5]);
      assert.deepEqual(await backend.listShards(hosts[0]!, 'lookups'), [5, 6]);
      await backend.dropShard({ host: hosts[0]!, shard: 5, fleet: 'lookups' });
      assert.deepEqual(await backend.listShards(hosts[0]!, 'objects'), [5]);
      assert.deepEqual(await backend.listShards(hosts[0]!, 'lookups'), [6]);
    });

    it('inserts return increasing local ids that are never reused after a delete', async ({ backend, objRef, prepare, typeTable }) => {
      const ref = objRef(1);
      await prepare(ref);
      const before = Date.now();
      const a = await backend.insertObject(ref, typeTable(0), '{"n":1}');
      const b = await backend.insertObject(ref, typeTable(0), '{"n":2}');
      const after = Date.now();
      assert.ok(Number.isSafeInteger(a.localId) && a.localId >= 1);
      assert.ok(b.localId > a.localId);
      assert.equal(a.data, '{"n":1}');
      assert.ok(a.createdAt instanceof Date);
      // The row's ts is the creation time (engines may round to the second).
      assert.ok(a.createdAt.getTime() >= before - 1000 && a.createdAt.getTime() <= after + 1000, 'createdAt is the insert time');
      assert.equal(await backend.deleteObject(ref, typeTable(0), b.localId), true);
      const c = await backend.insertObject(ref, typeTable(0), '{"n":3}');
      assert.ok(c.localId > b.localId, `local id ${c.localId} reuses or precedes deleted ${b.localId}`);
      // Each type has its own sequence of local ids.
      const other = await backend.insertObject(ref, typeTable(1), '{}');
      assert.ok(other.localId >= 1);
    });

    it('getObjects returns rows in key order, undefined where absent, across tables in one call', async ({ backend, objRef, prepare, typeTable }) => {
      const ref = objRef(2);
      await prepare(ref);
      const p1 = await backend.insertObject(ref, typeTable(0), '{"p":1}');
      const p2 = await backend.insertObject(ref, typeTable(0), '{"p":2}');
      const b1 = await backend.insertObject(ref, typeTable(1), '{"b":1}');
      const got = await backend.getObjects(ref, [
        { table: typeTable(1), localId: b1.localId },
        { table: typeTable(0), localId: p2.localId },
        { table: typeTable(0), localId: 999999 },
        { table: typeTable(0), localId: p1.localId },
        { table: typeTable(0), localId: p2.localId },
        { table: typeTable(1), localId: p1.localId === b1.localId ? 424242 : p1.localId },
      ]);
      assert.equal(got.length, 6);
      assert.equal(got[0]?.data, '{"b":1}');
      assert.equal(got[1]?.data, '{"p":2}');
      assert.equal(got[2], undefined);
      assert.equal(got[3]?.data, '{"p":1}');
      assert.equal(got[4]?.data, '{"p":2}');
      assert.equal(got[5], undefined);
      assert.equal(got[1]?.localId, p2.localId);
      assert.ok(got[3]?.createdAt instanceof Date);
      assert.deepEqual(await backend.getObjects(ref, []), []);
      assert.deepEqual(await backend.getObjects(ref, [{ table: typeTable(0), localId: p1.localId }]).then((r) => r.map((x) => x?.data)), ['{"p":1}']);
    });

    it('updateObject: fn sees the current text; undefined leaves it; a missing row gives undefined', async ({ backend, objRef, prepare, typeTable }) => {
      const ref = objRef(3);
      await prepare(ref);
      const o = await backend.insertObject(ref, typeTable(0), '{"v":1}');
      const seen: string[] = [];
      const u = await backend.updateObject(ref, typeTable(0), o.localId, (text) => {
        seen.push(text);
        return '{"v":2}';
      });
      assert.deepEqual(seen, ['{"v":1}']);
      assert.equal(u?.data, '{"v":2}');
      assert.equal(u?.localId, o.localId);
      assert.equal(u?.createdAt.getTime(), (await backend.getObjects(ref, [{ table: typeTable(0), localId: o.localId }]))[0]?.createdAt.getTime());
      const same = await backend.updateObject(ref, typeTable(0), o.localId, () => undefined);
      assert.equal(same?.data, '{"v":2}');
      let called = false;
      const missing = await backend.updateObject(ref, typeTable(0), 987654, () => {
        called = true;
        return '{}';
      });
      assert.equal(missing, undefined);
      assert.equal(called, false);
      assert.equal((await backend.getObjects(ref, [{ table: typeTable(0), localId: 987654 }]))[0], undefined);
    });

    it('updateObject: an error thrown by fn rejects the call and leaves the row unchanged', async ({ backend, objRef, prepare, typeTable }) => {
      const ref = objRef(3);
      await prepare(ref);
      const o = await backend.insertObject(ref, typeTable(0), '{"v":1}');
      const boom = new Error('boom');
      await assert.rejects(backend.updateObject(ref, typeTable(0), o.localId, () => {
        throw boom;
      }), (err) => err === boom);
      assert.equal((await backend.getObjects(ref, [{ table: typeTable(0), localId: o.localId }]))[0]?.data, '{"v":1}');
      // The shard is still usable after the rollback.
      assert.equal((await backend.updateObject(ref, typeTable(0), o.localId, () => '{"v":3}'))?.data, '{"v":3}');
    });

    it('100 concurrent read-modify-write increments lose none', async ({ backend, objRef, prepare, typeTable }) => {
      const ref = objRef(4);
      await prepare(ref);
      const o = await backend.insertObject(ref, typeTable(0), '{"count":0}');
      await Promise.all(Array.from({ length: 100 }, () =>
        backend.updateObject(ref, typeTable(0), o.localId, (text) => JSON.stringify({ count: (JSON.parse(text) as { count: number }).count + 1 }))));
      const [row] = await backend.getObjects(ref, [{ table: typeTable(0), localId: o.localId }]);
      assert.deepEqual(JSON.parse(row!.data), { count: 100 });
    });

    it('deleteObject removes the row and reports whether it existed', async ({ backend, objRef, prepare, typeTable }) => {
      const ref = objRef(5);
      await prepare(ref);
      const o = await backend.insertObject(ref, typeTable(0), '{}');
      assert.equal(await backend.deleteObject(ref, typeTable(0), o.localId), true);
      assert.equal(await backend.deleteObject(ref, typeTable(0), o.localId), false);
      assert.equal((await backend.getObjects(ref, [{ table: typeTable(0), localId: o.localId }]))[0], undefined);
      assert.equal(await backend.updateObject(ref, typeTable(0), o.localId, () => '{}'), undefined);
    });

    it('addMapping upserts: the same pair again updates its sequence, never duplicates', async ({ backend, objRef, prepare, mapTable }) => {
      const ref = objRef(6);
      await prepare(ref);
      await backend.addMapping(ref, mapTable, 10n, 20n, 100);
      await backend.addMapping(ref, mapTable, 10n, 21n, 200);
      await backend.addMapping(ref, mapTable, 10n, 20n, 300);
      assert.equal(await backend.countMappings(ref, mapTable, 10n), 2);
      assert.deepEqual(await backend.listMappings(ref, mapTable, 10n, { limit: 10, order: 'asc' }), [
        { toId: 21n, sequence: 200 },
        { toId: 20n, sequence: 300 },
      ]);
    });

    it('listMappings orders by (sequence, toId) both ways and keyset pages cover everything once', async ({ backend, objRef, prepare, mapTable }) => {
      const ref = objRef(8);
      await prepare(ref);
      const from = SEED_PIN;
      // Ties on sequence are ordered by toId; insertion order is shuffled.
      const items: MappingItem[] = [];
      for (let i = 0; i < 23; i++) items.push({ toId: BigInt(1000 + ((i * 7) % 23)), sequence: Math.floor(i / 4) * 10 });
      for (const it of [...items].reverse()) await backend.addMapping(ref, mapTable, from, it.toId, it.sequence);
      await backend.addMapping(ref, mapTable, from + 1n, 5n, 0); // another list on the same shard
      const asc = [...items].sort((a, b) => a.sequence - b.sequence || (a.toId < b.toId ? -1 : a.toId > b.toId ? 1 : 0));
      const desc = [...asc].reverse();
      assert.deepEqual(await backend.listMappings(ref, mapTable, from, { limit: 100, order: 'asc' }), asc);
      assert.deepEqual(await backend.listMappings(ref, mapTable, from, { limit: 100, order: 'desc' }), desc);
      assert.deepEqual(await backend.listMappings(ref, mapTable, from, { limit: 5, order: 'desc' }), desc.slice(0, 5));
      for (const [order, expected] of [['asc', asc], ['desc', desc]] as const) {
        const seen: MappingItem[] = [];
        let after: MappingItem | undefined;
        for (;;) {
          const page = await backend.listMappings(ref, mapTable, from, { limit: 3, order, ...(after ? { after } : {}) });
          seen.push(...page);
          if (page.length < 3) break;
          after = page[page.length - 1];
        }
        assert.deepEqual(seen, expected, `${order} pages`);
      }
      // `after` is exclusive and need not be a stored pair.
      assert.deepEqual(
        await backend.listMappings(ref, mapTable, from, { limit: 100, order: 'asc', after: { sequence: 10, toId: 0n } }),
        asc.filter((x) => x.sequence >= 10),
      );
      assert.deepEqual(await backend.listMappings(ref, mapTable, 77n, { limit: 10, order: 'asc' }), []);
    });

    it('removeMapping and countMappings', async ({ backend, objRef, prepare, mapTable }) => {
      const ref = objRef(9);
      await prepare(ref);
      assert.equal(await backend.countMappings(ref, mapTable, 1n), 0);
      for (let i = 0; i < 5; i++) await backend.addMapping(ref, mapTable, 1n, BigInt(100 + i), i);
      assert.equal(await backend.countMappings(ref, mapTable, 1n), 5);
      assert.equal(await backend.removeMapping(ref, mapTable, 1n, 102n), true);
      assert.equal(await backend.removeMapping(ref, mapTable, 1n, 102n), false);
      assert.equal(await backend.removeMapping(ref, mapTable, 2n, 100n), false);
      assert.equal(await backend.countMappings(ref, mapTable, 1n), 4);
      assert.deepEqual((await backend.listMappings(ref, mapTable, 1n, { limit: 10, order: 'asc' })).map((x) => x.toId), [100n, 101n, 103n, 104n]);
    });

    it('countObjects counts the rows of every object table of one shard, deleted-by-flag rows included', async ({ backend, objRef, lookupRef, prepare, typeTable, mapTable }) => {
      const ref = objRef(13);
      const other = objRef(14);
      await prepare(ref);
      await prepare(other);
      assert.equal(await backend.countObjects(ref), 0);
      const a = await backend.insertObject(ref, typeTable(0), '{"n":1}');
      await backend.insertObject(ref, typeTable(0), '{"n":2,"active":false}');
      await backend.insertObject(ref, typeTable(1), '{}');
      await backend.insertObject(other, typeTable(0), '{}');
      // Mappings are not objects.
      await backend.addMapping(ref, mapTable, 1n, 2n, 1);
      assert.equal(await backend.countObjects(ref), 3);
      assert.equal(await backend.countObjects(other), 1);
      assert.equal(await backend.deleteObject(ref, typeTable(0), a.localId), true);
      assert.equal(await backend.countObjects(ref), 2);
      await assert.rejects(backend.countObjects(lookupRef(13)), (err: Error & { code?: string }) => err.code === 'INVALID_ARGUMENT');
    });

    it('lookups: put overwrites, get, delete, keyspaces are separate tables', async ({ backend, lookupRef, prepare, keyTable }) => {
      const ref = lookupRef(11);
      await prepare(ref);
      assert.equal(await backend.getLookup(ref, keyTable(0), 'x@example.com'), undefined);
      await backend.putLookup(ref, keyTable(0), 'x@example.com', 5n);
      assert.equal(await backend.getLookup(ref, keyTable(0), 'x@example.com'), 5n);
      await backend.putLookup(ref, keyTable(0), 'x@example.com', 6n);
      assert.equal(await backend.getLookup(ref, keyTable(0), 'x@example.com'), 6n);
      assert.equal(await backend.getLookup(ref, keyTable(1), 'x@example.com'), undefined);
      assert.equal(await backend.deleteLookup(ref, keyTable(0), 'x@example.com'), true);
      assert.equal(await backend.deleteLookup(ref, keyTable(0), 'x@example.com'), false);
      assert.equal(await backend.getLookup(ref, keyTable(0), 'x@example.com'), undefined);
    });

    it('IDs above 2^53 are stored exactly, up to 2^63-1; larger ones are INVALID_ID', async ({ backend, objRef, lookupRef, prepare, mapTable, keyTable }) => {
      const ref = objRef(10);
      const lref = lookupRef(10);
      await prepare(ref);
      await prepare(lref);
      const big = [SEED_PIN, (1n << 53n) + 1n, (1n << 62n) - 1n, MAX_ID];
      for (const [i, id] of big.entries()) await backend.addMapping(ref, mapTable, id, id - 1n, i);
      for (const [i, id] of big.entries()) {
        assert.deepEqual(await backend.listMappings(ref, mapTable, id, { limit: 5, order: 'asc' }), [{ toId: id - 1n, sequence: i }]);
        await backend.putLookup(lref, keyTable(0), `k${i}`, id);
        assert.equal(await backend.getLookup(lref, keyTable(0), `k${i}`), id);
      }
      // Ties on a large sequence are ordered by the full 64-bit toId.
      for (const to of [MAX_ID, SEED_PIN, SEED_PIN + 1n]) await backend.addMapping(ref, mapTable, 1n, to, Number.MAX_SAFE_INTEGER);
      await backend.addMapping(ref, mapTable, 1n, 3n, -5);
      assert.deepEqual((await backend.listMappings(ref, mapTable, 1n, { limit: 10, order: 'asc' })).map((x) => [x.sequence, x.toId]), [
        [-5, 3n], [Number.MAX_SAFE_INTEGER, SEED_PIN], [Number.MAX_SAFE_INTEGER, SEED_PIN + 1n], [Number.MAX_SAFE_INTEGER, MAX_ID],
      ]);
      const page = await backend.listMappings(ref, mapTable, 1n, { limit: 10, order: 'desc', after: { sequence: Number.MAX_SAFE_INTEGER, toId: SEED_PIN + 1n } });
      assert.deepEqual(page.map((x) => x.toId), [SEED_PIN, 3n]);
      await expectCode(backend.addMapping(ref, mapTable, MAX_ID + 1n, 1n, 0), 'INVALID_ID');
      await expectCode(backend.addMapping(ref, mapTable, 1n, -1n, 0), 'INVALID_ID');
      await expectCode(backend.putLookup(lref, keyTable(0), 'k', 1n << 64n), 'INVALID_ID');
      assert.equal(await backend.countMappings(ref, mapTable, 1n), 4);
    });

    it('hostile strings are exact, distinct lookup keys', async ({ backend, lookupRef, prepare, keyTable }) => {
      const ref = lookupRef(12);
      await prepare(ref);
      for (const [i, key] of HOSTILE_STRINGS.entries()) await backend.putLookup(ref, keyTable(0), key, BigInt(i + 1));
      for (const [i, key] of HOSTILE_STRINGS.entries()) assert.equal(await backend.getLookup(ref, keyTable(0), key), BigInt(i + 1), JSON.stringify(key.slice(0, 20)));
      assert.equal(await backend.getLookup(ref, keyTable(0), 'a\u0000'), undefined);
      assert.equal(await backend.getLookup(ref, keyTable(0), 'b'), undefined);
      assert.equal(await backend.deleteLookup(ref, keyTable(0), 'a\u0000b'), true);
      assert.equal(await backend.getLookup(ref, keyTable(0), '\u0000'), BigInt(HOSTILE_STRINGS.indexOf('\u0000') + 1));
      await expectCode(backend.putLookup(ref, keyTable(0), '', 1n), 'INVALID_ARGUMENT');
      await expectCode(backend.putLookup(ref, keyTable(0), 'x'.repeat(1025), 1n), 'INVALID_ARGUMENT');
      await expectCode(backend.putLookup(ref, keyTable(0), '\uD800', 1n), 'INVALID_ARGUMENT');
    });

    it('hostile and large JSON text is stored exactly (quotes, NUL escapes, unicode, 1 MB)', async ({ backend, objRef, prepare, typeTable }) => {
      const ref = objRef(13);
      await prepare(ref);
      const texts = [
        JSON.stringify({ s: HOSTILE_STRINGS }),
        JSON.stringify({ nul: '\u0000', k: { "'": '"', '\\': '\n' }, emoji: '🦄' }),
        JSON.stringify({ big: 'x'.repeat(1024 * 1024) }),
        JSON.stringify({ big: 'é🦄'.repeat(200_000) }),
      ];
      const rows = [];
      for (const t of texts) rows.push(await backend.insertObject(ref, typeTable(0), t));
      const got = await backend.getObjects(ref, rows.map((r) => ({ table: typeTable(0), localId: r.localId })));
      assert.deepEqual(got.map((g) => g?.data), texts);
      const upd = await backend.updateObject(ref, typeTable(0), rows[0]!.localId, (t) => {
        assert.equal(t, texts[0]);
        return texts[2]!;
      });
      assert.equal(upd?.data, texts[2]);
    });

    it('dropShard removes the shard and its rows', async ({ backend, hosts, objRef, prepare, typeTable, mapTable }) => {
      const ref = objRef(14);
      await prepare(ref);
      await backend.createShard(objRef(15));
      await backend.insertObject(ref, typeTable(0), '{}');
      await backend.addMapping(ref, mapTable, 1n, 2n, 0);
      await backend.dropShard(ref);
      assert.deepEqual(await backend.listShards(hosts[0]!, 'objects'), [15]);
      await backend.dropShard(ref); // dropping a missing shard is fine
      await backend.createShard(ref);
      assert.equal(await backend.countMappings(ref, mapTable, 1n), 0);
      assert.deepEqual(await backend.listMappings(ref, mapTable, 1n, { limit: 5, order: 'asc' }), []);
    });

    it('scanMappings walks a whole table in (fromId, toId) numeric order, a keyset page at a time', async ({ backend, objRef, prepare, mapTable }) => {
      const ref = objRef(4);
      await prepare(ref);
      assert.deepEqual(await backend.scanMappings(ref, mapTable, { limit: 10 }), []);
      const big = (1n << 63n) - 1n;
      // Numeric, not text, order: 9 < 10 < 2^53+1 < 2^63-1.
      const pairs: Array<[bigint, bigint, number]> = [[10n, 3n, 7], [9n, big, 1], [10n, 1n, -5], [big, 9n, 2], [(1n << 53n) + 1n, 10n, 3], [9n, 2n, 0], [10n, 2n, 9]];
      for (const [from, to, seq] of pairs) await backend.addMapping(ref, mapTable, from, to, seq);
      const want = [...pairs].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)).map(([fromId, toId, sequence]) => ({ fromId, toId, sequence }));
      assert.deepEqual(await backend.scanMappings(ref, mapTable, { limit: 100 }), want);
      // Pages of 3 resume strictly after the last row: every row once.
      const seen = [];
      let after: { fromId: bigint; toId: bigint } | undefined;
      for (;;) {
        const page = await backend.scanMappings(ref, mapTable, { limit: 3, ...(after ? { after } : {}) });
        seen.push(...page);
        if (page.length < 3) break;
        after = { fromId: page[2]!.fromId, toId: page[2]!.toId };
      }
      assert.deepEqual(seen, want);
      assert.deepEqual(await backend.scanMappings(ref, mapTable, { limit: 5, after: { fromId: big, toId: 9n } }), []);
      assert.deepEqual(await backend.scanMappings(ref, mapTable, { limit: 2, after: { fromId: 10n, toId: 1n } }), want.slice(3, 5));
      for (const bad of [{ limit: 0 }, { limit: 1.5 }, { limit: 10, after: { fromId: -1n, toId: 1n } }, { limit: 10, after: { fromId: 1n, toId: 1n << 64n } }]) {
        await expectCode(backend.scanMappings(ref, mapTable, bad as never), bad.limit === 10 ? 'INVALID_ID' : 'INVALID_ARGUMENT');
      }
      await expectCode(backend.scanMappings(ref, 'no_such_table', { limit: 1 }), 'INVALID_ARGUMENT');
    });

    it('getMappings answers which pairs exist, with their sequence, in request order, in one call', async ({ backend, objRef, prepare, mapTable }) => {
      const ref = objRef(6);
      await prepare(ref);
      const big = (1n << 63n) - 1n;
      await backend.addMapping(ref, mapTable, 1n, 2n, 5);
      await backend.addMapping(ref, mapTable, 1n, 3n, -7);
      await backend.addMapping(ref, mapTable, big, big, 11);
      assert.deepEqual(await backend.getMappings(ref, mapTable, []), []);
      assert.deepEqual(await backend.getMappings(ref, mapTable, [
        { fromId: 1n, toId: 3n }, { fromId: 2n, toId: 1n }, { fromId: big, toId: big }, { fromId: 1n, toId: 2n }, { fromId: 1n, toId: 3n }, { fromId: 1n, toId: 4n },
      ]), [-7, undefined, 11, 5, -7, undefined]);
      const many = Array.from({ length: MAX_PAIRS_PER_CALL }, (_, i) => ({ fromId: 1n, toId: BigInt(i + 1) }));
      const got = await backend.getMappings(ref, mapTable, many);
      assert.equal(got.length, MAX_PAIRS_PER_CALL);
      assert.deepEqual([got[0], got[1], got[2], got[3]], [undefined, 5, -7, undefined]);
      await expectCode(backend.getMappings(ref, mapTable, [...many, { fromId: 1n, toId: 1n }]), 'INVALID_ARGUMENT');
      await expectCode(backend.getMappings(ref, mapTable, [{ fromId: 1n << 64n, toId: 1n }]), 'INVALID_ID');
      await expectCode(backend.getMappings(ref, mapTable, 'x' as never), 'INVALID_ARGUMENT');
      await expectCode(backend.getMappings(ref, 'no_such_table', [{ fromId: 1n, toId: 2n }]), 'INVALID_ARGUMENT');
    });

    it('lazy backends: writes create the shard; reads of a missing shard are empty and create nothing', async ({ backend, hosts, objRef, lookupRef, typeTable, mapTable, keyTable }) => {
      if (!backend.supports.lazyShardCreation) {
        // Eager backends need createShard first; that path is covered by every other test.
        await backend.createShard(objRef(20));
        assert.deepEqual(await backend.listShards(hosts[0]!, 'objects'), [20]);
        return;
      }
      const ref = objRef(20);
      const lref = lookupRef(21);
      assert.deepEqual(await backend.getObjects(ref, [{ table: typeTable(0), localId: 1 }]), [undefined]);
      assert.equal(await backend.updateObject(ref, typeTable(0), 1, () => '{}'), undefined);
      assert.equal(await backend.deleteObject(ref, typeTable(0), 1), false);
      assert.deepEqual(await backend.listMappings(ref, mapTable, 1n, { limit: 5, order: 'desc' }), []);
      assert.equal(await backend.countMappings(ref, mapTable, 1n), 0);
      assert.equal(await backend.removeMapping(ref, mapTable, 1n, 2n), false);
      assert.deepEqual(await backend.scanMappings(ref, mapTable, { limit: 5 }), []);
      assert.deepEqual(await backend.getMappings(ref, mapTable, [{ fromId: 1n, toId: 2n }]), [undefined]);
      assert.equal(await backend.getLookup(lref, keyTable(0), 'k'), undefined);
      assert.equal(await backend.deleteLookup(lref, keyTable(0), 'k'), false);
      assert.deepEqual(await backend.listShards(hosts[0]!, 'objects'), []);
      assert.deepEqual(await backend.listShards(hosts[1]!, 'lookups'), []);
      await backend.insertObject(ref, typeTable(0), '{}');
      await backend.putLookup(lref, keyTable(0), 'k', 1n);
      assert.deepEqual(await backend.listShards(hosts[0]!, 'objects'), [20]);
      assert.deepEqual(await backend.listShards(hosts[1]!, 'lookups'), [21]);
    });

    it('tables of the wrong fleet or outside the schema are refused', async ({ backend, objRef, lookupRef, typeTable, keyTable }) => {
      await expectCode(backend.insertObject(objRef(1), 'no_such_table', '{}'), 'INVALID_ARGUMENT');
      await expectCode(backend.insertObject(objRef(1), 'pins; DROP TABLE pins', '{}'), 'INVALID_ARGUMENT');
      await expectCode(backend.insertObject(lookupRef(1), typeTable(0), '{}'), 'INVALID_ARGUMENT');
      await expectCode(backend.putLookup(objRef(1), keyTable(0), 'k', 1n), 'INVALID_ARGUMENT');
      await expectCode(backend.listShards('../evil', 'objects'), 'INVALID_ARGUMENT');
    });

    it('close: later calls reject with CLOSED; close twice is fine', async ({ backend, objRef, prepare, typeTable }) => {
      const ref = objRef(1);
      await prepare(ref);
      await backend.insertObject(ref, typeTable(0), '{}');
      await backend.close();
      await backend.close();
      await expectCode(backend.insertObject(ref, typeTable(0), '{}'), 'CLOSED');
      await expectCode(backend.getObjects(ref, [{ table: typeTable(0), localId: 1 }]), 'CLOSED');
    });
  });
}

interface Helpers {
  objRef(shard: number): ShardRef;
  lookupRef(shard: number): ShardRef;
  /** createShard when the backend is not lazy; a lazy backend must work without it. */
  prepare(ref: ShardRef): Promise<void>;
  typeTable(i: number): string;
  mapTable: string;
  keyTable(i: number): string;
}

function helpers(f: StorageFixture): Helpers {
  const ref = (host: string, fleet: Fleet) => (shard: number): ShardRef => ({ host, shard, fleet });
  return {
    objRef: ref(f.hosts[0]!, 'objects'),
    lookupRef: ref(f.hosts[1]!, 'lookups'),
    prepare: async (r) => {
      if (!f.backend.supports.lazyShardCreation) await f.backend.createShard(r);
    },
    typeTable: (i) => f.schema.types[i]!.table,
    mapTable: f.schema.mappings[0]!.table,
    keyTable: (i) => f.schema.keyspaces[i]!.table,
  };
}

async function expectCode(p: Promise<unknown>, code: ErrorCode): Promise<void> {
  await assert.rejects(p, (err) => {
    assert.ok(isShardKitError(err), `expected ShardKitError ${code}, got ${String(err)}`);
    assert.equal(err.code, code);
    return true;
  });
}
