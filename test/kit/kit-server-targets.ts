/** The server targets of the ShardKit-level suite (see kit-targets.ts). */
import { createHash } from 'node:crypto';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { MysqlBackend } from '../../src/storage/mysql/index.js';
import { PostgresBackend } from '../../src/storage/postgres/index.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { DATABASE, startPostgresServers } from '../storage/postgres-servers.js';
import { createShards, HOST_A, HOST_B, kitOver, kitSchema, type KitTarget } from './kit-targets.js';

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
    // Waiting for one of the 4 pooled connections is bounded by connectTimeoutMs: generous here, so
    // 50 concurrent updates on one row (serialized by its lock) never depend on how fast a loaded
    // machine runs them. A hang guard, not a speed check.
    const storage = { user: s.user, ...(s.password !== undefined ? { password: s.password } : {}), poolSize: 4, connectTimeoutMs: 60_000 };
    const admin = new MysqlBackend({ hosts, storage, schema: kitSchema });
    await createShards(admin);
    await admin.close();
    const conns = await Promise.all(Object.values(hosts).map((h) => mysql.createConnection({ ...h, user: storage.user, ...(storage.password !== undefined ? { password: storage.password } : {}) })));
    return {
      name: 'mariadb',
      serverPools: true,
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
    const storage = { user: 'postgres', database: DATABASE, poolSize: 4, connectTimeoutMs: 60_000 };
    const admin = new PostgresBackend({ hosts, storage, schema: kitSchema });
    await createShards(admin);
    await admin.close();
    const clients = Object.values(hosts).map((h) => new pg.Client({ ...h, user: 'postgres', database: DATABASE }));
    await Promise.all(clients.map((c) => c.connect()));
    return {
      name: 'postgres',
      serverPools: true,
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
