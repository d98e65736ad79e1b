import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { ERROR_CODES, ShardKitError, type ErrorCode } from '../../errors.js';
import { createProgress, type Progress } from '../../ops/progress.js';
import { backup, restore } from '../../widecolumn/backup.js';
import { compact } from '../../widecolumn/compaction.js';
import { publicDataset } from '../../widecolumn/dataset-config.js';
import { exportParquet } from '../../widecolumn/parquet-export.js';
import { wideColumnDir } from '../../widecolumn/service.js';
import type { ProgressFn } from '../../widecolumn/types.js';
import { WideColumnStore } from '../../widecolumn/wide-column-store.js';
import { action } from '../run-action.js';

interface TargetOptions {
  data: string;
  url?: string;
  json?: boolean;
}

const DATA_HELP = 'data directory of the service (the store is <data>/widecolumn)';
const URL_HELP = 'ask the running service at this URL instead (e.g. http://127.0.0.1:7070)';
const URL_OUTPUT_HELP = 'ask the running service at this URL instead (e.g. http://127.0.0.1:7070); it writes only into its export directory (<data>/widecolumn-exports unless configured), so give a plain name there instead of a path';

/** One progress display per phase (scan, compact, ...), a bar on a TTY, JSON lines otherwise. */
function progressReporter(label: string): { onProgress: ProgressFn; finish(): void } {
  let phase = '';
  let current: Progress | null = null;
  return {
    onProgress(e) {
      if (e.phase !== phase) {
        current?.finish();
        phase = e.phase;
        current = createProgress(`${label} ${e.phase}`, e.total);
      }
      current!.update(e.done);
    },
    finish() {
      current?.finish();
      current = null;
    },
  };
}

async function withStore<T>(data: string, fn: (store: WideColumnStore) => Promise<T>): Promise<T> {
  const dir = wideColumnDir(resolve(data));
  if (!existsSync(join(dir, 'CURRENT'))) throw new ShardKitError('NOT_FOUND', `no wide-column store in ${dir} (wrong --data?)`);
  const store = await WideColumnStore.open(dir);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** POSTs to a running service; its `{"error":{code,message}}` becomes the same ShardKitError. */
export async function callService(url: string, path: string, body: unknown, method = 'POST'): Promise<unknown> {
  let res: Response;
  const target = new URL(path, url.endsWith('/') ? url : `${url}/`);
  try {
    res = await fetch(target, body === undefined ? { method } : { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  } catch (err) {
    throw new Error(`cannot reach the service at ${url}: ${(err as Error & { cause?: Error }).cause?.message ?? (err as Error).message}`);
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`the service at ${url} answered ${res.status} with a body that is not JSON`);
  }
  if (!res.ok) {
    const e = (json as { error?: { code?: string; message?: string } }).error;
    if (e?.code && e.code in ERROR_CODES) throw new ShardKitError(e.code as ErrorCode, `${e.message ?? 'error'} (from ${url})`);
    throw new Error(`the service at ${url} answered ${res.status}: ${e?.message ?? text.slice(0, 200)}`);
  }
  return json;
}

function print(json: boolean | undefined, value: unknown, line: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${line}\n`);
}

export function register(program: Command): void {
  const wc = program
    .command('wc')
    .description('Wide-column store on RocksDB: compaction, backups, restores, Parquet exports (docs/widecolumn.md)')
    .addHelpText('after', `
The commands open <data>/widecolumn directly, which RocksDB allows to one process at a time:
while \`shardkit serve\` runs on that data directory they say so (STORE_LOCKED) and --url asks
the service instead.`);

  wc.command('compact')
    .description('Remove expired cells and versions beyond each dataset\'s maxVersions from the disk (range deletes, then a RocksDB compaction); reads never return them anyway')
    .option('--data <dir>', DATA_HELP, './data')
    .option('--url <url>', URL_HELP)
    .option('--json', 'print the report as JSON')
    .action(action(async (opts: TargetOptions) => {
      const report = opts.url
        ? await callService(opts.url, 'v1/admin/widecolumn/compact', undefined)
        : await withStore(opts.data, async (store) => {
          const p = progressReporter('wc compact');
          try {
            return await compact(store, { onProgress: p.onProgress });
          } finally {
            p.finish();
          }
        });
      const r = report as Record<string, number>;
      print(opts.json, report, `compacted: ${r.scannedCells} cells scanned, ${r.removedExpiredCells} expired and ${r.removedExcessVersions} excess versions removed, ${r.removedHeads} expired columns dropped; SST ${r.sstBytesBefore} -> ${r.sstBytesAfter} bytes (${r.durationMs} ms)`);
    }));

  wc.command('backup')
    .description('Write a consistent backup (from a RocksDB snapshot, while writes go on) of every dataset into a new or empty directory')
    .argument('<dir>', 'backup directory (new or empty); with --url, a new name in the service\'s export directory')
    .option('--data <dir>', DATA_HELP, './data')
    .option('--url <url>', URL_OUTPUT_HELP)
    .option('--json', 'print the result as JSON')
    .action(action(async (dir: string, opts: TargetOptions) => {
      let result: { dir: string; records: number; bytes: number; files: number };
      if (opts.url) {
        // The service resolves the name inside its export directory and says where it wrote.
        result = (await callService(opts.url, 'v1/admin/widecolumn/backup', { name: dir })) as typeof result;
      } else {
        const target = resolve(dir);
        result = await withStore(opts.data, async (store) => {
          const p = progressReporter('wc backup');
          try {
            const m = await backup(store, target, { onProgress: p.onProgress });
            return { dir: target, records: m.records, bytes: m.bytes, files: m.files.length };
          } finally {
            p.finish();
          }
        });
      }
      const where = opts.url ? `${result.dir} on the service machine` : result.dir;
      print(opts.json, result, `backup written to ${where}: ${result.records} records, ${result.bytes} bytes in ${result.files} file(s)`);
    }));

  wc.command('restore')
    .description('Restore a backup into <data>/widecolumn, which must not hold a store yet (stop the service; move the old store away first)')
    .argument('<dir>', 'backup directory written by `wc backup`')
    .option('--data <dir>', DATA_HELP, './data')
    .option('--url <url>', 'refused: a running service cannot swap its store; stop it and restore into its data directory')
    .option('--json', 'print the result as JSON')
    .action(action(async (dir: string, opts: TargetOptions) => {
      if (opts.url) throw new ShardKitError('INVALID_ARGUMENT', 'restore cannot go through a running service: stop it, restore with --data, then start it again');
      const target = wideColumnDir(resolve(opts.data));
      const p = progressReporter('wc restore');
      let r;
      try {
        r = await restore(resolve(dir), target, { onProgress: p.onProgress });
      } finally {
        p.finish();
      }
      print(opts.json, { dir: target, ...r }, `restored ${r.records} records (${r.bytes} bytes, ${r.files} file(s)) into ${target} in ${r.durationMs} ms`);
    }));

  wc.command('export')
    .description('Write the live cells of a dataset (unexpired, within maxVersions) as Parquet with columns row_key, column, timestamp, value')
    .argument('<dataset>', 'dataset name')
    .argument('<file>', 'Parquet file to write (refused if it exists, unless --overwrite); with --url, a name in the service\'s export directory')
    .option('--data <dir>', DATA_HELP, './data')
    .option('--url <url>', URL_OUTPUT_HELP)
    .option('--overwrite', 'replace an existing file')
    .option('--json', 'print the result as JSON')
    .action(action(async (dataset: string, file: string, opts: TargetOptions & { overwrite?: boolean }) => {
      const overwrite = opts.overwrite === true;
      const r = (opts.url
        ? await callService(opts.url, 'v1/admin/widecolumn/export', { dataset, name: file, overwrite })
        : await withStore(opts.data, async (store) => {
          const p = progressReporter('wc export');
          try {
            return await exportParquet(store, dataset, resolve(file), { overwrite, onProgress: p.onProgress });
          } finally {
            p.finish();
          }
        })) as { file: string; rows: number; cells: number };
      print(opts.json, r, `exported ${r.cells} cells of ${r.rows} rows of ${dataset} to ${r.file}${opts.url ? ' on the service machine' : ''}`);
    }));

  wc.command('datasets')
    .description('List the datasets and their settings (maxVersions, ttlSeconds)')
    .option('--data <dir>', DATA_HELP, './data')
    .option('--url <url>', URL_HELP)
    .option('--json', 'print JSON')
    .action(action(async (opts: TargetOptions) => {
      const list = opts.url
        ? ((await callService(opts.url, 'v1/datasets', undefined, 'GET')) as { datasets: ReturnType<typeof publicDataset>[] }).datasets
        : await withStore(opts.data, async (store) => store.listDatasets().map(publicDataset));
      print(opts.json, list, list.length === 0 ? 'no datasets' : list.map((d) => `${d.name}\tmaxVersions=${d.maxVersions}\tttlSeconds=${d.ttlSeconds}`).join('\n'));
    }));
}
