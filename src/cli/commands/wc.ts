import type { Command } from 'commander';
import type { TargetOptions } from '../actions/wc.js';
import { action, urlOption } from '../run-action.js';

const DATA_HELP = 'data directory of the service (the store is <data>/widecolumn)';
const URL_HELP = 'ask the running service at this URL instead (e.g. http://127.0.0.1:7070)';
const URL_OUTPUT_HELP = 'ask the running service at this URL instead (e.g. http://127.0.0.1:7070); it writes only into its export directory (<data>/widecolumn-exports unless configured), so give a plain name there instead of a path';

// Only definitions here: RocksDB, Parquet and the progress bars load when a command runs.
export function register(program: Command): void {
  const wc = program
    .command('wc')
    .description('Wide-column store on RocksDB: compaction, backups, restores, Parquet exports (docs/widecolumn.md)')
    .addHelpText('after', `
The commands open <data>/widecolumn directly, which RocksDB allows to one process at a time:
while \`shardkit serve\` runs on that data directory they say so (STORE_LOCKED) and --url asks
the service instead. With --url, a service that has an admin token needs it in
SHARDKIT_ADMIN_TOKEN (sent as Authorization: Bearer).`);

  wc.command('compact')
    .description('Remove expired cells and versions beyond each dataset\'s maxVersions from the disk (range deletes, then a RocksDB compaction); reads never return them anyway')
    .option('--data <dir>', DATA_HELP, './data')
    .option('--url <url>', URL_HELP, urlOption('--url'))
    .option('--json', 'print the report as JSON')
    .action(action(async (opts: TargetOptions) => (await import('../actions/wc.js')).wcCompactCommand(opts)));

  wc.command('backup')
    .description('Write a consistent backup (from a RocksDB snapshot, while writes go on) of every dataset into a new or empty directory')
    .argument('<dir>', 'backup directory (new or empty); with --url, a new name in the service\'s export directory')
    .option('--data <dir>', DATA_HELP, './data')
    .option('--url <url>', URL_OUTPUT_HELP, urlOption('--url'))
    .option('--json', 'print the result as JSON')
    .action(action(async (dir: string, opts: TargetOptions) => (await import('../actions/wc.js')).wcBackupCommand(dir, opts)));

  wc.command('restore')
    .description('Restore a backup into <data>/widecolumn, which must not hold a store yet (stop the service; move the old store away first)')
    .argument('<dir>', 'backup directory written by `wc backup`')
    .option('--data <dir>', DATA_HELP, './data')
    .option('--url <url>', 'refused: a running service cannot swap its store; stop it and restore into its data directory')
    .option('--json', 'print the result as JSON')
    .action(action(async (dir: string, opts: TargetOptions) => (await import('../actions/wc.js')).wcRestoreCommand(dir, opts)));

  wc.command('export')
    .description('Write the live cells of a dataset (unexpired, within maxVersions) as Parquet with columns row_key, column, timestamp, value')
    .argument('<dataset>', 'dataset name')
    .argument('<file>', 'Parquet file to write (refused if it exists, unless --overwrite); with --url, a name in the service\'s export directory')
    .option('--data <dir>', DATA_HELP, './data')
    .option('--url <url>', URL_OUTPUT_HELP, urlOption('--url'))
    .option('--overwrite', 'replace an existing file')
    .option('--json', 'print the result as JSON')
    .action(action(async (dataset: string, file: string, opts: TargetOptions & { overwrite?: boolean }) => (await import('../actions/wc.js')).wcExportCommand(dataset, file, opts)));

  wc.command('datasets')
    .description('List the datasets and their settings (maxVersions, ttlSeconds)')
    .option('--data <dir>', DATA_HELP, './data')
    .option('--url <url>', URL_HELP, urlOption('--url'))
    .option('--json', 'print JSON')
    .action(action(async (opts: TargetOptions) => (await import('../actions/wc.js')).wcDatasetsCommand(opts)));
}
