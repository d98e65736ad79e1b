import type mysql from 'mysql2/promise';
import type { TableProgress } from '../move-engine.js';
import type { DumpAdmin } from './dump-copy.js';
import { tsvCopy } from './tsv-copy.js';

/**
 * What the MariaDB mover needs as an administrator of the hosts (SUPER: replication connections,
 * sql_log_bin, dumps). The fleet tools build it (moveAdmin below) from their HostAdmin: the
 * dev cluster's sockets or the config's admin account; the mover never learns which.
 */
export interface MoveAdmin {
  /** An admin connection to `host`; the caller closes it. */
  connect(host: string): Promise<mysql.Connection>;
  /** The host's address as another server's replication connection reaches it. */
  address(host: string): { host: string; port: number };
  /** The account a replication connection logs in with. */
  replication: { user: string; password?: string };
  /**
   * A consistent copy of `databases` (less `ignoreTables`, `db.table`) from `from` into every
   * host of `to`, binlog off on the targets; returns the snapshot's GTID position. `onBytes` is
   * told the bytes (and estimated rows) streamed so far and the tables being dumped, now and then while the copy runs;
   * `throttle` is awaited with the rows of each piece before it goes on to the loaders; with
   * `streams` > 1, that many dumps run at once from one consistent point (FLUSH TABLES WITH READ
   * LOCK on `from` until each has its snapshot).
   */
  dumpCopy(from: string, to: readonly string[], databases: string[], options: { ignoreTables?: readonly string[]; onBytes?: (bytes: number, rows: number, tables: TableProgress[]) => void; throttle?: (rows: number, bytes: number) => Promise<void>; streams?: number }): Promise<string>;
}

/** A host administrator as the fleet tools have one (src/ops/failover/host-admin.ts's HostAdmin). */
export interface HostAccess extends DumpAdmin {
  address(host: string): { host: string; port: number };
  replication: { user: string; password?: string };
}

/** The MariaDB mover's admin access from the fleet tools' own; the copy is this folder's (tsv-copy.ts, or parallel-dump-copy.ts for tables text cannot carry). */
export function moveAdmin(admin: HostAccess): MoveAdmin {
  return {
    connect: (host) => admin.connect(host),
    address: (host) => admin.address(host),
    replication: admin.replication,
    dumpCopy: (from, to, databases, options) => tsvCopy(admin, from, to, databases, options.streams ?? 1, options),
  };
}
