import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ERROR_CODES, ShardKitError, type ErrorCode } from '../../errors.js';
import { ADMIN_TOKEN_ENV } from '../../http/admin-auth.js';
import { createProgress, type Progress } from '../../ops/progress.js';
import { publicDataset } from '../../widecolumn/dataset-config.js';
import type { WideColumnEngine } from '../../widecolumn/engine.js';
import { rocksDbDriver, wideColumnDir } from '../../widecolumn/service.js';
import type { ProgressFn } from '../../widecolumn/types.js';

export interface TargetOptions {
  data: string;
  url?: string;
  json?: boolean;
}

/** Runs fn with one progress display per phase (scan, compact, ...): a bar on a TTY, JSON lines otherwise. */
async function withProgress<T>(label: string, fn: (onProgress: ProgressFn) => Promise<T>): Promise<T> {
  const shown: { phase: string; current: Progress | null } = { phase: '', current: null };
  try {
    return await fn((e) => {
      if (e.phase !== shown.phase) {
        shown.current?.finish();
        shown.phase = e.phase;
        shown.current = createProgress(`${label} ${e.phase}`, e.total);
      }
      shown.current!.update(e.done);
    });
  } finally {
    shown.current?.finish();
  }
}

async function withStore<T>(data: string, fn: (store: WideColumnEngine) => Promise<T>): Promise<T> {
  const dir = wideColumnDir(resolve(data));
  if (!existsSync(join(dir, 'CURRENT'))) throw new ShardKitError('NOT_FOUND', `no wide-column store in ${dir} (wrong --data?)`);
  const store = await rocksDbDriver(dir).open();
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
    const token = process.env[ADMIN_TOKEN_ENV];
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token.trim()}` } : {};
    // Every POST carries a JSON body, `{}` when it has no options (the service refuses a bare POST).
    const sent = body === undefined && method === 'POST' ? {} : body;
    if (sent !== undefined) headers['content-type'] = 'application/json';
    res = await fetch(target, sent === undefined ? { method, headers } : { method, headers, body: JSON.stringify(sent) });
  } catch (err) {
    throw new ShardKitError('SHARD_UNAVAILABLE', `cannot reach the service at ${url}: ${(err as Error & { cause?: Error }).cause?.message ?? (err as Error).message}`, { cause: err });
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ShardKitError('INTERNAL', `the service at ${url} answered ${res.status} with a body that is not JSON`);
  }
  if (!res.ok) {
    const e = (json as { error?: { code?: string; message?: string } }).error;
    if (e?.code && e.code in ERROR_CODES) throw new ShardKitError(e.code as ErrorCode, `${e.message ?? 'error'} (from ${url})`);
    throw new ShardKitError('INTERNAL', `the service at ${url} answered ${res.status}: ${e?.message ?? text.slice(0, 200)}`);
  }
  return json;
}

function print(json: boolean | undefined, value: unknown, line: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${line}\n`);
}

export async function wcCompactCommand(opts: TargetOptions): Promise<void> {
  const report = opts.url
    ? await callService(opts.url, 'v1/admin/widecolumn/compact', undefined)
    : await withStore(opts.data, (store) => withProgress('wc compact', (onProgress) => store.compact({ onProgress })));
  const r = report as Record<string, number>;
  print(opts.json, report, `compacted: ${r.scannedCells} cells scanned, ${r.removedExpiredCells} expired and ${r.removedExcessVersions} excess versions removed, ${r.removedHeads} expired columns dropped, ${r.foldedLogRecords} write-log records folded; SST ${r.sstBytesBefore} -> ${r.sstBytesAfter} bytes (${r.durationMs} ms)`);
}

export async function wcBackupCommand(dir: string, opts: TargetOptions): Promise<void> {
  let result: { dir: string; records: number; bytes: number; files: number };
  if (opts.url) {
    // The service resolves the name inside its export directory and says where it wrote.
    result = (await callService(opts.url, 'v1/admin/widecolumn/backup', { name: dir })) as typeof result;
  } else {
    const target = resolve(dir);
    const m = await withStore(opts.data, (store) => withProgress('wc backup', (onProgress) => store.backup(target, { onProgress })));
    result = { dir: target, records: m.records, bytes: m.bytes, files: m.files };
  }
  const where = opts.url ? `${result.dir} on the service machine` : result.dir;
  print(opts.json, result, `backup written to ${where}: ${result.records} records, ${result.bytes} bytes in ${result.files} file(s)`);
}

export async function wcRestoreCommand(dir: string, opts: TargetOptions): Promise<void> {
  if (opts.url) throw new ShardKitError('INVALID_ARGUMENT', 'restore cannot go through a running service: stop it, restore with --data, then start it again');
  const target = wideColumnDir(resolve(opts.data));
  const r = await withProgress('wc restore', (onProgress) => rocksDbDriver(target).restore(resolve(dir), { onProgress }));
  print(opts.json, { dir: target, ...r }, `restored ${r.records} records (${r.bytes} bytes, ${r.files} file(s)) into ${target} in ${r.durationMs} ms`);
}

export async function wcExportCommand(dataset: string, file: string, opts: TargetOptions & { overwrite?: boolean }): Promise<void> {
  const overwrite = opts.overwrite === true;
  const r = (opts.url
    ? await callService(opts.url, 'v1/admin/widecolumn/export', { dataset, name: file, overwrite })
    : await withStore(opts.data, (store) => withProgress('wc export', (onProgress) => store.exportParquet(dataset, resolve(file), { overwrite, onProgress })))) as { file: string; rows: number; cells: number };
  print(opts.json, r, `exported ${r.cells} cells of ${r.rows} rows of ${dataset} to ${r.file}${opts.url ? ' on the service machine' : ''}`);
}

export async function wcDatasetsCommand(opts: TargetOptions): Promise<void> {
  const list = opts.url
    ? ((await callService(opts.url, 'v1/datasets', undefined, 'GET')) as { datasets: ReturnType<typeof publicDataset>[] }).datasets
    : await withStore(opts.data, async (store) => (await store.listDatasets()).map(publicDataset));
  print(opts.json, list, list.length === 0 ? 'no datasets' : list.map((d) => `${d.name}\tmaxVersions=${d.maxVersions}\tttlSeconds=${d.ttlSeconds}`).join('\n'));
}
