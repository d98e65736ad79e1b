import { appendFileSync, copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGunzip } from 'node:zlib';
import type { PostgresServer } from '../postgres/postgres-server.js';
import type { UnitBackup } from './backup-manifest.js';
import type { BackupTarget } from './backup-target.js';
import { segmentsFrom } from './postgres-wal-archive.js';
import { chain, toolInput } from './process-streams.js';

/**
 * The unit's base backup extracted into the stopped server's datadir, recovering to the backup's
 * LSN; or, with `pitr`, the archived segments from the backup's position copied into pg_wal (the
 * server's user may not reach the backup target: no restore_command) and recovery to `toMs`.
 * Not inclusive: recovery stops before the first commit at or after the time, so a write sent
 * at or after it is never restored and one acknowledged before it always is.
 */
export async function restoreInto(server: PostgresServer, unit: UnitBackup, target: BackupTarget, prefix: string, pitr?: { archive: string; toMs: number }): Promise<void> {
  await server.replaceDataDir(async (dataDir) => {
    // --ignore-zeros: tar reads to the end of its input. Without it, it stops at the archive's
    // end-of-archive blocks and exits 0 while pg_basebackup's trailing padding is still being fed,
    // and the feed failed with "Premature close" (a fresh-clone CI run, backup verify).
    await toolInput('tar', ['-x', '--ignore-zeros', '-C', dataDir], chain(target.get(`${prefix}/${unit.files[0]!}`), createGunzip()));
    if (pitr) for (const seg of segmentsFrom(pitr.archive, unit.position)) copyFileSync(seg.path, join(dataDir, 'pg_wal', seg.name));
  });
  if (!pitr) {
    // Not inclusive: recovery stops right before the first record after the copy's position
    // (inclusive, it would apply that record, perhaps a commit the manifest does not count).
    server.setRecoveryTarget({ lsn: unit.position });
    appendFileSync(join(server.dataDir, 'postgresql.auto.conf'), "recovery_target_inclusive = 'off'\n");
    return;
  }
  // PostgreSQL reads '2026-11-28 10:42:00.123+00', not the ISO form with T and Z.
  server.setRecoveryTarget({ time: new Date(pitr.toMs).toISOString().replace('T', ' ').replace('Z', '+00') });
  // Appended to the file setRecoveryTarget wrote (the server's user owns it already).
  appendFileSync(join(server.dataDir, 'postgresql.auto.conf'), "recovery_target_inclusive = 'off'\n");
}

/**
 * A copy of a fleet server made a local scratch server: reached over loopback without a password
 * (the fleet's pg_hba.conf is the fleet's), waiting for no synchronous standby, writable.
 */
export function scratchOnly(dataDir: string): void {
  writeFileSync(join(dataDir, 'pg_hba.conf'), 'local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n');
  appendFileSync(join(dataDir, 'postgresql.auto.conf'), "synchronous_standby_names = ''\ndefault_transaction_read_only = off\n");
}
