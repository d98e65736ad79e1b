import type { Command } from 'commander';
import type { ExportCliOptions } from '../actions/export.js';
import { action } from '../run-action.js';

const sources = (cmd: Command): Command =>
  cmd
    .option('--dir <dir>', 'a dev cluster (`shardkit dev up --dir`)')
    .option('--config <file>', 'the shardkit config of a fleet (admin account from SHARDKIT_ADMIN_USER/_PASSWORD) or of the embedded default')
    .option('--data <dir>', 'the embedded default\'s data directory (its shardkit.json), or where a config\'s file topology store resolves')
    .requiredOption('--to <dir>', 'where the files go: <to>/<name>/db00005.parquet, one per shard')
    .option('--json', 'print the result as one JSON object');

export function register(program: Command): void {
  const exp = program.command('export').description('Analytics dumps to Parquet, one file per shard, each shard read from its slave (docs/export.md)');
  sources(exp.command('objects'))
    .description('Every object of a type: id (INT64), shard, local_id, type, created_at (TIMESTAMP), deleted, data (the JSON text) and a data_<field> column per field its dataSchema declares; a killed run resumes')
    .requiredOption('--type <type>', 'the object type')
    .option('--since <time>', 'only objects created at or after this time (epoch ms, or ISO with a zone)')
    .addHelpText('after', `
Examples:
  $ shardkit export objects --dir ./cluster --type pin --to /exports/full
  $ shardkit export objects --data ./data --type pin --to /exports/today --since 2026-11-28T00:00:00Z
  $ duckdb -c "SELECT count(*) FROM '/exports/full/pin/*.parquet'"`)
    .action(action(async (opts: ExportCliOptions & { type: string; since?: string }) => (await import('../actions/export.js')).exportObjectsCommand(opts)));
  sources(exp.command('mappings'))
    .description('Every row of a mapping: from_id, to_id (INT64), sequence as stored; a killed run resumes')
    .requiredOption('--type <mapping>', 'the mapping name')
    .addHelpText('after', `
Example:
  $ shardkit export mappings --dir ./cluster --type board_has_pins --to /exports/full`)
    .action(action(async (opts: ExportCliOptions & { type: string }) => (await import('../actions/export.js')).exportMappingsCommand(opts)));
}
