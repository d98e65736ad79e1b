import { parseConfig, resolveSchema, defaultConfig, type ShardKitConfig } from '../../src/config/config.js';
import { PostgresInstance } from '../../src/ops/postgres/postgres-instance.js';
import { PostgresBackend } from '../../src/storage/postgres/index.js';
import type { SchemaDef } from '../../src/storage/shard-backend.js';

export const PG_HOSTS = ['PG001A', 'PG002A'];
export const DATABASE = 'shardkit';

export interface PostgresServers {
  servers: PostgresInstance[];
  /** Master name -> address; the slaves (never queried) point at the same servers. */
  hosts: Record<string, { host: string; port: number }>;
  schema: SchemaDef;
  /** A validated postgres config over both servers: 8 object shards and 8 mod shards, both fleets on each master. */
  config(storage?: { connectTimeoutMs?: number; queryTimeoutMs?: number; poolSize?: number }, shardMap?: unknown): ShardKitConfig;
  /** A backend for admin work (dropping every shard schema between tests). */
  admin: PostgresBackend;
  dropAllShards(): Promise<void>;
  stop(): Promise<void>;
}

/** Two real PostgreSQL 15 servers (initdb in temp dirs, 127.0.0.1, trust auth), each with the database `shardkit`. */
export async function startPostgresServers(): Promise<PostgresServers> {
  const servers = await Promise.all(PG_HOSTS.map(() => PostgresInstance.start({ databases: [DATABASE] })));
  const hosts: Record<string, { host: string; port: number }> = {};
  PG_HOSTS.forEach((name, i) => {
    hosts[name] = { host: servers[i]!.host, port: servers[i]!.port };
    hosts[name.replace(/A$/, 'B')] = { host: servers[i]!.host, port: servers[i]!.port };
  });
  const schemaConfig = defaultConfig().schema;
  const config: PostgresServers['config'] = (storage = {}, shardMap) => parseConfig({
    storage: { backend: 'postgres', user: 'postgres', database: DATABASE, ...storage },
    hosts,
    shardMap: shardMap ?? {
      version: 1,
      ranges: [
        { range: [0, 3], master: 'PG001A', slave: 'PG001B', open: true },
        { range: [4, 7], master: 'PG002A', slave: 'PG002B', open: true },
      ],
      modShards: {
        count: 8,
        ranges: [
          { range: [0, 3], master: 'PG001A', slave: 'PG001B' },
          { range: [4, 7], master: 'PG002A', slave: 'PG002B' },
        ],
      },
    },
    topologyStore: { kind: 'memory' },
    schema: schemaConfig,
  });
  const schema = resolveSchema(config());
  const admin = new PostgresBackend({ hosts, storage: { user: 'postgres', database: DATABASE, poolSize: 2 }, schema });
  const dropAllShards = async () => {
    for (const host of PG_HOSTS) {
      for (const shard of (await admin.tablesOnHost(host)).keys()) await admin.dropShard({ host, shard, fleet: 'objects' });
      for (const shard of (await admin.tablesOnHost(host)).keys()) await admin.dropShard({ host, shard, fleet: 'lookups' });
    }
  };
  return {
    servers,
    hosts,
    schema,
    config,
    admin,
    dropAllShards,
    stop: async () => {
      await admin.close();
      await Promise.all(servers.map((s) => s.destroy()));
    },
  };
}
