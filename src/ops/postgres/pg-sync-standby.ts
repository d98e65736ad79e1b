import type { PostgresServer } from './postgres-server.js';

/**
 * Synchronous replication for a PostgreSQL pair: the master's commits wait until `standby` has
 * flushed them (synchronous_commit stays at its default, `on`), so a failover to that standby
 * loses no acknowledged write. `undefined` makes the master asynchronous again: a master whose
 * standby is gone would otherwise block every commit until one comes back.
 *
 * The setting lives in postgresql.auto.conf, which pg_basebackup copies to a new standby; a
 * promoted standby must therefore get its own value before it takes writes (it would wait for
 * itself), which is why every failover path calls this right after pg_promote().
 */
export async function setSyncStandby(master: PostgresServer, standby: string | undefined): Promise<void> {
  // The name is a dev server name (PG001B), never user input; quoted so case is kept.
  const names = standby === undefined ? '' : `"${standby.replace(/"/g, '')}"`;
  await master.sql(`ALTER SYSTEM SET synchronous_standby_names = '${names}'`);
  await master.sql('SELECT pg_reload_conf()');
}

/** The standby the master's commits wait for, if any (what `dev status` and the tests read). */
export async function syncStandbyOf(master: PostgresServer): Promise<string | undefined> {
  const [r] = await master.sql<{ names: string }>("SELECT current_setting('synchronous_standby_names') AS names");
  const names = r?.names.replace(/"/g, '').trim() ?? '';
  return names === '' ? undefined : names;
}
