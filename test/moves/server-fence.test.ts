/**
 * The service side of a shard move on real MariaDB and PostgreSQL servers (the movers for these
 * engines are not built yet: the move is done by hand here, the way the research measured it).
 * - A service whose watch is paused across the cutover meets the fence on the old master (MariaDB:
 *   tables renamed into dbNNNNN_moved, ER_NO_SUCH_TABLE; PostgreSQL: schema renamed, 42P01),
 *   re-reads the map and writes to the new master once. The old host gets nothing.
 *   The storage layer reports that missing table as SHARD_FENCED (the shard's dbNNNNN_moved is there).
 * - A table missing without any move is still reported as it was (SHARD_UNAVAILABLE, run init).
 * - A write to a frozen shard is held and, past the budget, refused with SHARD_MOVING: nothing written.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { isShardKitError } from '../../src/errors.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { MysqlBackend } from '../../src/storage/mysql/index.js';
import { PostgresBackend } from '../../src/storage/postgres/index.js';
import type { SchemaDef, ShardBackend } from '../../src/storage/shard-backend.js';
import { resolveSchema } from '../../src/config/config.js';
import { MemoryTopologyBacking, MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap, type ShardMapJson } from '../../src/topology/shard-map.js';
import type { TopologyStore } from '../../src/topology/topology-store.js';
import { addMove, advanceMove, casMoveState, freezeMove, switchMove } from '../../src/moves/move-state.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { startPostgresServers } from '../storage/postgres-servers.js';

interface Engine {
  name: string;
  schema: SchemaDef;
  map: ShardMapJson;
  source: string;
  target: { master: string; slave: string };
  backend(): ShardBackend;
  /** The fence, by hand: the shard's tables out of reach on `host`. */
  fence(host: string, shard: number): Promise<void>;
  /** Copies one object row of the fenced source to the target (the mover's copy, by hand). */
  copyRow(table: string, shard: number, localId: number): Promise<void>;
  rows(host: string, table: string, shard: number, moved: boolean): Promise<Array<{ local_id: number; data: string }>>;
  dropTable(host: string, table: string, shard: number): Promise<void>;
  stop(): Promise<void>;
}

const db = (shard: number) => `db${String(shard).padStart(5, '0')}`;

async function mariadb(): Promise<Engine> {
  const started = await startTestCluster({ pairs: 2, shards: 8, prefix: 'shardkit-move-fence-' });
  const config = started.cluster.config();
  if (config.storage.backend !== 'mysql') throw new Error('dev cluster config is not mysql');
  const storage = { user: config.storage.user, ...(config.storage.password !== undefined ? { password: config.storage.password } : {}) };
  const hosts = Object.fromEntries(Object.entries(config.hosts).map(([name, h]) => [name, { host: h.host!, port: h.port! }]));
  const schema = resolveSchema(config);
  const conn = (host: string) => mysql.createConnection({ host: hosts[host]!.host, port: hosts[host]!.port, user: storage.user, ...(storage.password !== undefined ? { password: storage.password } : {}) });
  const tables = [...schema.types.map((t) => t.table), ...schema.mappings.map((m) => m.table)];
  const backends: ShardBackend[] = [];
  return {
    name: 'MariaDB', schema, map: config.shardMap as ShardMapJson, source: 'MySQL001A', target: { master: 'MySQL002A', slave: 'MySQL002B' },
    backend: () => {
      const b = new MysqlBackend({ hosts, storage, schema });
      backends.push(b);
      return b;
    },
    fence: async (host, shard) => {
      // As the server's admin: sql_log_bin needs a privilege the application user no longer has.
      // Not replicated: the slave keeps its copy until drop-moved (what the mover will do).
      await started.cluster.instance(host).admin(
        'SET sql_log_bin = 0',
        `CREATE DATABASE IF NOT EXISTS \`${db(shard)}_moved\``,
        `RENAME TABLE ${tables.map((t) => `\`${db(shard)}\`.\`${t}\` TO \`${db(shard)}_moved\`.\`${t}\``).join(', ')}`,
      );
    },
    copyRow: async (table, shard, localId) => {
      const admin = new MysqlBackend({ hosts, storage, schema });
      await admin.createShard({ host: 'MySQL002A', shard, fleet: 'objects' });
      await admin.close();
      const src = await conn('MySQL001A');
      const dst = await conn('MySQL002A');
      try {
        const [rows] = await src.query(`SELECT local_id, data, ts FROM \`${db(shard)}_moved\`.\`${table}\` WHERE local_id = ?`, [localId]);
        const r = (rows as Array<{ local_id: number; data: string; ts: Date }>)[0]!;
        await dst.query(`INSERT INTO \`${db(shard)}\`.\`${table}\` (local_id, data, ts) VALUES (?, ?, ?)`, [r.local_id, r.data, r.ts]);
      } finally {
        await src.end();
        await dst.end();
      }
    },
    rows: async (host, table, shard, moved) => {
      const c = await conn(host);
      try {
        const [rows] = await c.query(`SELECT local_id, data FROM \`${db(shard)}${moved ? '_moved' : ''}\`.\`${table}\` ORDER BY local_id`);
        return (rows as Array<{ local_id: number | string; data: string }>).map((r) => ({ local_id: Number(r.local_id), data: r.data }));
      } finally {
        await c.end();
      }
    },
    dropTable: async (host, table, shard) => {
      const c = await conn(host);
      try {
        await c.query(`DROP TABLE \`${db(shard)}\`.\`${table}\``);
      } finally {
        await c.end();
      }
    },
    stop: async () => {
      for (const b of backends) await b.close();
      await started.stop();
    },
  };
}

async function postgres(): Promise<Engine> {
  const servers = await startPostgresServers();
  const config = servers.config();
  const map = config.shardMap as ShardMapJson;
  const backends: ShardBackend[] = [];
  const client = async (host: string) => {
    const c = new pg.Client({ host: servers.hosts[host]!.host, port: servers.hosts[host]!.port, user: 'postgres', database: 'shardkit' });
    await c.connect();
    return c;
  };
  // Every shard on its master.
  const init = servers.admin;
  for (const r of map.ranges) for (let s = r.range[0]; s <= r.range[1]; s++) await init.createShard({ host: r.master, shard: s, fleet: 'objects' });
  for (const r of map.modShards.ranges) for (let s = r.range[0]; s <= r.range[1]; s++) await init.createShard({ host: r.master, shard: s, fleet: 'lookups' });
  return {
    name: 'PostgreSQL', schema: servers.schema, map, source: 'PG001A', target: { master: 'PG002A', slave: 'PG002B' },
    backend: () => {
      const b = new PostgresBackend({ hosts: servers.hosts, storage: { user: 'postgres', database: 'shardkit' }, schema: servers.schema });
      backends.push(b);
      return b;
    },
    fence: async (host, shard) => {
      const c = await client(host);
      try {
        await c.query(`ALTER SCHEMA ${db(shard)} RENAME TO ${db(shard)}_moved`);
      } finally {
        await c.end();
      }
    },
    copyRow: async (table, shard, localId) => {
      await init.createShard({ host: 'PG002A', shard, fleet: 'objects' });
      const src = await client('PG001A');
      const dst = await client('PG002A');
      try {
        const r = (await src.query(`SELECT local_id, data, ts FROM ${db(shard)}_moved.${table} WHERE local_id = $1`, [localId])).rows[0] as { local_id: string; data: string; ts: string };
        await dst.query(`INSERT INTO ${db(shard)}.${table} (local_id, data, ts) OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3)`, [r.local_id, r.data, r.ts]);
      } finally {
        await src.end();
        await dst.end();
      }
    },
    rows: async (host, table, shard, moved) => {
      const c = await client(host);
      try {
        return (await c.query(`SELECT local_id, data FROM ${db(shard)}${moved ? '_moved' : ''}.${table} ORDER BY local_id`)).rows.map((r: { local_id: string; data: string }) => ({ local_id: Number(r.local_id), data: r.data }));
      } finally {
        await c.end();
      }
    },
    dropTable: async (host, table, shard) => {
      const c = await client(host);
      try {
        await c.query(`DROP TABLE ${db(shard)}.${table}`);
      } finally {
        await c.end();
      }
    },
    stop: async () => {
      for (const b of backends) await b.close();
      await servers.stop();
    },
  };
}

for (const make of [mariadb, postgres]) {
  describe(`moves on ${make === mariadb ? 'MariaDB' : 'PostgreSQL'}: the service side`, () => {
    let e: Engine;
    let backing: MemoryTopologyBacking;
    const kits: ShardKit[] = [];
    const stores: TopologyStore[] = [];
    const service = async (paused: boolean): Promise<ShardKit> => {
      const mem = new MemoryTopologyStore({ backing });
      stores.push(mem);
      const topology: TopologyStore = paused ? { read: () => mem.read(), write: (m, v) => mem.write(m, v), watch: () => () => {}, close: async () => {} } : mem;
      const kit = new ShardKit({ backend: e.backend(), schema: e.schema, topology });
      await kit.ready();
      kits.push(kit);
      return kit;
    };

    before(async () => {
      e = await make();
      backing = new MemoryTopologyBacking(ShardMap.fromJSON(e.map));
    });
    after(async () => {
      for (const k of kits) await k.close();
      for (const s of stores) await s.close();
      await e?.stop();
    });

    test('a service with a paused watch meets the fence on the old master, re-reads the map and writes to the new one', async () => {
      const stale = await service(true);
      const board = await stale.objects.create('board', { v: 1 }, { shard: 1 });
      const store = new MemoryTopologyStore({ backing });
      stores.push(store);
      const target = e.target;
      await casMoveState(store, (m) => addMove(m, { id: 'fence-1', span: { first: 1, last: 1 }, target }));
      await casMoveState(store, (m) => advanceMove(m, 'fence-1', ['started'], 'copied'));
      await casMoveState(store, (m) => freezeMove(m, 'fence-1'));
      await e.fence(e.source, 1);
      await casMoveState(store, (m) => advanceMove(m, 'fence-1', ['frozen'], 'fenced'));
      await e.copyRow('boards', 1, pinterestId.decode(board.id).localId);
      await casMoveState(store, (m) => switchMove(m, 'fence-1'));
      assert.equal((await stale.shardMap()).locate(1).master, e.source, 'the stale service has not seen the switch');

      await stale.objects.patch(board.id, { v: 2 });
      assert.equal((await stale.shardMap()).locate(1).master, target.master);
      assert.deepEqual(await e.rows(e.source, 'boards', 1, true), [{ local_id: pinterestId.decode(board.id).localId, data: '{"v":1}' }], 'the old master got nothing');
      assert.deepEqual((await e.rows(target.master, 'boards', 1, false)).map((r) => JSON.parse(r.data)), [{ v: 2 }]);
      // A second stale service creating on the moved shard: the insert goes to the target too.
      const stale2 = await service(true);
      (stale2 as unknown as { ctx: { current: ShardMap } }).ctx.current = ShardMap.fromJSON(e.map);
      const pin = await stale2.objects.create('pin', { late: true }, { shard: 1 });
      assert.ok((await e.rows(target.master, 'pins', 1, false)).some((r) => r.local_id === pinterestId.decode(pin.id).localId));
      assert.deepEqual(await e.rows(e.source, 'pins', 1, true), []);
      // The storage layer itself names the fence: a call on the old master is SHARD_FENCED (503), not "run init".
      const backend = e.backend();
      await assert.rejects(backend.getObjects({ host: e.source, shard: 1, fleet: 'objects' }, [{ table: 'boards', localId: pinterestId.decode(board.id).localId }]),
        (err) => isShardKitError(err, 'SHARD_FENCED') && err.status === 503 && /fenced by a shard move/.test(err.message) && err.details?.missingTable === true);
    });

    test('a table missing without a move is reported as before (SHARD_UNAVAILABLE, run init), not as a move', async () => {
      const kit = await service(false);
      await e.dropTable(e.source, 'comments', 2);
      await assert.rejects(kit.objects.create('comment', {}, { shard: 2 }), (err) => isShardKitError(err, 'SHARD_UNAVAILABLE') && /shardkit init/.test(err.message));
      await assert.rejects(e.backend().getObjects({ host: e.source, shard: 2, fleet: 'objects' }, [{ table: 'comments', localId: 1 }]), (err) => isShardKitError(err, 'SHARD_UNAVAILABLE') && /shardkit init/.test(err.message));
    });

    test('a write to a frozen shard is held, then refused with SHARD_MOVING past the budget; nothing is written, reads go on', async () => {
      const kit = await service(false);
      const board = await kit.objects.create('board', { v: 1 }, { shard: 3 });
      const store = new MemoryTopologyStore({ backing });
      stores.push(store);
      await casMoveState(store, (m) => addMove(m, { id: 'hold-3', span: { first: 3, last: 3 }, target: e.target, holdMs: 2000 }));
      await casMoveState(store, (m) => advanceMove(m, 'hold-3', ['started'], 'copied'));
      const before = await e.rows(e.source, 'boards', 3, false);
      await casMoveState(store, (m) => freezeMove(m, 'hold-3'));
      const held = await Promise.allSettled([kit.objects.patch(board.id, { v: 2 }), kit.objects.create('board', {}, { shard: 3 })]);
      for (const r of held) assert.ok(r.status === 'rejected' && isShardKitError(r.reason, 'SHARD_MOVING'), String((r as PromiseRejectedResult).reason));
      assert.deepEqual((await kit.objects.get(board.id)).data, { v: 1 });
      assert.deepEqual(await e.rows(e.source, 'boards', 3, false), before);
    });
  });
}
