import { createGunzip, createGzip } from 'node:zlib';
import { join } from 'node:path';
import { ShardKitError } from '../../errors.js';
import { adminQuery, type HostAdmin } from '../failover/host-admin.js';
import type { FleetContext } from '../failover/failover-context.js';
import { gtidVariable, requireReplicating } from '../failover/replica.js';
import { userDatabases } from '../failover/table-checksums.js';
import { MariadbInstance } from '../mariadb/mariadb-instance.js';
import type { ShardMap } from '../../topology/shard-map.js';
import type { BackupEngine, BackupUnitSource, BytesListener } from './backup-engine.js';
import type { TableSummary, UnitBackup } from './backup-manifest.js';
import type { BackupTarget } from './backup-target.js';
import { fleetPairs, pairNow } from './fleet-pairs.js';
import { archiveDir } from './archive-dir.js';
import { archiveBinlogs, archivedBinlogs, archivedUntil, fileStartList, gtidSeqs, pruneBinlogs, startsAtOrBefore } from './mariadb-binlog-archive.js';
import { replayBinlogs } from './mariadb-binlog-replay.js';
import { mariadbTableSummaries } from './mariadb-tables.js';
import { mariadbRestoreAside } from './restore-aside-mariadb.js';
import { mariadbCounters, raiseMariadbCounters } from './restore-counters.js';
import { scratchAdmin } from './mariadb-scratch.js';
import type { AsideRequest } from './restore-aside.js';
import { byteCounter, chain, toolInput, toolOutput } from './process-streams.js';

const STOPPED = 'stopped';

/**
 * MariaDB pairs: each copied from its slave with the slave's applier stopped (the IO thread keeps
 * receiving, so the master never waits on it), so the dump, the row counts and the checksums all
 * see one state, at the slave's gtid_slave_pos; `mariadb-dump --single-transaction` gzip'ed into
 * the target. Vitess stops replication on its backup tablet the same way.
 */
export class MariadbBackupEngine implements BackupEngine {
  readonly kind = 'mariadb' as const;

  constructor(private readonly fleet: FleetContext, private readonly appUser: string) {}

  async mapVersion(): Promise<number> {
    return (await this.fleet.map()).version;
  }

  shardMap(): Promise<ShardMap> {
    return this.fleet.map();
  }

  async units(): Promise<BackupUnitSource[]> {
    return fleetPairs(await this.fleet.map());
  }

  async backupUnit(unit: BackupUnitSource, target: BackupTarget, prefix: string, onBytes: BytesListener): Promise<UnitBackup> {
    const { admin } = this.fleet;
    const slave = unit.source;
    await requireReplicating(admin, slave, unit.unit, { requireIo: false });
    // Recorded before the applier stops: a killed backup is undone by the next run (recover).
    await target.put(`${prefix}/${STOPPED}/${slave}`, unit.unit);
    await adminQuery(admin, slave, 'STOP SLAVE SQL_THREAD');
    let failed = true;
    try {
      const position = await gtidVariable(admin, slave, 'gtid_slave_pos');
      const at = Date.now();
      const databases = await userDatabases(admin, slave);
      const file = `${unit.unit}.sql.gz`;
      const dump = toolOutput('mariadb-dump', [...admin.clientArgs(slave), '--single-transaction', '--routines', '--triggers', '--events', '--hex-blob', '--databases', ...databases]);
      // The counts and checksums run beside the dump: the applier is stopped, both see one state.
      const [tables, bytes] = await Promise.all([mariadbTableSummaries(admin, slave), target.put(`${prefix}/${file}`, chain(dump, byteCounter(onBytes), createGzip({ level: 1 })))]);
      failed = false;
      return { unit: unit.unit, source: slave, position, files: [file], bytes, tables, at };
    } finally {
      // A slave that died mid-copy cannot be told: its marker stays for the next run's recover,
      // and the copy's own error is the one reported.
      const started = await adminQuery(admin, slave, 'START SLAVE SQL_THREAD').then(() => true, (err: Error) => {
        if (!failed) throw err;
        return false;
      });
      if (started) await target.remove(`${prefix}/${STOPPED}/${slave}`);
    }
  }

  async recover(target: BackupTarget, prefix: string): Promise<void> {
    for (const slave of await target.list(`${prefix}/${STOPPED}`)) {
      try {
        await adminQuery(this.fleet.admin, slave, 'START SLAVE SQL_THREAD');
      } catch {
        // Still down: it starts its applier itself when it comes back (and this runs again).
        continue;
      }
      await target.remove(`${prefix}/${STOPPED}/${slave}`);
    }
  }

  async restoreUnit(unit: UnitBackup, target: BackupTarget, prefix: string, options: { force: boolean; toMs?: number }): Promise<void> {
    const { admin } = this.fleet;
    const { master } = pairNow(await this.fleet.map(), unit.unit);
    if (!options.force) await this.requireNoServices(master);
    // The dump's CREATE TABLE sets each AUTO_INCREMENT back to the backup's: the live ones are kept.
    const counters = await mariadbCounters(admin, master);
    // Loaded on the master with its binlog on: the slave replays the restore and the pair stays one.
    await toolInput('mariadb', admin.clientArgs(master), chain(target.get(`${prefix}/${unit.files[0]!}`), createGunzip()));
    if (options.toMs !== undefined) await replayBinlogs(admin, master, archivedBinlogs(archiveDir(target, unit.unit)), unit.position, options.toMs);
    // With the binlog on too: the slave follows.
    await raiseMariadbCounters(admin, master, counters, { binlog: true });
  }

  async drillUnit(unit: UnitBackup, target: BackupTarget, prefix: string, scratchDir: string): Promise<Record<string, TableSummary>> {
    return drillMariadb(unit, target, prefix, scratchDir);
  }

  async archive(target: BackupTarget, signal: AbortSignal, log: (m: string) => void): Promise<void> {
    const pairs = await this.units();
    await Promise.all(pairs.map((p) => archiveBinlogs(this.fleet.admin, p, archiveDir(target, p.unit), signal, log)));
  }

  async archivedUntil(target: BackupTarget, unit: UnitBackup): Promise<number | undefined> {
    const dir = archiveDir(target, unit.unit);
    const first = archivedBinlogs(dir)[0];
    const start = first === undefined ? undefined : await fileStartList(first);
    if (start !== undefined && !startsAtOrBefore(start, gtidSeqs(unit.position))) throw new ShardKitError('INVALID_ARGUMENT', `the archived binlog of ${unit.unit} starts after the backup's position ${unit.position} (the archiver was started after the backup): take a new backup while \`shardkit backup archive\` runs: nothing changed`);
    const t = await archivedUntil(dir);
    // Event times are whole seconds: an event stamped in T's second may come after T.
    return t === undefined ? undefined : t + 999;
  }

  async pruneArchive(target: BackupTarget, unit: string, positions: string[]): Promise<string[]> {
    return pruneBinlogs(archiveDir(target, unit), positions);
  }

  /** Refuses (nothing changed) while the service user is connected to `master`. */
  async requireNoServices(master: string): Promise<void> {
    const [row] = await adminQuery<Array<{ n: number | string }>>(this.fleet.admin, master, { sql: 'SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE USER = ?', values: [this.appUser] });
    if (Number(row?.n) > 0) throw new ShardKitError('PRECONDITION_FAILED', `${master} has ${Number(row?.n)} connection(s) of the service user ${this.appUser}: stop the services first (or --force): nothing changed`);
  }

  restoreAside(unit: UnitBackup, target: BackupTarget, prefix: string, req: AsideRequest): Promise<Record<string, TableSummary>> {
    return mariadbRestoreAside(this.fleet.admin, unit, target, prefix, req);
  }

  summariesOn(host: string, schemas: readonly string[]): Promise<Record<string, TableSummary>> {
    return mariadbTableSummaries(this.fleet.admin, host, schemas);
  }

  async close(): Promise<void> {
    await this.fleet.close();
  }
}

/** A throwaway local server to restore a backup into: `backup verify`'s drill. */
export async function drillMariadb(unit: UnitBackup, target: BackupTarget, prefix: string, scratchDir: string): Promise<Record<string, TableSummary>> {
  const inst = await MariadbInstance.create({ name: 'drill', dir: join(scratchDir, 'm'), serverId: 4242 });
  await inst.init();
  await inst.start();
  try {
    const admin = scratchAdmin(inst);
    await toolInput('mariadb', [...admin.clientArgs('drill'), '--init-command=SET SESSION sql_log_bin = 0'], chain(target.get(`${prefix}/${unit.files[0]!}`), createGunzip()));
    return await mariadbTableSummaries(admin, 'drill');
  } finally {
    await inst.stop();
  }
}
