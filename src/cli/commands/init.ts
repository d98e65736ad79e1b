import type { Command } from 'commander';
import type { ShardInitCommandOptions } from '../actions/shard-init.js';
import { action, intOption } from '../run-action.js';

/**
 * The options and action that `init` and `schema apply` share: both make every shard hold
 * every table of the schema; `label` names the command in progress and result lines.
 */
export function shardInitOptions(command: Command, label: string, concurrencyHelp: string): Command {
  return command
    .option('--config <file>', 'config file', 'shardkit.json')
    .option('--concurrency <n>', concurrencyHelp, intOption('--concurrency', 1, 64), 4)
    .option('--json', 'print the result as one JSON object')
    .action(action(async (opts: ShardInitCommandOptions) => (await import('../actions/shard-init.js')).shardInitCommand(label, opts)));
}

export function register(program: Command): void {
  shardInitOptions(program.command('init'), 'init', 'shards created at once on each master')
    .description('Create every shard database and its tables on its master, following the shard map (idempotent: a second run changes nothing)')
    .addHelpText('after', '\nProgress: a bar on a TTY, JSON lines on stderr otherwise. Slaves get the shards by replication.');
}
