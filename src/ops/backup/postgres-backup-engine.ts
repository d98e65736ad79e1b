import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ShardKitError } from '../../errors.js';
import { pgServer } from '../dev/dev-postgres.js';
import { pgRebuildSlave } from '../failover/pg-failover.js';
import { pickFreePort } from '../free-port.js';
import { DEFAULT_POSTGRES_BIN } from '../postgres/postgres-instance.js';
import { PostgresServer } from '../postgres/postgres-server.js';
import type { ShardMap } from '../../topology/shard-map.js';
import type { BackupEngine, BackupUnitSource, BytesListener } from './backup-engine.js';
import type { TableSummary, UnitBackup } from './backup-manifest.js';
import type { BackupTarget } from './backup-target.js';
import { fleetPairs, pairNow } from './fleet-pairs.js';
import { postgresTableSummaries, usesMd5Sums } from './postgres-tables.js';
import { byteCounter, chain, toolOutput } from './process-streams.js';
import { archiveDir } from './archive-dir.js';
import { archiveWal, archivedSegments, archivedWalUntil, pruneSegments } from './postgres-wal-archive.js';
import type { PgAccess, PgSql } from './postgres-access.js';
import { restoreThroughSql } from './postgres-sql-restore.js';
import { restoreInto, scratchOnly } from './postgres-recovery.js';
import { parseLsn } from '../postgres/postgres-server.js';
import { postgresRestoreAside } from './restore-aside-postgres.js';
import type { AsideRequest } from './restore-aside.js';
import { PG_SHARD_SCHEMAS_SQL, raiseSequencesSql } from './restore-counters.js';
import { SEQUENCES_SQL, type SequenceRow } from '../../moves/postgres/index.js';

const PAUSED = 'paused';
const bin = (name: string) => join(process.env.SHARDKIT_POSTGRES_BIN ?? DEFAULT_POSTGRES_BIN, name);

/**
 * PostgreSQL pairs (a dev cluster's, or a config's reached over the network: postgres-access.ts):
 * each copied from its standby with `pg_basebackup` (tar, WAL fetched), replay paused meanwhile
 * so the counts, the checksums and the copy's end all sit at one LSN; a restore replays the copy's
 * WAL exactly to that LSN (recovery_target_lsn) and promotes.
 */
export class PostgresBackupEngine implements BackupEngine {
  readonly kind = 'postgres' as const;

  constructor(private readonly access: PgAccess) {}

  async mapVersion(): Promise<number> {
    return (await this.access.map()).version;
  }

  shardMap(): Promise<ShardMap> {
    return this.access.map();
  }

  async units(): Promise<BackupUnitSource[]> {
    return fleetPairs(await this.access.map());
  }

  async backupUnit(unit: BackupUnitSource, target: BackupTarget, prefix: string, onBytes: BytesListener): Promise<UnitBackup> {
    const standby = this.access.server(unit.source);
    const [rec] = await standby.sql<{ r: boolean }>('SELECT pg_is_in_recovery() AS r');
    if (rec?.r !== true) throw new ShardKitError('PRECONDITION_FAILED', `${unit.source} is not a standby (the map names it the slave of ${unit.unit}): nothing written`);
    await target.put(`${prefix}/${PAUSED}/${unit.source}`, unit.unit);
    let failed = true;
    try {
      const emit = () => this.access.server(unit.unit).sql("SELECT pg_logical_emit_message(false, 'shardkit-backup', $1)", [prefix]);
      const lsn = await pauseInsideSegment(standby, unit.source, unit.unit, this.access.database, emit);
      // One small record after the position, in the copy's WAL: a restore stops right before it.
      // An idle fleet's WAL would end at the position, and PostgreSQL will not end a recovery at
      // an LSN target no record reaches ('recovery ended before configured recovery target').
      await emit();
      await walPast(standby, 'receive', lsn, `${unit.source} received no WAL from ${unit.unit} for 60 s (is it replicating?): nothing written`);
      const at = Date.now();
      const file = `${unit.unit}.base.tar.gz`;
      // pg_basebackup compresses itself (zlib level 1, in its own process): the uncompressed
      // tar, several times larger, never crosses a pipe into this process (bench/RESULTS.md).
      const tar = toolOutput(bin('pg_basebackup'), [...this.access.clientArgs(unit.source), '--no-password', '-D', '-', '-Ft', '-X', 'fetch', '-c', 'fast', '--no-manifest', '--compress=client-gzip:1'], { env: this.access.toolEnv() });
      // The counts and checksums run beside the copy: replay is paused, both see one state.
      const [tables, bytes] = await Promise.all([postgresTableSummaries(standby, this.access.database), target.put(`${prefix}/${file}`, chain(tar, byteCounter(onBytes)))]);
      failed = false;
      return { unit: unit.unit, source: unit.source, position: lsn, files: [file], bytes, tables, at };
    } finally {
      // A standby that died mid-copy cannot be told (a restarted one replays again by itself): its
      // marker stays for the next run's recover, and the copy's own error is the one reported.
      const resumed = await standby.sql('SELECT pg_wal_replay_resume()').then(() => true, (err: Error) => {
        if (!failed) throw err;
        return false;
      });
      if (resumed) await target.remove(`${prefix}/${PAUSED}/${unit.source}`);
    }
  }

  async recover(target: BackupTarget, prefix: string): Promise<void> {
    for (const host of await target.list(`${prefix}/${PAUSED}`)) {
      try {
        await this.access.server(host).sql('SELECT pg_wal_replay_resume()');
      } catch {
        continue;
      }
      await target.remove(`${prefix}/${PAUSED}/${host}`);
    }
  }

  async restoreUnit(unit: UnitBackup, target: BackupTarget, prefix: string, options: { force: boolean; toMs?: number }): Promise<void> {
    const { master, slave } = pairNow(await this.access.map(), unit.unit);
    const database = this.access.database;
    const dev = this.access.dev;
    if (!options.force && (dev === undefined || pgServer(dev, master).isRunning())) await this.requireNoServices(master);
    const pitr = options.toMs === undefined ? undefined : { archive: archiveDir(target, unit.unit), toMs: options.toMs };
    // The live sequences (the restore sets them back to the copy's), kept where higher: the
    // master's; a dev master that is down, its standby's (which replayed them).
    const live = dev === undefined ? master : [master, slave].find((h) => h !== undefined && pgServer(dev, h).isRunning());
    const counters = live === undefined ? [] : await liveSequences(this.access, live);
    // A fleet's datadirs are on other machines: the copy is recovered on this one and loaded through SQL.
    if (dev === undefined) return restoreThroughSql(this.access, master, unit, target, prefix, pitr, raiseSequencesSql(counters));
    const server = pgServer(dev, master);
    await server.stop();
    await restoreInto(server, unit, target, prefix, pitr);
    await server.start();
    await server.waitPromoted();
    const raise = raiseSequencesSql(counters);
    // Before the standby is rebuilt: it copies them.
    if (raise !== '') await server.sql(raise, [], database);
    await clearRestoreSettings(server);
    // The standby followed the old history: it is rebuilt from the restored master.
    await pgRebuildSlave(dev, master);
  }

  async drillUnit(unit: UnitBackup, target: BackupTarget, prefix: string, scratchDir: string): Promise<Record<string, TableSummary>> {
    // The server runs as the postgres user when we are root: it must reach its directory.
    chmodSync(scratchDir, 0o755);
    const server = new PostgresServer({ name: 'drill', dir: join(scratchDir, 'pg'), port: await pickFreePort() });
    await restoreInto(server, unit, target, prefix);
    scratchOnly(server.dataDir);
    await server.start();
    try {
      await server.waitPromoted();
      return await postgresTableSummaries(server, this.access.database, { md5: usesMd5Sums(unit.tables) });
    } finally {
      await server.stop();
    }
  }

  async archive(target: BackupTarget, signal: AbortSignal, log: (m: string) => void): Promise<void> {
    const pairs = await this.units();
    await Promise.all(pairs.map((p) => archiveWal({ name: p.source, args: this.access.clientArgs(p.source), env: this.access.toolEnv() }, archiveDir(target, p.unit), signal, log)));
  }

  async archivedUntil(target: BackupTarget, unit: UnitBackup): Promise<number | undefined> {
    const dir = archiveDir(target, unit.unit);
    const first = archivedSegments(dir)[0];
    if (first === undefined) return undefined;
    if (first.start > parseLsn(unit.position)) throw new ShardKitError('INVALID_ARGUMENT', `the archived WAL of ${unit.unit} starts at segment ${first.name}, after the backup's position ${unit.position} (the archiver was started after the backup): take a new backup while \`shardkit backup archive\` runs: nothing changed`);
    return archivedWalUntil(dir, unit.position);
  }

  async pruneArchive(target: BackupTarget, unit: string, positions: string[]): Promise<string[]> {
    const oldest = positions.reduce((a, b) => (parseLsn(b) < parseLsn(a) ? b : a));
    return pruneSegments(archiveDir(target, unit), oldest);
  }

  /** Refuses (nothing changed) while clients are connected to the shards' database on `master`. */
  async requireNoServices(master: string): Promise<void> {
    const database = this.access.database;
    const [row] = await this.access.server(master).sql<{ n: string }>("SELECT count(*)::text AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname = $1 AND pid <> pg_backend_pid()", [database]);
    if (Number(row?.n) > 0) throw new ShardKitError('PRECONDITION_FAILED', `${master} has ${row!.n} client connection(s) to ${database}: stop the services first (or --force): nothing changed`);
  }

  restoreAside(unit: UnitBackup, target: BackupTarget, prefix: string, req: AsideRequest, preamble: string): Promise<Record<string, TableSummary>> {
    return postgresRestoreAside(this.access, unit, target, prefix, req, preamble);
  }

  summariesOn(host: string, schemas: readonly string[]): Promise<Record<string, TableSummary>> {
    return postgresTableSummaries(this.access.server(host), this.access.database, { schemas });
  }

  async close(): Promise<void> {
    await this.access.close();
  }
}

/**
 * Pauses `standby`'s replay at a point where replay holds no exclusive lock on a table of
 * `database`. Such a lock (a master's transaction in ALTER, TRUNCATE, LOCK TABLE, or one that
 * ended but whose end is not replayed yet) would make the row counts wait for ever, since only
 * replay releases it: replay is resumed until the lock is gone, then paused again. Refuses
 * (PRECONDITION_FAILED) when a lock stays for 60 s.
 */
async function pauseWithoutReplayedLocks(standby: PgSql, host: string, database: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  const held = async () => (await standby.sql<{ rel: string }>(
    "SELECT l.relation::regclass::text AS rel FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE l.locktype = 'relation' AND l.mode = 'AccessExclusiveLock' AND l.granted AND d.datname = current_database()", [], database)).map((r) => r.rel);
  for (;;) {
    await standby.sql('SELECT pg_wal_replay_pause()');
    for (;;) {
      const [s] = await standby.sql<{ s: string }>('SELECT pg_get_wal_replay_pause_state() AS s');
      if (s?.s === 'paused') break;
      await sleep(10);
    }
    let locked = await held();
    if (locked.length === 0) return;
    await standby.sql('SELECT pg_wal_replay_resume()');
    while (locked.length > 0) {
      if (Date.now() > deadline) throw new ShardKitError('PRECONDITION_FAILED', `${locked.join(', ')} on ${host} stayed locked (ACCESS EXCLUSIVE, by a transaction of its master) for 60 s: the backup's row counts would wait for it; back up once it ended: nothing written`);
      await sleep(50);
      locked = await held();
    }
  }
}

/**
 * Pauses `standby`'s replay (pauseWithoutReplayedLocks) where it is not at a WAL segment's first
 * byte, and returns that replay position. A copy taken from a standby ends where the standby's
 * minRecoveryPoint is, here the paused replay position, and its WAL ends with the segment that
 * holds the byte before that. At a segment start, the record `emit` writes after the position is
 * in the next segment, not in the copy, and its restore fails ('recovery ended before configured
 * recovery target').
 * Replay sits there after a WAL switch with nothing written since: on a standby just rebuilt by
 * pg_basebackup from its master (pg_backup_stop switches segments), so on an idle fleet every
 * backup right after a restore. Then `emit` writes a record on `master`, replay runs past it
 * (into the new segment) and is paused again.
 */
async function pauseInsideSegment(standby: PgSql, host: string, master: string, database: string, emit: () => Promise<unknown>): Promise<string> {
  // Landing on a segment start again right after a marker (a WAL switch replayed meanwhile) is
  // rare; three times in a row is something else, said rather than tried for ever.
  for (let pass = 1; ; pass++) {
    await pauseWithoutReplayedLocks(standby, host, database);
    const [p] = await standby.sql<{ lsn: string; start: boolean }>(
      "SELECT pg_last_wal_replay_lsn()::text AS lsn, (pg_last_wal_replay_lsn() - '0/0'::pg_lsn) % (SELECT setting::numeric FROM pg_settings WHERE name = 'wal_segment_size') = 0 AS start");
    if (p!.start !== true) return p!.lsn;
    if (pass >= 3) throw new ShardKitError('SHARD_UNAVAILABLE', `${host} paused at a WAL segment start (${p!.lsn}) ${pass} times in a row (is something switching WAL segments on ${master}, archive_timeout?): nothing written`);
    await emit();
    await standby.sql('SELECT pg_wal_replay_resume()');
    await walPast(standby, 'replay', p!.lsn, `${host} replayed no WAL from ${master} for 60 s (is it replicating?): nothing written`);
  }
}

/** Waits until `standby` has received (or replayed) WAL past `lsn`; SHARD_UNAVAILABLE (`error`) after 60 s. */
async function walPast(standby: PgSql, what: 'receive' | 'replay', lsn: string, error: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const [r] = await standby.sql<{ ok: boolean }>(`SELECT pg_last_wal_${what}_lsn() > $1::pg_lsn AS ok`, [lsn]);
    if (r?.ok === true) return;
    if (Date.now() > deadline) throw new ShardKitError('SHARD_UNAVAILABLE', error);
    await sleep(10);
  }
}

/** SEQUENCES_SQL on `host`, over its shard schemas (restore-counters.ts). */
async function liveSequences(access: PgAccess, host: string): Promise<SequenceRow[]> {
  const server = access.server(host);
  const schemas = (await server.sql<{ n: string }>(PG_SHARD_SCHEMAS_SQL, [], access.database)).map((r) => r.n);
  return schemas.length === 0 ? [] : server.sql<SequenceRow>(SEQUENCES_SQL, [schemas], access.database);
}

/** After a restore promoted: what restoreInto added to the recovery settings, off again. */
async function clearRestoreSettings(server: PostgresServer): Promise<void> {
  await server.clearRecoveryTarget();
  await server.sql('ALTER SYSTEM RESET recovery_target_inclusive');
}
