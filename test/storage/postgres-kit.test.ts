import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isShardKitError } from '../../src/errors.js';
import { initShards } from '../../src/ops/shard-init.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import type { ShardErrorEvent } from '../../src/kit/types.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { HOSTILE_STRINGS } from '../conformance/storage-suite.js';
import { shardkit } from '../mysql/helpers.js';
import { DATABASE, startPostgresServers, type PostgresServers } from './postgres-servers.js';

// ShardKit built by ShardKit.open from a postgres config (so through backend-factory and
// src/storage/postgres/index.ts), over two real PostgreSQL 15 servers.
let env: PostgresServers;
let dataDir: string;

before(async () => {
  env = await startPostgresServers();
  dataDir = mkdtempSync(join(tmpdir(), 'shardkit-pgkit-'));
});

after(async () => {
  await env?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function openKit(storage: { connectTimeoutMs?: number; queryTimeoutMs?: number } = {}): Promise<ShardKit> {
  const kit = await ShardKit.open({ config: env.config(storage), dataDir });
  assert.equal(kit.backend.kind, 'postgres');
  const result = await initShards(kit.backend, await kit.shardMap());
  assert.equal(result.total, 16);
  return kit;
}

test('shardkit init creates every shard schema on its master and a second run creates nothing', async () => {
  await env.dropAllShards();
  const configPath = join(dataDir, 'init.json');
  writeFileSync(configPath, JSON.stringify(env.config()));
  const first = await shardkit(['init', '--config', configPath, '--json']);
  assert.equal(first.code, 0, first.stderr);
  const r1 = JSON.parse(first.stdout) as { total: number; created: number; hosts: Record<string, { objects: number; lookups: number }> };
  assert.equal(r1.total, 16);
  assert.equal(r1.created, 16);
  assert.deepEqual(r1.hosts, { PG001A: { objects: 4, lookups: 4 }, PG002A: { objects: 4, lookups: 4 } });
  const schemas = await env.servers[1]!.sql<{ nspname: string }>(DATABASE, `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'db%' ORDER BY 1`);
  assert.deepEqual(schemas.map((s) => s.nspname), ['db00004', 'db00005', 'db00006', 'db00007']);
  const second = await shardkit(['init', '--config', configPath, '--json']);
  assert.equal(second.code, 0, second.stderr);
  assert.equal((JSON.parse(second.stdout) as { created: number }).created, 0);
  await env.dropAllShards();
});

test('objects, mappings and lookups end to end; 100 concurrent increments give exactly 100', async () => {
  await env.dropAllShards();
  const kit = await openKit();
  try {
    const board = await kit.objects.create('board', { name: 'bread' });
    const pins = [];
    for (let i = 0; i < 5; i++) pins.push(await kit.objects.create('pin', { n: i, count: 0 }, { near: board.id }));
    assert.ok(pins.every((p) => p.shard === board.shard));
    assert.deepEqual((await kit.objects.get(pins[2]!.id)).data, { n: 2, count: 0 });
    const many = await kit.objects.getMany([pins[0]!.id, board.id, pins[4]!.id]);
    assert.deepEqual(many.map((o) => o?.type), ['pin', 'board', 'pin']);
    assert.ok(Math.abs(board.createdAt.getTime() - (await kit.objects.get(board.id)).createdAt.getTime()) === 0);

    await Promise.all(Array.from({ length: 100 }, () => kit.objects.update(pins[0]!.id, (d) => ({ ...d, count: (d.count as number) + 1 }))));
    assert.equal((await kit.objects.get(pins[0]!.id)).data.count, 100);
    // An update function returning undefined leaves the object as it was.
    const same = await kit.objects.update(pins[0]!.id, () => undefined);
    assert.equal(same.data.count, 100);

    // Soft delete: NOT_FOUND for reads, the row stays; hard delete removes it; ids are never reused.
    await kit.objects.delete(pins[1]!.id);
    await assert.rejects(kit.objects.get(pins[1]!.id), (e) => isShardKitError(e, 'NOT_FOUND'));
    await kit.objects.delete(pins[2]!.id, { hard: true });
    await assert.rejects(kit.objects.get(pins[2]!.id), (e) => isShardKitError(e, 'NOT_FOUND'));
    await assert.rejects(kit.objects.delete(pins[2]!.id, { hard: true }), (e) => isShardKitError(e, 'NOT_FOUND'));
    const later = await kit.objects.create('pin', {}, { near: board.id });
    assert.ok(pinterestId.decode(later.id).localId > pinterestId.decode(pins[4]!.id).localId);
    assert.deepEqual((await kit.objects.getMany([pins[1]!.id, pins[2]!.id, pins[3]!.id])).map((o) => o?.data.n), [undefined, undefined, 3]);

    // Mappings: 5 pins with sequences, newest first by default, paged with cursors.
    for (let i = 0; i < 5; i++) await kit.mappings.add('board_has_pins', board.id, pins[i]!.id, { sequence: 1000 + (i % 3) });
    assert.equal(await kit.mappings.count('board_has_pins', board.id), 5);
    const seen: bigint[] = [];
    let cursor: string | null = null;
    do {
      const page = await kit.mappings.list('board_has_pins', board.id, { limit: 2, cursor });
      seen.push(...page.items.map((it) => it.id));
      cursor = page.next;
    } while (cursor !== null);
    // (sequence, id) descending: 1002 {p2}, 1001 {p4, p1}, 1000 {p3, p0}.
    const order = [pins[2], pins[4], pins[1], pins[3], pins[0]].map((p) => p!.id);
    assert.deepEqual(seen, order);
    const asc = await kit.mappings.list('board_has_pins', board.id, { order: 'asc', limit: 10 });
    assert.deepEqual(asc.items.map((it) => it.id), [...order].reverse());
    assert.equal(await kit.mappings.remove('board_has_pins', board.id, pins[4]!.id), true);
    assert.equal(await kit.mappings.remove('board_has_pins', board.id, pins[4]!.id), false);
    assert.equal(await kit.mappings.count('board_has_pins', board.id), 4);

    // Lookups (mod shards): put/get/overwrite/delete.
    await kit.lookups.put('email', 'ann@example.com', board.id);
    assert.equal(await kit.lookups.get('email', 'ann@example.com'), board.id);
    await kit.lookups.put('email', 'ann@example.com', pins[0]!.id);
    assert.equal(await kit.lookups.get('email', 'ann@example.com'), pins[0]!.id);
    assert.equal(await kit.lookups.get('email', 'ANN@example.com'), undefined);
    assert.equal(await kit.lookups.delete('email', 'ann@example.com'), true);
    assert.equal(await kit.lookups.get('email', 'ann@example.com'), undefined);
  } finally {
    await kit.close();
    await env.dropAllShards();
  }
});

test('IDs above 2^53 round-trip exactly: objects, multi-get, updates, mappings and lookups on shards 128+', async () => {
  await env.dropAllShards();
  // Shard 128 and up put every ID above 2^53; shards 0..127 are closed and never created.
  const shardMap = {
    version: 1,
    ranges: [
      { range: [0, 127], master: 'PG001A', slave: 'PG001B', open: false },
      { range: [128, 131], master: 'PG002A', slave: 'PG002B', open: true },
    ],
    modShards: { count: 8, ranges: [{ range: [0, 7], master: 'PG001A', slave: 'PG001B' }] },
  };
  const kit = await ShardKit.open({ config: env.config({}, shardMap), dataDir });
  try {
    for (let shard = 128; shard <= 131; shard++) await kit.backend.createShard({ host: 'PG002A', shard, fleet: 'objects' });
    for (let shard = 0; shard <= 7; shard++) await kit.backend.createShard({ host: 'PG001A', shard, fleet: 'lookups' });
    const board = await kit.objects.create('board', { name: 'big' });
    const pins = [];
    for (let i = 0; i < 4; i++) pins.push(await kit.objects.create('pin', { i }, { shard: 128 + i }));
    for (const o of [board, ...pins]) assert.ok(o.id > 2n ** 53n && BigInt(Number(o.id)) !== o.id, String(o.id));
    assert.deepEqual((await kit.objects.getMany(pins.map((p) => p.id.toString()))).map((o) => o?.id), pins.map((p) => p.id));
    assert.equal((await kit.objects.update(pins[3]!.id, (d) => ({ ...d, u: 1 }))).id, pins[3]!.id);
    for (const [i, p] of pins.entries()) await kit.mappings.add('board_has_pins', board.id, p.id, { sequence: i });
    assert.deepEqual((await kit.mappings.list('board_has_pins', board.id, { order: 'asc' })).items.map((it) => it.id), pins.map((p) => p.id));
    for (const [i, p] of pins.entries()) await kit.lookups.put('ip', `10.0.0.${i}`, p.id);
    for (const [i, p] of pins.entries()) assert.equal(await kit.lookups.get('ip', `10.0.0.${i}`), p.id);
  } finally {
    await kit.close();
    await env.dropAllShards();
  }
});

test('hostile names, keys and values are stored and read back verbatim, and touch nothing else', async () => {
  await env.dropAllShards();
  const kit = await openKit();
  try {
    const data: Record<string, string> = {};
    HOSTILE_STRINGS.forEach((s, i) => {
      data[s] = s;
      data[`k${i}`] = s;
    });
    const obj = await kit.objects.create('user', data);
    assert.deepEqual((await kit.objects.get(obj.id)).data, data);
    const updated = await kit.objects.update(obj.id, (d) => ({ ...d, "'; DROP TABLE users; --": 'a\u0000b\\' }));
    assert.equal(updated.data["'; DROP TABLE users; --"], 'a\u0000b\\');
    const userId = (i: number) => pinterestId.encode({ shard: 3, type: 3, localId: i + 1 });
    for (const [i, key] of HOSTILE_STRINGS.entries()) await kit.lookups.put('username', key, userId(i));
    for (const [i, key] of HOSTILE_STRINGS.entries()) assert.equal(await kit.lookups.get('username', key), userId(i), JSON.stringify(key));
    // Nothing else was touched: same schemas, same tables, and the other keyspace is empty.
    for (const server of env.servers) {
      const tables = await server.sql<{ n: number }>(DATABASE, `SELECT count(*)::int AS n FROM pg_tables WHERE schemaname LIKE 'db%'`);
      // 4 object shards x (4 types + 6 mappings) + 4 mod shards x 3 keyspaces
      assert.equal(tables[0]!.n, 4 * 10 + 4 * 3);
      const extra = await server.sql<{ n: number }>(DATABASE, `SELECT count(*)::int AS n FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname NOT IN ('public', 'information_schema') AND nspname !~ '^db[0-9]{5}$'`);
      assert.equal(extra[0]!.n, 0);
    }
    for (const key of HOSTILE_STRINGS) assert.equal(await kit.lookups.get('email', key), undefined);
    assert.equal((await kit.objects.getMany([obj.id]))[0]?.data['\\'], '\\');
  } finally {
    await kit.close();
    await env.dropAllShards();
  }
});

test('a server stopped mid-test fails its shards with SHARD_UNAVAILABLE (no hang) and the same kit recovers after restart', { timeout: 60_000 }, async (t) => {
  await env.dropAllShards();
  const kit = await openKit({ connectTimeoutMs: 1000, queryTimeoutMs: 1500 });
  const events: ShardErrorEvent[] = [];
  kit.events.on('shard-error', (e: ShardErrorEvent) => events.push(e));
  try {
    const onA = await kit.objects.create('pin', { v: 1 }, { shard: 1 }); // PG001A
    const onB = await kit.objects.create('pin', { v: 2 }, { shard: 5 }); // PG002A
    for (const mode of ['fast', 'immediate'] as const) {
      events.length = 0;
      await env.servers[0]!.stop(mode);
      const started = Date.now();
      for (const call of [() => kit.objects.get(onA.id), () => kit.objects.update(onA.id, (d) => ({ ...d, v: 3 })), () => kit.mappings.count('pin_owned_by_board', onA.id)]) {
        await assert.rejects(call(), (err) => {
          assert.ok(isShardKitError(err, 'SHARD_UNAVAILABLE'), String(err));
          assert.match(err.message, /shard 1 \(db00001 on PG001A\) is unavailable/);
          return true;
        });
      }
      t.diagnostic(`${mode} stop: 3 calls failed in ${Date.now() - started} ms`);
      assert.ok(events.length >= 3 && events.every((e) => e.host === 'PG001A'));
      // The other server is unaffected.
      assert.deepEqual((await kit.objects.get(onB.id)).data, { v: 2 });
      await env.servers[0]!.startServer();
      // The host stays marked down for at most connectTimeoutMs after the last failure; then it is retried.
      let back: unknown;
      for (let attempt = 0; attempt < 100; attempt++) {
        try {
          back = (await kit.objects.get(onA.id)).data;
          break;
        } catch (err) {
          assert.ok(isShardKitError(err, 'SHARD_UNAVAILABLE'), String(err));
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      // The failed update (v: 3) never happened; the increment acknowledged before the immediate (crash) stop survived it.
      assert.deepEqual(back, mode === 'fast' ? { v: 1 } : { v: 1, n: 1 });
      const bumped = await kit.objects.update(onA.id, (d) => ({ ...d, n: ((d.n as number | undefined) ?? 0) + 1 }));
      assert.equal(bumped.data.v, 1);
    }
    assert.equal((await kit.objects.get(onA.id)).data.n, 2);
  } finally {
    await kit.close();
    // A failure above may leave the server stopped, or the admin pool's host marked down for a moment.
    await env.servers[0]!.startServer();
    for (let attempt = 0; ; attempt++) {
      try {
        await env.dropAllShards();
        break;
      } catch (err) {
        if (attempt >= 30 || !isShardKitError(err, 'SHARD_UNAVAILABLE')) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
});
