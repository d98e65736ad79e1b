import type { Command } from 'commander';
import { action } from '../run-action.js';

export function register(program: Command): void {
  const topology = program.command('topology').description('The shard map: which hosts serve which logical shards (docs/topology.md)');

  topology
    .command('show')
    .description('Print the shard map as a table (range, master, slave, open; then the mod-shard fleet) or as its JSON form')
    .option('--file <file>', 'a topology JSON file, or a shardkit config file (the live map from its topology store, else its "shardMap"); default: the built-in default map')
    .option('--data <dir>', 'with a config file: the data directory whose topology store holds the live map (default: the config file\'s directory)')
    .option('--json', 'print the JSON form: {"version","ranges":[{"range","master","slave","open"}...],"modShards":{"count","ranges"}}')
    .addHelpText('after', `
Without --file, prints the default map: 4096 shards (all open) over MySQL001A/B..MySQL008A/B and
4096 mod shards over msdb001a/b..msdb008a/b.`)
    .action(action(async (opts: { file?: string; json?: boolean; data?: string }) => (await import('../actions/topology.js')).showTopology(opts)));
}
