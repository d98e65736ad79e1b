import { join } from 'node:path';
import { ShardKitError } from '../../errors.js';
import { DirectoryTarget, type BackupTarget } from './backup-target.js';

/**
 * Where a pair's logs are archived: `<target>/archive/<pair>/`. The tools (mariadb-binlog --raw,
 * pg_receivewal) write files themselves, so archiving needs a directory target; an object store
 * would upload each closed file from such a directory.
 */
export function archiveDir(target: BackupTarget, unit: string): string {
  if (!(target instanceof DirectoryTarget)) throw new ShardKitError('INVALID_ARGUMENT', `log archiving needs a directory target, not ${target.location}`);
  return join(target.location, 'archive', unit);
}
