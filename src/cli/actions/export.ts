import { exportShards, parseSince, type ExportReport, type ExportRequest } from '../../ops/backup/index.js';
import { createProgress, type Progress } from '../../ops/progress.js';

export interface ExportCliOptions {
  dir?: string;
  config?: string;
  data?: string;
  to: string;
  json?: boolean;
}

async function run(opts: ExportCliOptions, req: Omit<ExportRequest, 'to' | 'onShard'>): Promise<void> {
  let progress: Progress | undefined;
  const r: ExportReport = await exportShards(
    { ...(opts.dir !== undefined ? { dir: opts.dir } : {}), ...(opts.config !== undefined ? { config: opts.config } : {}), ...(opts.data !== undefined ? { data: opts.data } : {}) },
    {
      ...req,
      to: opts.to,
      onShard: (done, total, rows) => {
        progress ??= createProgress(`export ${req.what} ${req.name}`, total, { unit: 'shards' });
        progress.update(done, { rows });
      },
    },
  );
  progress?.finish({ rows: r.rows });
  const since = r.sinceMs === undefined ? '' : ` created since ${new Date(r.sinceMs).toISOString()}`;
  process.stdout.write(opts.json ? `${JSON.stringify(r)}\n` : `exported ${r.rows} ${req.what === 'objects' ? `${r.name} object(s)` : `${r.name} row(s)`}${since} from ${r.shards} shard(s) (${r.engine}) into ${r.dir}: ${r.written} file(s) written, ${r.skipped} already complete\n`);
}

export function exportObjectsCommand(opts: ExportCliOptions & { type: string; since?: string }): Promise<void> {
  const sinceMs = opts.since === undefined ? undefined : parseSince(opts.since);
  return run(opts, { what: 'objects', name: opts.type, ...(sinceMs !== undefined ? { sinceMs } : {}) });
}

export function exportMappingsCommand(opts: ExportCliOptions & { type: string }): Promise<void> {
  return run(opts, { what: 'mappings', name: opts.type });
}
