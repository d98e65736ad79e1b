import type { Command } from 'commander';
import { createProgress } from '../../ops/progress.js';
import { initShards, type ShardInitResult } from '../../ops/shard-init.js';
import { openShardTarget } from '../../ops/shard-target.js';
import { action, intOption } from '../run-action.js';

export interface ShardInitCommandOptions {
  config: string;
  concurrency: number;
  json?: boolean;
}

/** Shared by `init` and `schema apply`: both make every shard hold every table of the schema. */
export async function runShardInit(label: string, opts: ShardInitCommandOptions): Promise<ShardInitResult> {
  const target = await openShardTarget(opts.config);
  try {
    let progress: ReturnType<typeof createProgress> | undefined;
    const result = await initShards(target.backend, target.map, {
      concurrencyPerHost: opts.concurrency,
      onProgress: (p) => {
        progress ??= createProgress(label, p.total);
        progress.update(p.done, { created: p.created });
      },
    });
    progress?.finish({ created: result.created });
    return result;
  } finally {
    await target.close();
  }
}

export function printInitResult(label: string, result: ShardInitResult, json: boolean | undefined): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  const masters = Object.keys(result.hosts).length;
  process.stdout.write(`${label}: ${result.total} shards on ${masters} master${masters === 1 ? '' : 's'}: ${result.created} created or completed, ${result.total - result.created} already complete (${(result.elapsedMs / 1000).toFixed(1)} s)\n`);
}

export function register(program: Command): void {
  program
    .command('init')
    .description('Create every shard database and its tables on its master, following the shard map (idempotent: a second run changes nothing)')
    .option('--config <file>', 'config file', 'shardkit.json')
    .option('--concurrency <n>', 'shards created at once on each master', intOption('--concurrency', 1, 64), 4)
    .option('--json', 'print the result as one JSON object')
    .addHelpText('after', '\nProgress: a bar on a TTY, JSON lines on stderr otherwise. Slaves get the shards by replication.')
    .action(action(async (opts: ShardInitCommandOptions) => {
      printInitResult('init', await runShardInit('init', opts), opts.json);
    }));
}
