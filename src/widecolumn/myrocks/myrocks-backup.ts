import { createReadStream, createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { once } from 'node:events';
import { ShardKitError } from '../../errors.js';
import type { DatasetConfig } from '../dataset-config.js';

/**
 * A logical backup of the MyRocks engine: `manifest.json` (format, shard count, the catalogue,
 * the snapshot time of each host) and one JSON-lines file per dataset and shard
 * (`wc00042.events.jsonl`), each line one stored record: cells and head records alike, bytes as
 * base64, so a restore puts back exactly what was there. Each host is read from one snapshot.
 */
export const MYROCKS_BACKUP_FORMAT = 'shardkit-myrocks-backup-1';

export interface MyrocksBackupManifest {
  format: typeof MYROCKS_BACKUP_FORMAT;
  shards: number;
  datasets: DatasetConfig[];
  hosts: Record<string, { snapshotAt: number; shards: number[] }>;
  records: number;
}

export interface StoredRecord {
  rh: Buffer;
  col: Buffer;
  nts: string | number;
  row_key: Buffer;
  v: Buffer;
  exp: string | number;
  hts: string | number;
}

export function checkBackupTarget(dir: string): void {
  if (existsSync(dir) && readdirSync(dir).length > 0) throw new ShardKitError('ALREADY_EXISTS', `backup directory ${dir} is not empty`);
  mkdirSync(dir, { recursive: true });
}

export function shardFile(dir: string, dbName: string, dataset: string): string {
  return join(dir, `${dbName}.${dataset}.jsonl`);
}

/** Appends records to a shard file; returns the bytes written. */
export async function writeRecords(file: string, records: StoredRecord[]): Promise<number> {
  const out = createWriteStream(file, { flags: 'a' });
  let bytes = 0;
  for (const r of records) {
    const line = `${JSON.stringify([r.rh.toString('base64'), r.col.toString('base64'), String(r.nts), r.row_key.toString('base64'), r.v.toString('base64'), String(r.exp), String(r.hts)])}\n`;
    bytes += line.length;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return bytes;
}

export async function* readRecords(file: string): AsyncGenerator<Array<Buffer | string>> {
  if (!existsSync(file)) return;
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line) continue;
    const [rh, col, nts, rowKey, v, exp, hts] = JSON.parse(line) as string[];
    yield [Buffer.from(rh!, 'base64'), Buffer.from(col!, 'base64'), nts!, Buffer.from(rowKey!, 'base64'), Buffer.from(v!, 'base64'), exp!, hts!];
  }
}

export function writeManifest(dir: string, m: MyrocksBackupManifest): void {
  writeFileSync(join(dir, 'manifest.json'), `${JSON.stringify(m, null, 2)}\n`);
}

export function readMyrocksManifest(dir: string): MyrocksBackupManifest {
  let m: MyrocksBackupManifest;
  try {
    m = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as MyrocksBackupManifest;
  } catch (err) {
    throw new ShardKitError('INVALID_ARGUMENT', `${dir} holds no readable MyRocks wide-column backup (manifest.json)`, { cause: err });
  }
  if (m.format !== MYROCKS_BACKUP_FORMAT) throw new ShardKitError('INVALID_ARGUMENT', `${dir}: backup format ${JSON.stringify(m.format)} is not ${MYROCKS_BACKUP_FORMAT}`);
  return m;
}
