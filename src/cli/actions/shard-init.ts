import { createProgress } from '../../ops/progress.js';
import { initShards, type ShardInitResult } from '../../ops/shard-init.js';
import { openShardTarget } from '../../ops/shard-target.js';
import type { ShardKitConfig } from '../../config/config.js';
import type { ShardMap } from '../../topology/shard-map.js';
import { parseWideColumnConfig } from '../../widecolumn/service.js';
import { openMyrocksEngine } from '../../widecolumn/myrocks/index.js';

/**
 * With `widecolumn.engine` "myrocks", the wide-column shards (wc00000... on the mod shards'
 * masters) with the catalogue and every dataset's tables. CREATE ... IF NOT EXISTS only.
 */
async function initWideColumnShards(config: ShardKitConfig, map: ShardMap): Promise<void> {
  const wc = parseWideColumnConfig(config.widecolumn);
  if (wc.engine !== 'myrocks') return;
  const engine = openMyrocksEngine({ storage: config.storage, hosts: config.hosts, shardMap: () => map }, wc.myrocks);
  try {
    let progress: ReturnType<typeof createProgress> | undefined;
    await engine.createShards({
      onProgress: (p) => {
        progress ??= createProgress('wide-column shards', p.total);
        progress.update(p.done);
      },
    });
    progress?.finish();
  } finally {
    await engine.close();
  }
}

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
    await initWideColumnShards(target.config, target.map);
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

/** Runs `init` or `schema apply` and prints its result. */
export async function shardInitCommand(label: string, opts: ShardInitCommandOptions): Promise<void> {
  printInitResult(label, await runShardInit(label, opts), opts.json);
}
