import type { Command } from 'commander';
import { action, intOption } from '../run-action.js';
import { printInitResult, runShardInit, type ShardInitCommandOptions } from './init.js';

export function register(program: Command): void {
  const schema = program.command('schema').description('Shard schema maintenance');
  schema
    .command('apply')
    .description('Add the tables of new types, mappings and keyspaces in the config to every shard (CREATE TABLE IF NOT EXISTS; never drops or alters)')
    .option('--config <file>', 'config file', 'shardkit.json')
    .option('--concurrency <n>', 'shards updated at once on each master', intOption('--concurrency', 1, 64), 4)
    .option('--json', 'print the result as one JSON object')
    .action(action(async (opts: ShardInitCommandOptions) => {
      printInitResult('schema apply', await runShardInit('schema apply', opts), opts.json);
    }));
}
