import type mysql from 'mysql2/promise';

/**
 * What the MariaDB mover needs as an administrator of the hosts (SUPER: replication connections,
 * sql_log_bin, dumps). The fleet tools build it (src/ops/failover/move-admin.ts) from the
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
   * told the bytes (and estimated rows) streamed so far, now and then while the copy runs;
   * `throttle` is awaited with the rows of each piece before it goes on to the loaders; with
   * `streams` > 1, that many dumps run at once from one consistent point (FLUSH TABLES WITH READ
   * LOCK on `from` until each has its snapshot).
   */
  dumpCopy(from: string, to: readonly string[], databases: string[], options: { ignoreTables?: readonly string[]; onBytes?: (bytes: number, rows: number) => void; throttle?: (rows: number, bytes: number) => Promise<void>; streams?: number }): Promise<string>;
}
