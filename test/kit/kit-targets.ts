/**
 * The backends the ShardKit-level suite (kit-suite.ts) runs on, one server set per test file:
 * SQLite files in a temp dir, a MariaDB dev cluster, two PostgreSQL servers. Each target serves
 * the same shard map, so the suite never asks which database it talks to.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { Cache } from '../../src/cache/index.js';
import { defaultConfig, resolveSchema } from '../../src/config/config.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import type { SchemaDef, ShardBackend } from '../../src/storage/shard-backend.js';
import { MysqlBackend } from '../../src/storage/mysql/index.js';
import { PostgresBackend } from '../../src/storage/postgres/index.js';
import { SqliteBackend } from '../../src/storage/sqlite/index.js';
import { MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap } from '../../src/topology/shard-map.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { DATABASE, startPostgresServers } from '../storage/postgres-servers.js';
import { snapshot as sqliteSnapshot } from './kit-fixture.js';

export const HOST_A = 'HOSTA';
export const HOST_B = 'HOSTB';
/** Object shards 0..3 on HOST_A and 128..131 on HOST_B (IDs there are above 2^53); 8 mod shards. */
export const OBJECT_SHARDS = { [HOST_A]: [0, 1, 2, 3], [HOST_B]: [128, 129, 130, 131] } as const;
export const MOD_SHARDS = 8;

export const kitSchema: SchemaDef = resolveSchema({ schema: defaultConfig().schema } as Parameters<typeof resolveSchema>[0]);

export function kitShardMap(): ShardMap {
  return ShardMap.fromJSON({
    version: 1,
    ranges: [
      { range: [0, 3], master: HOST_A, slave: 'HOSTA2', open: true },
      // Never opened, never created: only there so that 128..131 follow.
      { range: [4, 127], master: HOST_A, slave: 'HOSTA2', open: false },
      { range: [128, 131], master: HOST_B, slave: 'HOSTB2', open: true },
    ],
    modShards: {
      count: MOD_SHARDS,
      ranges: [
        { range: [0, 3], master: HOST_A, slave: 'HOSTA2' },
        { range: [4, 7], master: HOST_B, slave: 'HOSTB2' },
      ],
    },
  });
}

export interface KitTarget {
  name: string;
  /** A fresh ShardKit (and backend) over the target's shards; close() closes both. */
  open(options?: { cache?: Cache }): Promise<ShardKit>;
  /** A digest of every stored row: equal before and after means nothing was written. */
  snapshot(): Promise<string>;
  stop(): Promise<void>;
}

function kitOver(backend: ShardBackend, cache?: Cache): ShardKit {
  return new ShardKit({ backend, schema: kitSchema, topology: new MemoryTopologyStore(), shardMap: kitShardMap(), ownsResources: true, ...(cache ? { cache } : {}) });
}

async function createShards(backend: ShardBackend): Promise<void> {
  for (const [host, shards] of Object.entries(OBJECT_SHARDS)) for (const shard of shards) await backend.createShard({ host, shard, fleet: 'objects' });
  for (let shard = 0; shard < MOD_SHARDS; shard++) await backend.createShard({ host: shard < 4 ? HOST_A : HOST_B, shard, fleet: 'lookups' });
}

export async function sqliteTarget(): Promise<KitTarget> {
  const root = mkdtempSync(join(tmpdir(), 'shardkit-kitsuite-'));
  return {
    name: 'sqlite',
    open: async (options = {}) => kitOver(new SqliteBackend({ root, schema: kitSchema, maxOpenShards: 8 }), options.cache),
    snapshot: async () => sqliteSnapshot(root),
    stop: async () => rmSync(root, { recursive: true, force: true }),
  };
}

/** A MariaDB dev cluster: both names map to its two masters. */
export async function mariadbTarget(): Promise<KitTarget> {
  const started = await startTestCluster({ pairs: 2, shards: 2, skipInit: true, prefix: 'shardkit-kitsuite-my-' });
  try {
    const config = started.cluster.config();
    const [a, b] = Object.keys(config.hosts).filter((h) => /A$/.test(h)).sort();
    const address = (name: string) => ({ host: config.hosts[name]!.host!, port: config.hosts[name]!.port! });
    const hosts = { [HOST_A]: address(a!), [HOST_B]: address(b!) };
    const s = config.storage;
    if (s.backend !== 'mysql') throw new Error('dev cluster config is not mysql');
    const storage = { user: s.user, ...(s.password !== undefined ? { password: s.password } : {}), poolSize: 4 };
    const admin = new MysqlBackend({ hosts, storage, schema: kitSchema });
    await createShards(admin);
    await admin.close();
    const conns = await Promise.all(Object.values(hosts).map((h) => mysql.createConnection({ ...h, user: storage.user, ...(storage.password !== undefined ? { password: storage.password } : {}) })));
    return {
      name: 'mariadb',
      open: async (options = {}) => kitOver(new MysqlBackend({ hosts, storage, schema: kitSchema }), options.cache),
      snapshot: async () => {
        const hash = createHash('sha1');
        for (const c of conns) {
          const [tables] = await c.query("SELECT CONCAT('`', TABLE_SCHEMA, '`.`', TABLE_NAME, '`') AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA LIKE 'db%' ORDER BY 1");
          const names = (tables as Array<{ t: string }>).map((r) => r.t);
          hash.update(names.join(','));
          if (names.length > 0) {
            const [sums] = await c.query(`CHECKSUM TABLE ${names.join(', ')} EXTENDED`);
            hash.update(JSON.stringify(sums));
          }
        }
        return hash.digest('hex');
      },
      stop: async () => {
        await Promise.all(conns.map((c) => c.end()));
        await started.stop();
      },
    };
  } catch (err) {
    await started.stop();
    throw err;
  }
}

/** Two PostgreSQL servers. */
export async function postgresTarget(): Promise<KitTarget> {
  const env = await startPostgresServers();
  try {
    const [a, b] = ['PG001A', 'PG002A'].map((n) => env.hosts[n]!);
    const hosts = { [HOST_A]: a!, [HOST_B]: b! };
    const storage = { user: 'postgres', database: DATABASE, poolSize: 4 };
    const admin = new PostgresBackend({ hosts, storage, schema: kitSchema });
    await createShards(admin);
    await admin.close();
    const clients = Object.values(hosts).map((h) => new pg.Client({ ...h, user: 'postgres', database: DATABASE }));
    await Promise.all(clients.map((c) => c.connect()));
    return {
      name: 'postgres',
      open: async (options = {}) => kitOver(new PostgresBackend({ hosts, storage, schema: kitSchema }), options.cache),
      snapshot: async () => {
        const hash = createHash('sha1');
        for (const c of clients) {
          const tables = await c.query<{ t: string }>("SELECT format('%I.%I', schemaname, tablename) AS t FROM pg_tables WHERE schemaname ~ '^db[0-9]{5}$' ORDER BY 1");
          for (const { t } of tables.rows) {
            const sum = await c.query<{ h: string | null }>(`SELECT md5(string_agg(x::text, ',' ORDER BY x::text)) AS h FROM ${t} x`);
            hash.update(`${t}:${sum.rows[0]!.h ?? '-'}`);
          }
        }
        return hash.digest('hex');
      },
      stop: async () => {
        await Promise.all(clients.map((c) => c.end()));
        await env.stop();
      },
    };
  } catch (err) {
    await env.stop();
    throw err;
  }
}
