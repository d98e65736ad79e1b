/**
 * What the MariaDB move tests read on the servers behind the mover's back: one statement on a
 * short-lived connection (as the service user, or as admin), the tables of a database, the local
 * ids of a table, and the move's replication connections. The hosts and credentials are given as
 * getters, because the tests learn them in `before`.
 */
import mysql from 'mysql2/promise';
import type { HostAdmin } from '../../src/ops/failover/host-admin.js';

type Hosts = Record<string, { host: string; port: number }>;
type Storage = { user: string; password?: string };
type Query = <T>(host: string, sql: string, params?: unknown[]) => Promise<T[]>;

export interface MariadbProbe {
  query: Query;
  tablesIn(host: string, database: string): Promise<string[]>;
  /** Local ids of `database`.`table` in order (the query fails when the table is not there). */
  ids(host: string, database: string, table: string): Promise<string[]>;
}

function probeOver(query: Query): MariadbProbe {
  const tablesIn = async (host: string, database: string): Promise<string[]> =>
    (await query<{ t: string }>(host, 'SELECT TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME', [database])).map((r) => r.t);
  return {
    query,
    tablesIn,
    ids: async (host, database, table) =>
      (await query<{ id: string }>(host, `SELECT local_id AS id FROM \`${database}\`.\`${table}\` ORDER BY local_id`)).map((r) => String(r.id)),
  };
}

/** A connection as the service user (what a service can see), big numbers as strings. */
export function userConnection(hosts: Hosts, storage: Storage, host: string): Promise<mysql.Connection> {
  return mysql.createConnection({ host: hosts[host]!.host, port: hosts[host]!.port, user: storage.user, ...(storage.password !== undefined ? { password: storage.password } : {}), supportBigNumbers: true, bigNumberStrings: true });
}

/** Statements as the service user. */
export function userProbe(hosts: () => Hosts, storage: () => Storage): MariadbProbe {
  return probeOver(async <T>(host: string, sql: string, params: unknown[] = []): Promise<T[]> => {
    const c = await userConnection(hosts(), storage(), host);
    try {
      return (await c.query(sql, params))[0] as T[];
    } finally {
      await c.end();
    }
  });
}

/** Statements as admin, plus the move's replication connections (`move_*`) on a host. */
export function adminProbe(admin: () => HostAdmin): MariadbProbe & { moveConnections(host: string): Promise<string[]> } {
  const probe = probeOver(async <T>(host: string, sql: string, params: unknown[] = []): Promise<T[]> => {
    const c = await admin().connect(host);
    try {
      return (await c.query(sql, params))[0] as T[];
    } finally {
      await c.end();
    }
  });
  return {
    ...probe,
    moveConnections: async (host) => (await probe.query<{ Connection_name: string }>(host, 'SHOW ALL SLAVES STATUS')).map((r) => r.Connection_name).filter((n) => n.startsWith('move_')),
  };
}
