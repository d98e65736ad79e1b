import type { Command } from 'commander';
import type { BackupCliOptions } from '../actions/backup.js';
import { action, intOption } from '../run-action.js';
import type { RestoreIntoCliOptions } from '../actions/backup-restore-into.js';

/** Options that ask for a restore of some shards onto a spare pair (the action is loaded only then). */
const isRestoreInto = (o: RestoreIntoCliOptions): boolean => o.shards !== undefined || o.into !== undefined || o.intoSlave !== undefined || o.resume !== undefined || o.abort !== undefined;

const ADMIN_ENV = 'admin account from SHARDKIT_ADMIN_USER/_PASSWORD';

const fleetOptions = (cmd: Command): Command =>
  cmd
    .option('--config <file>', `the shardkit config of a fleet (${ADMIN_ENV})`)
    .option('--dir <dir>', 'a dev cluster (`shardkit dev up --dir`)')
    .option('--data <dir>', 'where the config\'s file topology store resolves (default: the config file\'s directory)')
    .option('--json', 'print the result as one JSON object');

export function register(program: Command): void {
  const backup = program.command('backup').description('Backups of the object fleet, taken from the slaves, and restore drills (docs/backups.md)');
  fleetOptions(backup.command('create'))
    .description('A full backup of every pair, each from its slave (its applier paused, the master untouched), with the GTID position and the map version in a manifest written last; a run that died resumes')
    .requiredOption('--to <path>', 'the backup directory')
    .option('--keep <n>', 'retention: after the backup, keep the newest N complete backups and remove older ones and the archived logs no kept backup needs (N >= 1)')
    .addHelpText('after', `
Examples:
  $ shardkit backup create --dir ./cluster --to /backups/fleet --keep 7
  $ shardkit backup create --config prod.json --to /mnt/backups --json`)
    .action(action(async (opts: BackupCliOptions & { to: string; keep?: string }) => (await import('../actions/backup.js')).backupCreateCommand(opts)));
  backup.command('list')
    .description('The backups in a directory, oldest first; incomplete ones (no manifest) are marked')
    .requiredOption('--from <path>', 'the backup directory')
    .option('--json', 'print the result as one JSON object')
    .action(action(async (opts: { from: string; json?: boolean }) => (await import('../actions/backup.js')).backupListCommand(opts)));
  fleetOptions(backup.command('archive'))
    .description('Streams every pair\'s log from its slave into PATH/archive/<pair>/ until SIGTERM (MariaDB: mariadb-binlog --read-from-remote-server --raw --stop-never; PostgreSQL: pg_receivewal); started again, each stream resumes from its newest file')
    .requiredOption('--to <path>', 'the backup directory')
    .action(action(async (opts: BackupCliOptions & { to: string }) => (await import('../actions/backup.js')).backupArchiveCommand(opts)));
  fleetOptions(backup.command('verify'))
    .description('A restore drill: each pair of the backup restored into a throwaway local server, its row counts and checksums compared with the manifest; exit 3 when any differs')
    .requiredOption('--from <path>', 'the backup directory')
    .option('--id <id>', 'the backup (default: the newest complete one)')
    .action(action(async (opts: BackupCliOptions & { from: string; id?: string }) => (await import('../actions/backup.js')).backupVerifyCommand(opts)));
  fleetOptions(backup.command('restore'))
    .description('Put a backup back in place: each pair\'s copy loaded on the master that holds its ranges now (the slave replays it); refused while the service user is connected unless --force')
    .requiredOption('--from <path>', 'the backup directory')
    .option('--id <id>', 'the backup (default: the newest complete one)')
    .option('--force', 'restore even though services are connected')
    .option('--to-time <time>', 'restore to this time (ISO with a zone, or epoch ms): the newest backup before it, then the archived log up to it (MariaDB: whole seconds, at or before it; PostgreSQL: every commit before it)')
    .option('--shards <range>', 'restore only these logical shards (first..last, or one); the other shards are not touched. Alone: in place on the pairs that hold them (services stopped, or --force); with --into: aside onto a spare pair, then switched in while services run')
    .option('--into <master>', 'with --shards: the spare pair\'s master (it must hold no rows of those shards; `dev add-pair` or `topology hosts add`)')
    .option('--into-slave <slave>', 'with --into: the spare pair\'s slave')
    .option('--hold-ms <n>', 'with --into: how long services hold writes to the shards during the switch', intOption('--hold-ms', 1, 60_000))
    .option('--resume <move>', 'take up a restore --into that was cut short (its move id, as it printed it)')
    .option('--abort <move>', 'roll back a restore --into that was cut short: the shards stay on their pair, the spare\'s copy is dropped')
    .addHelpText('after', `
Restore one shard (or a range) to a time, into a live fleet (docs/backups.md, "Restore one shard"):
  $ shardkit dev add-pair --dir ./cluster                # or: shardkit topology hosts add ...
  $ shardkit backup restore --dir ./cluster --from /backups/fleet --shards 3429 \\
      --to-time 2026-11-28T10:42:00Z --into MySQL009A --into-slave MySQL009B
  $ shardkit shards drop-moved --dir ./cluster           # later: the shard's rows of before, fenced on its old pair
The shards are restored in a scratch server, loaded onto the spare pair, then switched in by the
move machinery (freeze, fence, switch); services route to the spare without a restart.
In place instead (services stopped): shardkit backup restore --dir ./cluster --from /backups/fleet --shards 3429 --to-time T`)
    .action(action(async (opts: RestoreIntoCliOptions) => {
      if (isRestoreInto(opts)) return (await import('../actions/backup-restore-into.js')).restoreIntoCommand(opts);
      return (await import('../actions/backup.js')).backupRestoreCommand(opts);
    }));
}
