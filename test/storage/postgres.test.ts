import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { isShardKitError } from '../../src/errors.js';
import { PostgresBackend } from '../../src/storage/postgres/index.js';
import { runStorageSuite } from '../conformance/storage-suite.js';
import { DATABASE, PG_HOSTS, startPostgresServers, type PostgresServers } from './postgres-servers.js';

// Two real PostgreSQL 15 servers for the whole file; every fixture starts from servers without
// shard schemas, so each suite test is isolated.
let env: PostgresServers;

before(async () => {
  env = await startPostgresServers();
});

after(async () => {
  await env?.stop();
});

runStorageSuite({
  name: 'postgres (PostgreSQL 15)',
  factory: async () => {
    await env.dropAllShards();
    return {
      // connectTimeoutMs also bounds the wait for a pooled connection: 100 concurrent updates of one
      // row on 4 connections must not depend on the machine's speed (PG_ACQUIRE_TIMEOUT at load 20).
      backend: new PostgresBackend({ hosts: env.hosts, storage: { user: 'postgres', database: DATABASE, poolSize: 4, connectTimeoutMs: 60_000 }, schema: env.schema }),
      schema: env.schema,
      hosts: PG_HOSTS,
      cleanup: () => env.dropAllShards(),
    };
  },
});

function backend(storage: { connectTimeoutMs?: number; queryTimeoutMs?: number } = {}): PostgresBackend {
  return new PostgresBackend({ hosts: env.hosts, storage: { user: 'postgres', database: DATABASE, ...storage }, schema: env.schema });
}

test('a shard is a schema dbNNNNN holding the fleet tables with the documented columns', async () => {
  await env.dropAllShards();
  const b = backend();
  try {
    await b.createShard({ host: 'PG001A', shard: 3, fleet: 'objects' });
    await b.createShard({ host: 'PG001A', shard: 3, fleet: 'lookups' });
    const cols = await env.servers[0]!.sql<{ table_name: string; column_name: string; data_type: string; is_identity: string }>(
      DATABASE,
      `SELECT table_name, column_name, data_type, is_identity FROM information_schema.columns
       WHERE table_schema = 'db00003' AND table_name IN ('pins', 'board_has_pins', 'lookup_email') ORDER BY table_name, ordinal_position`,
    );
    assert.deepEqual(cols.map((c) => `${c.table_name}.${c.column_name}:${c.data_type}${c.is_identity === 'YES' ? ':identity' : ''}`), [
      'board_has_pins.from_id:bigint', 'board_has_pins.to_id:bigint', 'board_has_pins.sequence:bigint',
      'lookup_email.key:bytea', 'lookup_email.value:bigint',
      'pins.local_id:bigint:identity', 'pins.data:text', 'pins.ts:bigint',
    ]);
    // Dropping the lookups keeps the schema for the objects.
    await b.dropShard({ host: 'PG001A', shard: 3, fleet: 'lookups' });
    assert.deepEqual(await b.listShards('PG001A', 'objects'), [3]);
    assert.deepEqual(await b.listShards('PG001A', 'lookups'), []);
  } finally {
    await b.close();
    await env.dropAllShards();
  }
});

test('a mapping page is an index scan of (from_id, sequence, to_id), both directions', async () => {
  await env.dropAllShards();
  const b = backend();
  try {
    await b.createShard({ host: 'PG001A', shard: 1, fleet: 'objects' });
    const client = new pg.Client({ host: env.hosts.PG001A!.host, port: env.hosts.PG001A!.port, user: 'postgres', database: DATABASE });
    await client.connect();
    try {
      // 100 lists of 200: enough rows that the planner's choice is the one production gets.
      await client.query(`INSERT INTO db00001.board_has_pins SELECT f, t, t * 7 % 13 FROM generate_series(1, 100) f, generate_series(1, 200) t`);
      await client.query('VACUUM ANALYZE db00001.board_has_pins');
      for (const [cmp, dir] of [['>', 'ASC'], ['<', 'DESC']] as const) {
        const res = await client.query(`EXPLAIN SELECT to_id, "sequence" FROM db00001.board_has_pins WHERE from_id = 1 AND ("sequence", to_id) ${cmp} (5, 7) ORDER BY "sequence" ${dir}, to_id ${dir} LIMIT 50`);
        const text = res.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n');
        assert.match(text, /Index (Only )?Scan( Backward)? using board_has_pins_by_sequence/);
        assert.match(text, /Index Cond: .*ROW\(sequence, to_id\) [<>] ROW\(5, 7\)/);
        assert.doesNotMatch(text, /Sort/);
      }
    } finally {
      await client.end();
    }
  } finally {
    await b.close();
    await env.dropAllShards();
  }
});

test('getObjects sends one round trip per shard, whatever the number of tables and ids', async () => {
  await env.dropAllShards();
  const b = backend();
  try {
    const ref = { host: 'PG001A', shard: 3, fleet: 'objects' as const };
    await b.createShard(ref);
    const keys = [];
    for (let i = 0; i < 10; i++) keys.push({ table: env.schema.types[i % 3]!.table, localId: (await b.insertObject(ref, env.schema.types[i % 3]!.table, `{"i":${i}}`)).localId });
    const before = b.roundTrips().PG001A!;
    const got = await b.getObjects(ref, keys);
    assert.equal(b.roundTrips().PG001A! - before, 1);
    assert.deepEqual(got.map((g) => g?.data), keys.map((_, i) => `{"i":${i}}`));
  } finally {
    await b.close();
    await env.dropAllShards();
  }
});

test('a shard whose schema was never created is SHARD_UNAVAILABLE naming the shard and the fix', async () => {
  await env.dropAllShards();
  const b = backend();
  try {
    for (const call of [
      () => b.insertObject({ host: 'PG002A', shard: 42, fleet: 'objects' }, 'pins', '{}'),
      () => b.getLookup({ host: 'PG002A', shard: 42, fleet: 'lookups' }, 'lookup_email', 'a'),
      () => b.updateObject({ host: 'PG002A', shard: 42, fleet: 'objects' }, 'pins', 1, () => '{}'),
    ]) {
      await assert.rejects(call(), (err) => {
        assert.ok(isShardKitError(err, 'SHARD_UNAVAILABLE'), String(err));
        assert.match(err.message, /shard 42 \(db00042 on PG002A\)/);
        assert.match(err.message, /run `shardkit init`/);
        return true;
      });
    }
  } finally {
    await b.close();
  }
});

test('a missing database is SHARD_UNAVAILABLE telling to create it', async () => {
  const b = new PostgresBackend({ hosts: env.hosts, storage: { user: 'postgres', database: 'no_such_db' }, schema: env.schema });
  try {
    await assert.rejects(b.listShards('PG001A', 'objects'), (err) => {
      assert.ok(isShardKitError(err, 'SHARD_UNAVAILABLE'), String(err));
      assert.match(err.message, /database does not exist: create it/);
      return true;
    });
  } finally {
    await b.close();
  }
});

test('a server that refuses connections is SHARD_UNAVAILABLE at once, naming the shard', async () => {
  const b = new PostgresBackend({ hosts: { Gone: { host: '127.0.0.1', port: 1 } }, storage: { connectTimeoutMs: 500 }, schema: env.schema });
  try {
    await assert.rejects(b.getObjects({ host: 'Gone', shard: 7, fleet: 'objects' }, [{ table: 'pins', localId: 1 }]), (err) => {
      assert.ok(isShardKitError(err, 'SHARD_UNAVAILABLE'));
      assert.equal(err.status, 503);
      assert.match(err.message, /shard 7 \(db00007 on Gone\) is unavailable: ECONNREFUSED/);
      return true;
    });
  } finally {
    await b.close();
  }
});

test('a statement past queryTimeoutMs is SHARD_UNAVAILABLE and the server stops it too (statement_timeout)', { timeout: 30_000 }, async () => {
  await env.dropAllShards();
  const b = backend({ queryTimeoutMs: 500 });
  const ref = { host: 'PG001A', shard: 2, fleet: 'objects' as const };
  const locker = new pg.Client({ host: env.hosts.PG001A!.host, port: env.hosts.PG001A!.port, user: 'postgres', database: DATABASE });
  try {
    await b.createShard(ref);
    const o = await b.insertObject(ref, 'pins', '{"n":0}');
    await locker.connect();
    // Another session holds the row lock: our SELECT ... FOR UPDATE waits until a timeout ends it.
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM db00002.pins WHERE local_id = $1 FOR UPDATE', [o.localId]);
    await assert.rejects(b.updateObject(ref, 'pins', o.localId, () => '{"n":1}'), (err) => {
      assert.ok(isShardKitError(err, 'SHARD_UNAVAILABLE'), String(err));
      assert.match(err.message, /57014|statement timeout/);
      return true;
    });
    // The server cancelled it: no shardkit session is still waiting on the lock.
    const waiting = await locker.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'shardkit' AND wait_event_type = 'Lock'`);
    assert.equal(waiting.rows[0].n, 0);
    await locker.query('ROLLBACK');
    // The same pool works afterwards and the row is unchanged by the failed update.
    assert.equal((await b.updateObject(ref, 'pins', o.localId, () => '{"n":2}'))?.data, '{"n":2}');
  } finally {
    await locker.end().catch(() => undefined);
    await b.close();
    await env.dropAllShards();
  }
});

test('raw NUL in object text (which PostgreSQL text cannot hold) is INVALID_ARGUMENT, not INTERNAL', async () => {
  await env.dropAllShards();
  const b = backend();
  const ref = { host: 'PG001A', shard: 0, fleet: 'objects' as const };
  try {
    await b.createShard(ref);
    await assert.rejects(b.insertObject(ref, 'pins', '{"a":"\u0000"}'), (err) => isShardKitError(err, 'INVALID_ARGUMENT'));
    // JSON.stringify escapes it, which is what ShardKit writes.
    const o = await b.insertObject(ref, 'pins', JSON.stringify({ a: '\u0000' }));
    assert.deepEqual(JSON.parse((await b.getObjects(ref, [{ table: 'pins', localId: o.localId }]))[0]!.data), { a: '\u0000' });
  } finally {
    await b.close();
    await env.dropAllShards();
  }
});

test('named prepared statements: each is parsed once per connection, survives its shard being dropped and created again, and past the bound statements go unnamed', async () => {
  await env.dropAllShards();
  const b = new PostgresBackend({ hosts: env.hosts, storage: { user: 'postgres', database: DATABASE, poolSize: 1 }, schema: env.schema });
  try {
    const ref = { host: 'PG001A', shard: 2, fleet: 'objects' as const };
    await b.createShard(ref);
    const id = (await b.insertObject(ref, 'pins', '{"a":1}')).localId;
    for (let i = 0; i < 3; i++) assert.equal((await b.getObjects(ref, [{ table: 'pins', localId: id }]))[0]?.data, '{"a":1}');
    // The prepared statements refer to tables that go away: the next call is a clean
    // SHARD_UNAVAILABLE, and once the shard exists again the same statements work.
    await b.dropShard(ref);
    await assert.rejects(b.getObjects(ref, [{ table: 'pins', localId: id }]), (e) => isShardKitError(e, 'SHARD_UNAVAILABLE'));
    await b.createShard(ref);
    const again = (await b.insertObject(ref, 'pins', '{"b":2}')).localId;
    assert.equal((await b.getObjects(ref, [{ table: 'pins', localId: again }]))[0]?.data, '{"b":2}');
    // More distinct statements than the bound (256): 48 shards x 6 texts; every one still answers.
    const texts = new Set<string>();
    for (let shard = 0; shard < 48; shard++) {
      const r = { host: 'PG001A', shard, fleet: 'objects' as const };
      await b.createShard(r);
      const m = env.schema.mappings[0]!.table;
      assert.deepEqual(await b.listMappings(r, m, 1n, { limit: 5, order: 'asc' }), []);
      assert.equal(await b.countMappings(r, m, 1n), 0);
      texts.add(`${shard}:list`).add(`${shard}:count`);
      for (const t of env.schema.types) {
        assert.deepEqual(await b.getObjects(r, [{ table: t.table, localId: 999_999 }]), [undefined]);
        texts.add(`${shard}:${t.table}`);
      }
    }
    assert.ok(texts.size > 256, String(texts.size));
    // The named ones (the first 256) still work after the unnamed ones.
    assert.equal((await b.getObjects(ref, [{ table: 'pins', localId: again }]))[0]?.data, '{"b":2}');
  } finally {
    await b.close();
    await env.dropAllShards();
  }
});
