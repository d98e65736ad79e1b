import { migrateKit, type KitMigrationReport, type MigrationProgress } from '../../migrate/kit-migration.js';
import { createProgress, type Progress } from '../../ops/progress.js';

/** `shardkit migrate --from <embedded config> --to <fleet config>` (docs/migrate.md). */
export interface KitMigrationCliOptions {
  from: string;
  to: string;
  final?: boolean;
  json?: boolean;
  chunkRows?: number;
  concurrency?: number;
  freezeSeconds?: number;
}

/**
 * Runs one migration run (copy and catch-up rounds; with --final the cutover) and prints its
 * report: one JSON object on stdout with --json, else a summary. Progress goes to stderr: a bar
 * per round on a TTY, JSON lines otherwise. Stopping it at any point (Ctrl-C, kill -9) is safe:
 * the next run goes on from what the target holds.
 */
export async function runKitMigration(opts: KitMigrationCliOptions): Promise<KitMigrationReport> {
  let bar: Progress | undefined;
  let barRound = -1;
  const onProgress = (p: MigrationProgress) => {
    if (p.round !== barRound) {
      bar?.finish();
      barRound = p.round;
      bar = createProgress(`migrate round ${p.round} (${p.phase})`, p.shardsTotal);
    }
    bar!.update(p.shardsDone, { rowsScanned: p.rowsScanned, rowsChanged: p.rowsChanged });
    if (p.shardsDone === p.shardsTotal) {
      bar!.finish({ rowsScanned: p.rowsScanned, rowsChanged: p.rowsChanged });
      bar = undefined;
    }
  };
  const report = await migrateKit({
    from: opts.from,
    to: opts.to,
    onProgress,
    ...(opts.final ? { final: true } : {}),
    ...(opts.chunkRows !== undefined ? { chunkRows: opts.chunkRows } : {}),
    ...(opts.concurrency !== undefined ? { concurrency: opts.concurrency } : {}),
    ...(opts.freezeSeconds !== undefined ? { freezeMs: opts.freezeSeconds * 1000 } : {}),
  });
  bar?.finish();
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return report;
  }
  const out: string[] = [];
  out.push(`migrate ${report.from} -> ${report.to}: ${report.shards.objects} object shards, ${report.shards.lookups} mod shards`);
  for (const r of report.rounds) {
    out.push(`  round ${r.round} (${r.phase}): scanned ${r.rowsScanned} rows in ${r.shards} shards, ${r.changedChunks} chunks changed, copied ${r.upserts}, deleted ${r.deletes}${r.retries > 0 ? `, ${r.retries} chunk writes retried` : ''} (${r.elapsedMs} ms)`);
  }
  out.push(`delta of the last round: ${report.delta} rows`);
  if (report.skipped.length === 0) out.push('skipped: nothing');
  for (const s of report.skipped) out.push(`skipped ${s.fleet} shard ${s.shard}: ${s.reason}`);
  if (report.final) out.push(`final: the source is read-only since ${report.final.at} (${report.final.fencedFiles} shard files fenced)`);
  for (const n of report.nextSteps) out.push(`next: ${n}`);
  process.stdout.write(`${out.join('\n')}\n`);
  return report;
}
