import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ShardKitError } from '../../errors.js';
import { ShardKit } from '../../kit/shard-kit.js';
import { createProgress, type Progress } from '../../ops/progress.js';
import { openTableSource, parseSourceUrl, TableMigration, type MappingSpec, type TableMigrationReport } from '../../migrate/table/index.js';

/** `shardkit migrate --from <mysql|mariadb|postgres URL> --to <config.json> ...` (docs/migrate.md, "From a table"). */
export interface TableMigrationCliOptions {
  from: string;
  to: string;
  query?: string;
  type?: string;
  idColumn?: string;
  changedColumn?: string;
  /** `COL:MAPPING` or `COL:MAPPING:KEYSPACE`, repeatable. */
  mapping?: string[];
  /** Columns whose text is parsed as JSON, repeatable. */
  jsonColumn?: string[];
  dataColumn?: string;
  keyspace?: string;
  stateType?: string;
  batch?: number;
  concurrency?: number;
  overlap?: number;
  final?: boolean;
  fromStart?: boolean;
  json?: boolean;
}

/** Where the action writes: the process's streams by default, buffers in tests. */
export interface MigrateIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** A progress bar when true, JSON lines on stderr otherwise. */
  isTTY: boolean;
  /** Stops the run after the current page (default: SIGINT and SIGTERM do). */
  signal?: AbortSignal;
}

export const processIo = (): MigrateIo => ({
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  isTTY: process.stderr.isTTY === true,
});

/** Exit code of a run stopped by a signal (its progress is saved: run it again to go on). */
export const EXIT_INTERRUPTED = 130;

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value === '') throw new ShardKitError('INVALID_ARGUMENT', `a table migration needs ${flag}`);
  return value;
}

const COLUMN = /^[^\s:]{1,64}$/;

export function parseMappingSpec(spec: string): MappingSpec {
  const parts = spec.split(':');
  if (parts.length < 2 || parts.length > 3 || parts.some((p) => p === '') || !COLUMN.test(parts[0]!)) {
    throw new ShardKitError('INVALID_ARGUMENT', `--mapping ${JSON.stringify(spec)}: expected COLUMN:MAPPING or COLUMN:MAPPING:KEYSPACE (e.g. board_id:board_has_pins)`);
  }
  return { column: parts[0]!, mapping: parts[1]!, ...(parts[2] !== undefined ? { keyspace: parts[2] } : {}) };
}

/**
 * Runs one table migration and prints its report: one JSON line on stdout with --json, else a
 * summary. Returns the report; sets process.exitCode to 130 when a signal stopped it.
 */
export async function runTableMigration(opts: TableMigrationCliOptions, io: MigrateIo = processIo()): Promise<TableMigrationReport> {
  // Every check of the arguments comes before any connection.
  const source = parseSourceUrl(opts.from);
  const query = required(opts.query, '--query SQL');
  const type = required(opts.type, '--type TYPE');
  const idColumn = required(opts.idColumn, '--id-column COL');
  const changedColumn = required(opts.changedColumn, '--changed-column COL');
  const mappings = (opts.mapping ?? []).map(parseMappingSpec);
  if (opts.final && opts.fromStart) throw new ShardKitError('INVALID_ARGUMENT', '--final and --from-start do not go together');
  const configPath = resolve(required(opts.to, '--to config.json'));
  if (!existsSync(configPath)) throw new ShardKitError('INVALID_CONFIG', `no config file at ${configPath} (--to)`);

  const kit = await ShardKit.open({ configPath, dataDir: dirname(configPath) });
  const controller = new AbortController();
  const stop = () => controller.abort();
  const ownSignals = io.signal === undefined;
  if (ownSignals) {
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  } else io.signal!.addEventListener('abort', stop, { once: true });
  let progress: Progress | undefined;
  const jsonLine = (o: Record<string, unknown>) => io.stderr(`${JSON.stringify({ op: 'migrate', ...o })}\n`);
  try {
    const table = await openTableSource(source, query);
    try {
      const migration = new TableMigration(kit, table, source.display, query, {
        type, idColumn, changedColumn, mappings,
        ...(opts.jsonColumn ? { jsonColumns: opts.jsonColumn } : {}),
        ...(opts.dataColumn !== undefined ? { dataColumn: opts.dataColumn } : {}),
        ...(opts.keyspace !== undefined ? { keyspace: opts.keyspace } : {}),
        ...(opts.stateType !== undefined ? { stateType: opts.stateType } : {}),
        ...(opts.batch !== undefined ? { batch: opts.batch } : {}),
        ...(opts.concurrency !== undefined ? { concurrency: opts.concurrency } : {}),
        ...(opts.overlap !== undefined ? { overlapSeconds: opts.overlap } : {}),
        final: opts.final === true,
        fromStart: opts.fromStart === true,
        signal: controller.signal,
        onStart: ({ total, from, pass }) => {
          progress?.finish();
          if (io.isTTY) progress = createProgress(`migrate ${pass} ${type}`, total, { mode: 'bar' });
          else jsonLine({ event: 'start', pass, total, from });
        },
        onProgress: (p) => {
          const done = p.scanned;
          if (progress) progress.update(done);
          else jsonLine({ event: 'progress', ...p });
        },
        onSkip: (s) => {
          if (!io.isTTY) jsonLine({ event: 'skip', ...s });
        },
      });
      const report = await migration.run();
      progress?.finish();
      progress = undefined;
      io.stdout(opts.json ? `${JSON.stringify(report)}\n` : describe(report));
      if (report.interrupted) process.exitCode = EXIT_INTERRUPTED;
      return report;
    } finally {
      await table.close();
    }
  } finally {
    progress?.finish();
    if (ownSignals) {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
    await kit.close();
  }
}

function describe(r: TableMigrationReport): string {
  const lines = [
    `${r.final ? 'final pass' : 'pass'} from ${r.source} into ${r.type} (old ids in keyspace ${r.keyspace}, state object ${r.stateObject})`,
    `  read ${r.scanned} rows from ${r.highWater.readFrom ?? 'the start'} in ${(r.elapsedMs / 1000).toFixed(1)} s (${r.rowsPerSecond} rows/s)`,
    `  copied ${r.copied} (${r.created} created, ${r.updated} updated), ${r.unchanged} unchanged, ${r.skipped} skipped`,
  ];
  if (r.mappingsAdded + r.mappingsRemoved + r.mappingsSkipped > 0) lines.push(`  mappings: ${r.mappingsAdded} added, ${r.mappingsRemoved} removed, ${r.mappingsSkipped} skipped`);
  if (r.untracked.count > 0) lines.push(`  ${r.untracked.count} rows have a NULL id or changed column and are never copied (${r.untracked.examples.slice(0, 3).join('; ')})`);
  for (const s of r.skips.slice(0, 20)) lines.push(`    skipped ${s.id ?? '(no id)'}: ${s.reason}`);
  if (r.skips.length > 20) lines.push(`    … ${r.skips.length - 20} more (--json lists up to 1000)`);
  lines.push(`  high-water mark: ${r.highWater.after ?? '-'}`);
  if (r.final) lines.push(`  source read-only (${r.readOnly}); a verifying pass copied ${r.verifyCopied ?? 0}: cut over now`);
  if (r.interrupted) lines.push('  interrupted: progress is saved, run the same command again to go on');
  else if (!r.final) lines.push(`  delta ${r.copied}: run again until it is near zero, then make the source read-only and run with --final`);
  return `${lines.join('\n')}\n`;
}
