import type { Command } from 'commander';
import { ShardKitError } from '../../errors.js';
import { action, intOption } from '../run-action.js';
import type { KitMigrationCliOptions } from '../actions/migrate-kit.js';
import type { TableMigrationCliOptions } from '../actions/migrate-table.js';

/** A source that is a database URL goes to the table migration; anything else is a shardkit config file. */
const TABLE_SOURCE = /^(mysql|mariadb|postgres|postgresql):\/\//i;

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** Every option of the command: the embedded-store source's and the table source's. */
type MigrateCliOptions = KitMigrationCliOptions & TableMigrationCliOptions;

const TABLE_ONLY = ['query', 'type', 'idColumn', 'changedColumn', 'mapping', 'jsonColumn', 'dataColumn', 'keyspace', 'stateType', 'batch', 'overlap', 'fromStart'] as const;

export function register(program: Command): void {
  program
    .command('migrate')
    .description('Move data in while the old store keeps serving: copy, catch up round after round, then cut over with --final. SOURCE is the config file of an embedded store (shards keep their numbers and local ids, so every ID stays valid) or a mysql://, mariadb:// or postgres:// URL of a table (docs/migrate.md)')
    .requiredOption('--from <source>', 'a shardkit config file (the embedded default, e.g. data/shardkit.json), or a database URL')
    .requiredOption('--to <config>', 'the config file of the target fleet (MariaDB, PostgreSQL or another embedded store)')
    .option('--final', 'cut over: the source stops taking writes (retryable refusals), the last delta is copied, the source stays read-only')
    .option('--json', 'print the report as one JSON object (progress is JSON lines on stderr when it is not a TTY)')
    .option('--chunk-rows <n>', 'embedded source: rows per checksummed chunk (default 500)', intOption('--chunk-rows', 1, 100_000))
    .option('--concurrency <n>', 'shards copied at once (embedded source, default 4) or rows written at once (table source, default 16)', intOption('--concurrency', 1, 64))
    .option('--freeze-seconds <s>', 'embedded source, --final: longest the source stays fenced before the fence lifts itself (default 60)', intOption('--freeze-seconds', 1, 3600))
    .option('--query <sql>', 'table source: the SELECT whose rows become objects')
    .option('--type <type>', 'table source: the object type of each row')
    .option('--id-column <col>', 'table source: the column with the old id (recorded in a lookup keyspace)')
    .option('--changed-column <col>', 'table source: the column that says when a row changed')
    .option('--mapping <col:mapping>', 'table source: a foreign-key column whose value becomes a mapping, e.g. board_id:board_has_pins (repeatable)', collect)
    .option('--json-column <col>', 'table source: a column whose text is parsed as JSON (repeatable)', collect)
    .option('--data-column <col>', 'table source: a column holding the whole JSON data')
    .option('--keyspace <name>', 'table source: the lookup keyspace for old ids')
    .option('--state-type <type>', 'table source: where the migration keeps its state')
    .option('--batch <n>', 'table source: rows per page (default 500)', intOption('--batch', 1, 100_000))
    .option('--overlap <n>', 'table source: how far back each run re-reads the change column', intOption('--overlap', 0, Number.MAX_SAFE_INTEGER))
    .option('--from-start', 'table source: ignore the saved position and read every row again')
    .addHelpText('after', `
Embedded store to a server fleet (docs/migrate.md):
  $ shardkit migrate --from data/shardkit.json --to prod.json          # copy + catch up; run it as often as you like
  $ shardkit migrate --from data/shardkit.json --to prod.json --final  # cut over, then restart services on prod.json

A table (docs/migrate.md, "From a table"):
  $ shardkit migrate --from mysql://user@db/app --to prod.json --query 'SELECT * FROM pins' \\
      --type pin --id-column id --changed-column updated_at --mapping board_id:board_has_pins

Exit codes: 0 done, 2 bad input (nothing changed), 1 failure (run it again: every step is idempotent).`)
    .action(action(async (opts: MigrateCliOptions) => {
      if (TABLE_SOURCE.test(opts.from)) {
        const { runTableMigration } = await import('../actions/migrate-table.js');
        await runTableMigration(opts);
        return;
      }
      const extra = TABLE_ONLY.filter((k) => opts[k] !== undefined);
      if (extra.length > 0) {
        const flag = extra[0]!.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
        throw new ShardKitError('INVALID_ARGUMENT', `--${flag} is for a table source (a mysql://, mariadb:// or postgres:// URL); --from ${opts.from} is a config file`);
      }
      const { runKitMigration } = await import('../actions/migrate-kit.js');
      await runKitMigration(opts);
    }));
}
