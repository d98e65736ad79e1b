import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ShardKitError } from '../../errors.js';
import { checkMappingDrift, type DriftReport } from '../../ops/mapping-drift.js';
import { createProgress } from '../../ops/progress.js';
import { ShardKit } from '../../kit/shard-kit.js';

export interface DriftCommandOptions {
  data: string;
  config?: string;
  repair?: boolean;
  pageSize: number;
  json?: boolean;
}

/** Exit code when drift was found and left as it is: scripts can tell "clean" from "needs repair". */
export const EXIT_DRIFT = 3;

export async function drift(mapping: string, reverse: string, opts: DriftCommandOptions): Promise<void> {
  const dataDir = resolve(opts.data);
  const configPath = opts.config ?? join(dataDir, 'shardkit.json');
  // Unlike serve, never write a default config: a check of a data dir that is not there is a mistake.
  if (!existsSync(configPath)) throw new ShardKitError('INVALID_CONFIG', `no config file at ${configPath} (give --data or --config)`);
  const kit = await ShardKit.open({ configPath, dataDir });
  let report: DriftReport;
  try {
    let progress: ReturnType<typeof createProgress> | undefined;
    report = await checkMappingDrift(kit, {
      mapping,
      reverse,
      repair: opts.repair === true,
      pageSize: opts.pageSize,
      onProgress: (p) => {
        progress ??= createProgress(`mappings drift ${mapping} ${reverse}`, p.total);
        progress.update(p.done, { missing: p.missing, orphans: p.orphans });
      },
    });
    progress?.finish({ missing: report.missing, orphans: report.orphans });
  } finally {
    await kit.close();
  }
  if (opts.json) process.stdout.write(`${JSON.stringify(report)}\n`);
  else process.stdout.write(describe(report));
  // Drift left as it is, found and not repaired or repaired only in part, is exit 3.
  const left = (report.repaired === undefined ? report.missing + report.orphans : report.repaired.skipped) + report.misplaced.mapping + report.misplaced.reverse;
  if (left > 0) process.exitCode = EXIT_DRIFT;
}

function describe(r: DriftReport): string {
  const lines = [
    `${r.mapping} → ${r.reverse}: ${r.scanned.mapping} and ${r.scanned.reverse} pairs on ${r.shards} shards (${(r.elapsedMs / 1000).toFixed(1)} s)`,
    `  ${r.missing} pair${r.missing === 1 ? '' : 's'} of ${r.mapping} without their reverse in ${r.reverse}`,
    `  ${r.orphans} pair${r.orphans === 1 ? '' : 's'} of ${r.reverse} without theirs in ${r.mapping}`,
  ];
  for (const p of r.examples.missing) lines.push(`    missing  ${r.reverse} ${p.to} → ${p.from}`);
  for (const p of r.examples.orphans) lines.push(`    orphan   ${r.reverse} ${p.from} → ${p.to}`);
  const misplaced = r.misplaced.mapping + r.misplaced.reverse;
  if (misplaced > 0) {
    lines.push(`  ${misplaced} row${misplaced === 1 ? '' : 's'} stored on a shard their from ID does not name (never repaired: move or delete by hand)`);
    for (const p of r.examples.misplaced) lines.push(`    misplaced  ${p.table} ${p.from} → ${p.to} on shard ${p.shard}`);
  }
  if (r.repaired !== undefined) lines.push(`  repaired: ${r.repaired.added} added to and ${r.repaired.removed} removed from ${r.reverse}${r.repaired.skipped > 0 ? `, ${r.repaired.skipped} skipped (IDs that name no shard or type of this schema)` : ''}`);
  else if (r.missing + r.orphans > 0) lines.push(`  run again with --repair to make ${r.reverse} agree with ${r.mapping}`);
  return `${lines.join('\n')}\n`;
}
