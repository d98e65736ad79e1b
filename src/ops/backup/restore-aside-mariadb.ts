import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGunzip } from 'node:zlib';
import { tsvCopy, type DumpAdmin } from '../../moves/mariadb/index.js';
import { shardDatabaseName } from '../../storage/shard-names.js';
import type { HostAdmin } from '../failover/host-admin.js';
import { MariadbInstance } from '../mariadb/mariadb-instance.js';
import { archiveDir } from './archive-dir.js';
import type { TableSummary, UnitBackup } from './backup-manifest.js';
import type { BackupTarget } from './backup-target.js';
import { scratchAdmin } from './mariadb-scratch.js';
import { archivedBinlogs } from './mariadb-binlog-archive.js';
import { replayBinlogs } from './mariadb-binlog-replay.js';
import { mariadbTableSummaries } from './mariadb-tables.js';
import { chain, toolInput } from './process-streams.js';
import { mariadbCounters, raiseMariadbCounters } from './restore-counters.js';
import { ASIDE_HOST, requested, type AsideRequest } from './restore-aside.js';

/**
 * Restores shards of one MariaDB pair's backup aside: the pair's dump loaded into a scratch server
 * on this machine (binlog off), the archived binlog replayed there up to the time asked, then the
 * shards' object tables copied onto the spare pair by the move's own copy (tsv-copy.ts: one
 * consistent snapshot's rows as text into LOAD DATA on its master and its slave; tables the text
 * cannot carry go the mariadb-dump way). Returns what the scratch server held of
 * them (rows, CHECKSUM TABLE): what the spare must hold.
 */
export async function mariadbRestoreAside(admin: HostAdmin, unit: UnitBackup, target: BackupTarget, prefix: string, req: AsideRequest): Promise<Record<string, TableSummary>> {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-aside-'));
  // Its binlog on: the move's copy reads its snapshot's GTID position (and its mariadb-dump way dumps with --master-data).
  const inst = await MariadbInstance.create({ name: ASIDE_HOST, dir: join(dir, 'm'), serverId: 4243, settings: { log_bin: 'aside-bin' } });
  try {
    await inst.init();
    await inst.start();
    const scratch = scratchAdmin(inst);
    await toolInput('mariadb', [...scratch.clientArgs(ASIDE_HOST), '--init-command=SET SESSION sql_log_bin = 0'], chain(target.get(`${prefix}/${unit.files[0]!}`), createGunzip()));
    if (req.toMs !== undefined) await replayBinlogs(scratch, ASIDE_HOST, archivedBinlogs(archiveDir(target, unit.unit)), unit.position, req.toMs);
    const schemas = req.shards.map((s) => shardDatabaseName(s));
    const all = await mariadbTableSummaries(scratch, ASIDE_HOST, schemas);
    const expected = requested(req, all, shardDatabaseName);
    const total = Object.values(expected).reduce((n, t) => n + t.rows, 0);
    const both: DumpAdmin = {
      clientArgs: (host) => (host === ASIDE_HOST ? scratch.clientArgs(host) : admin.clientArgs(host)),
      connect: (host) => (host === ASIDE_HOST ? inst.connect() : admin.connect(host)),
    };
    const present = schemas.filter((db) => Object.keys(expected).some((n) => n.startsWith(`${db}.`)));
    const hosts = [req.into.master, ...(req.into.slave !== undefined ? [req.into.slave] : [])];
    // In place, the dump's DROP and CREATE TABLE would set each counter back to the restore point's.
    const counters = req.replace === true ? await mariadbCounters(admin, req.into.master, Object.keys(expected)) : new Map<string, bigint>();
    // One session: the scratch server has no writer, and one stream takes no lock on it.
    await tsvCopy(both, ASIDE_HOST, hosts, present, 1, {
      ignoreTables: Object.keys(all).filter((n) => !(n in expected)),
      onBytes: (_bytes, rows) => req.onRows?.(Math.min(rows, total), total),
    });
    // On both hosts, as the load was.
    for (const host of hosts) await raiseMariadbCounters(admin, host, counters, { binlog: false });
    req.onRows?.(total, total);
    return expected;
  } finally {
    await inst.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}
