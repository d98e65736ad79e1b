import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveSchema } from '../../src/config/config.js';
import { isShardKitError } from '../../src/errors.js';
import { MysqlBackend } from '../../src/storage/mysql/index.js';
import * as shardkit from '../../src/index.js';
import type { SchemaDef } from '../../src/storage/shard-backend.js';
import { runStorageSuite } from '../conformance/storage-suite.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';

// One real cluster (2 pairs, GTID replication) for the whole file; every fixture starts from
// servers without shard databases, so each suite test is isolated.
let stopCluster: (() => Promise<void>) | undefined;
let hosts: Record<string, { host: string; port: number }> = {};
let storage: { user: string; password?: string } = { user: 'root' };
let schema: SchemaDef;
let shardMapJson: unknown;
let admin: MysqlBackend;
const HOSTS = ['MySQL001A', 'MySQL002A'];

before(async () => {
  const started = await startTestCluster({ pairs: 2, shards: 4, skipInit: true, prefix: 'shardkit-mysql-' });
  stopCluster = started.stop;
  const config = started.cluster.config();
  schema = resolveSchema(config);
  shardMapJson = config.shardMap;
  hosts = Object.fromEntries(Object.entries(config.hosts).map(([name, h]) => [name, { host: h.host!, port: h.port! }]));
  const s = config.storage;
  if (s.backend !== 'mysql') throw new Error('dev cluster config is not mysql');
  storage = { user: s.user, ...(s.password !== undefined ? { password: s.password } : {}) };
  admin = new MysqlBackend({ hosts, storage, schema });
});

after(async () => {
  await admin?.close();
  await stopCluster?.();
});

/** Drops every shard database on both masters (replicated to the slaves). */
async function dropAllShards(): Promise<void> {
  for (const host of HOSTS) {
    for (const fleet of ['objects', 'lookups'] as const) {
      for (const shard of (await admin.tablesOnHost(host)).keys()) await admin.dropShard({ host, shard, fleet });
    }
  }
}

runStorageSuite({
  name: 'mysql (MariaDB dev cluster)',
  factory: async () => {
    await dropAllShards();
    return {
      // connectTimeoutMs also bounds the wait for a pooled connection (see postgres.test.ts).
      backend: new MysqlBackend({ hosts, storage: { ...storage, poolSize: 4, connectTimeoutMs: 60_000 }, schema }),
      schema,
      hosts: HOSTS,
      cleanup: dropAllShards,
    };
  },
});

test('getObjects sends one round trip per shard, whatever the number of tables and ids', async () => {
  await dropAllShards();
  const backend = new MysqlBackend({ hosts, storage, schema });
  try {
    const ref = { host: 'MySQL001A', shard: 3, fleet: 'objects' as const };
    await backend.createShard(ref);
    const keys = [];
    for (let i = 0; i < 10; i++) keys.push({ table: schema.types[i % 3]!.table, localId: (await backend.insertObject(ref, schema.types[i % 3]!.table, `{"i":${i}}`)).localId });
    const before = backend.roundTrips().MySQL001A!;
    const got = await backend.getObjects(ref, keys);
    assert.equal(backend.roundTrips().MySQL001A! - before, 1);
    assert.deepEqual(got.map((g) => g?.data), keys.map((_, i) => `{"i":${i}}`));
  } finally {
    await backend.close();
    await dropAllShards();
  }
});

test('a shard whose database was never created is SHARD_UNAVAILABLE naming the shard and the fix', async () => {
  await dropAllShards();
  const backend = new MysqlBackend({ hosts, storage, schema });
  try {
    await assert.rejects(backend.insertObject({ host: 'MySQL002A', shard: 42, fleet: 'objects' }, 'pins', '{}'), (err) => {
      assert.ok(isShardKitError(err, 'SHARD_UNAVAILABLE'));
      assert.match(err.message, /shard 42 \(db00042 on MySQL002A\)/);
      assert.match(err.message, /run `shardkit init`/);
      return true;
    });
  } finally {
    await backend.close();
  }
});

test('a server that refuses connections is SHARD_UNAVAILABLE at once, naming the shard', async () => {
  const backend = new MysqlBackend({ hosts: { Gone: { host: '127.0.0.1', port: 1 } }, storage: { ...storage, connectTimeoutMs: 500 }, schema });
  try {
    await assert.rejects(backend.getObjects({ host: 'Gone', shard: 7, fleet: 'objects' }, [{ table: 'pins', localId: 1 }]), (err) => {
      assert.ok(isShardKitError(err, 'SHARD_UNAVAILABLE'));
      assert.equal(err.status, 503);
      assert.match(err.message, /shard 7 \(db00007 on Gone\) is unavailable/);
      return true;
    });
  } finally {
    await backend.close();
  }
});

test('the package root exports MysqlBackend: a ShardKit on MariaDB built from parts, as docs/mysql.md shows', async () => {
  await dropAllShards();
  assert.equal(shardkit.MysqlBackend, MysqlBackend);
  const backend = new shardkit.MysqlBackend({ hosts, storage: { ...storage, poolSize: 2 }, schema });
  const map = shardkit.ShardMap.fromJSON(shardMapJson);
  for (const [ranges, fleet] of [[map.objectRanges(), 'objects'], [map.modShardRanges(), 'lookups']] as const) {
    for (const r of ranges) for (let shard = r.range[0]; shard <= r.range[1]; shard++) await backend.createShard({ host: r.master, shard, fleet });
  }
  const kit = new shardkit.ShardKit({ backend, schema, shardMap: map });
  try {
    const pin = await kit.objects.create('pin', { details: 'sourdough' });
    await kit.lookups.put('email', 'ann@example.com', pin.id);
    assert.equal(await kit.lookups.get('email', 'ann@example.com'), pin.id);
    assert.deepEqual((await kit.objects.get(pin.id)).data, { details: 'sourdough' });
    assert.equal(kit.backend.kind, 'mysql');
  } finally {
    await kit.close();
    await backend.close();
    await dropAllShards();
  }
});
