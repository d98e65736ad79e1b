import type pg from 'pg';
import { ShardKitError } from '../../errors.js';
import type { ShardMap } from '../../topology/shard-map.js';
import type { DevCluster } from '../dev/dev-cluster.js';
import { PG_DATABASE, pgServer } from '../dev/dev-postgres.js';
import { liveShardMap } from '../dev/dev-writable.js';
import { openPgFleet } from '../failover/pg-fleet-failover.js';
import { superuserQuery } from '../postgres/postgres-instance.js';

/** One statement on a server as a superuser, in `database` (default postgres). */
export interface PgSql {
  sql<T extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[], database?: string): Promise<T[]>;
}

/**
 * How the PostgreSQL backup engine reaches a fleet's servers: a dev cluster's (local, its
 * datadirs at hand: a restore replaces them) or a config's (over the network as
 * SHARDKIT_ADMIN_USER, as failover does: a restore loads the data through SQL).
 */
export interface PgAccess {
  /** The database the shards live in (the config's storage.database). */
  readonly database: string;
  /** Set when the servers are a dev cluster's, on this machine. */
  readonly dev?: DevCluster;
  map(): Promise<ShardMap>;
  server(host: string): PgSql;
  /** Connection arguments of pg_basebackup, pg_receivewal and psql for `host` as the admin user. */
  clientArgs(host: string): string[];
  /** The tools' environment (the admin password, never on a command line). */
  toolEnv(): NodeJS.ProcessEnv;
  close(): Promise<void>;
}

export function devPgAccess(cluster: DevCluster): PgAccess {
  return {
    database: PG_DATABASE,
    dev: cluster,
    map: () => liveShardMap(cluster),
    server: (host) => pgServer(cluster, host),
    clientArgs: (host) => {
      const s = pgServer(cluster, host);
      return ['-h', s.host, '-p', String(s.port), '-U', 'postgres'];
    },
    toolEnv: () => process.env,
    close: async () => undefined,
  };
}

/** A config's PostgreSQL fleet, as failover opens it (INVALID_ARGUMENT without SHARDKIT_ADMIN_USER). */
export function fleetPgAccess(options: { config: string; dataDir?: string; env?: NodeJS.ProcessEnv }): PgAccess {
  const f = openPgFleet(options);
  const user = f.env.SHARDKIT_ADMIN_USER!;
  const password = f.env.SHARDKIT_ADMIN_PASSWORD;
  const storage = f.config.storage as { database?: string };
  const database = storage.database ?? 'shardkit';
  return {
    database,
    map: () => f.map(),
    server: (host) => {
      const at = f.address(host);
      return {
        // No query timeout: the row counts and checksums of a large table take minutes.
        sql: <T extends pg.QueryResultRow>(text: string, values?: unknown[], db = 'postgres') =>
          superuserQuery<T>({ ...at, database: db, user, ...(password !== undefined ? { password } : {}), connectTimeoutMs: 10_000 }, text, values).catch((err: Error) => {
            if (err instanceof ShardKitError) throw err;
            throw new ShardKitError('SHARD_UNAVAILABLE', `${host} (${at.host}:${at.port}): ${err.message}`, { cause: err });
          }),
      };
    },
    clientArgs: (host) => {
      const at = f.address(host);
      return ['-h', at.host, '-p', String(at.port), '-U', user];
    },
    toolEnv: () => ({ ...process.env, ...(password !== undefined ? { PGPASSWORD: password } : {}) }),
    close: () => f.close(),
  };
}
