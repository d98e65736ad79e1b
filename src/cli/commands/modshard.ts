import type { Command } from 'commander';
import { modShard } from '../../ids/mod-shard.js';
import { checkLookupKey } from '../../storage/backend-args.js';
import { action, intOption } from '../run-action.js';

export function register(program: Command): void {
  program
    .command('modshard')
    .description('Print the mod shard of a lookup key: md5 of its UTF-8 bytes, read as a big-endian 128-bit integer, mod N (SPEC §4)')
    .argument('<key>', 'the key (email, username, IP, ...), taken byte for byte; quote it')
    .option('--shards <n>', 'number of mod shards N, fixed when the fleet is created', intOption('--shards', 1, 2 ** 21), 4096)
    .addHelpText('after', `
Example:
  $ shardkit modshard 1.2.3.4
  1537`)
    .action(action((key: string, opts: { shards: number }) => {
      // The keys the service accepts, no others: an empty key printed a shard HTTP refuses (#34 finding 10).
      process.stdout.write(`${modShard(checkLookupKey(key), opts.shards)}\n`);
    }));
}
