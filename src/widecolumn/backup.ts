import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { open, readFile, rename, writeFile, type FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import type { WriteBatch } from './rocksdb.js';
import { ShardKitError } from '../errors.js';
import { openRocks } from './rocksdb.js';
import type { WideColumnSnapshot } from './snapshot.js';
import type { ProgressFn } from './types.js';
import type { StoreInternals } from './store-internals.js';

/**
 * Backup format (rocksdb-native has no checkpoint API, so the backup is a logical copy of a
 * RocksDB snapshot): `data-NNNNNN.kv` files of records `u32 keyLength | key | u32 valueLength |
 * value` in key order, and `manifest.json`, written last, with each file's record count, size
 * and SHA-256. A directory without a manifest is an unfinished backup and is refused.
 */
export const BACKUP_FORMAT = 'shardkit-widecolumn-backup';
const FILE_BYTES = 64 * 1024 * 1024;
const WRITE_CHUNK = 1024 * 1024;

const manifestSchema = z.object({
  format: z.literal(BACKUP_FORMAT),
  version: z.literal(1),
  createdAt: z.number(),
  snapshotAt: z.number(),
  records: z.number().int().min(0),
  bytes: z.number().int().min(0),
  files: z.array(z.object({ name: z.string().regex(/^data-[0-9]{6}\.kv$/), records: z.number().int().min(0), bytes: z.number().int().min(0), sha256: z.string().regex(/^[0-9a-f]{64}$/) })),
});

export type BackupManifest = z.infer<typeof manifestSchema>;

export interface RestoreReport {
  records: number;
  bytes: number;
  files: number;
  durationMs: number;
}

class KvFileWriter {
  private chunks: Buffer[] = [];
  private chunkBytes = 0;
  readonly hash = createHash('sha256');
  bytes = 0;
  records = 0;

  private constructor(readonly name: string, private readonly fh: FileHandle) {}

  static async create(dir: string, index: number): Promise<KvFileWriter> {
    const name = `data-${String(index).padStart(6, '0')}.kv`;
    return new KvFileWriter(name, await open(join(dir, name), 'wx'));
  }

  async add(key: Buffer, value: Buffer): Promise<void> {
    const head = Buffer.allocUnsafe(4);
    head.writeUInt32BE(key.length, 0);
    const mid = Buffer.allocUnsafe(4);
    mid.writeUInt32BE(value.length, 0);
    for (const b of [head, key, mid, value]) {
      this.chunks.push(b);
      this.chunkBytes += b.length;
    }
    this.records++;
    if (this.chunkBytes >= WRITE_CHUNK) await this.drain();
  }

  private async drain(): Promise<void> {
    if (this.chunkBytes === 0) return;
    const buf = Buffer.concat(this.chunks, this.chunkBytes);
    this.chunks = [];
    this.chunkBytes = 0;
    this.hash.update(buf);
    this.bytes += buf.length;
    await this.fh.write(buf);
  }

  async finish(): Promise<BackupManifest['files'][number]> {
    await this.drain();
    await this.fh.sync();
    await this.fh.close();
    return { name: this.name, records: this.records, bytes: this.bytes, sha256: this.hash.digest('hex') };
  }

  async abort(): Promise<void> {
    await this.fh.close().catch(() => undefined);
  }
}

function checkEmptyTarget(dir: string, what: string): void {
  if (!existsSync(dir)) return;
  if (!statSync(dir).isDirectory()) throw new ShardKitError('ALREADY_EXISTS', `${what} ${dir} exists and is not a directory; give a new or empty directory`);
  if (readdirSync(dir).length > 0) throw new ShardKitError('ALREADY_EXISTS', `${what} ${dir} is not empty; give a new or empty directory`);
}

/**
 * Writes a consistent backup of the whole store (every dataset and its settings) from a RocksDB
 * snapshot while writes continue. `snapshot` lets a caller back up a snapshot it also reads.
 */
export function backup(store: StoreInternals, dir: string, options: { snapshot?: WideColumnSnapshot; onProgress?: ProgressFn } = {}): Promise<BackupManifest> {
  return store.track(() => runBackup(store, dir, options));
}

async function runBackup(store: StoreInternals, dir: string, options: { snapshot?: WideColumnSnapshot; onProgress?: ProgressFn }): Promise<BackupManifest> {
  const target = resolve(dir);
  checkEmptyTarget(target, 'backup directory');
  mkdirSync(target, { recursive: true });
  const snap = options.snapshot ?? store.snapshot();
  const estimate = Number(await store.db.getProperty('rocksdb.estimate-num-keys')) || 0;
  const files: BackupManifest['files'] = [];
  let writer: KvFileWriter | null = null;
  let records = 0;
  let bytes = 0;
  try {
    for await (const { key, value } of snap.entries()) {
      if (!writer) writer = await KvFileWriter.create(target, files.length + 1);
      await writer.add(key, value);
      records++;
      if (records % 10_000 === 0) options.onProgress?.({ phase: 'backup', done: records, total: Math.max(estimate, records) });
      if (writer.bytes >= FILE_BYTES) {
        const f = await writer.finish();
        files.push(f);
        bytes += f.bytes;
        writer = null;
      }
    }
    if (writer) {
      const f = await writer.finish();
      files.push(f);
      bytes += f.bytes;
      writer = null;
    }
    const manifest: BackupManifest = { format: BACKUP_FORMAT, version: 1, createdAt: Date.now(), snapshotAt: snap.takenAt, records, bytes, files };
    const tmp = join(target, 'manifest.json.tmp');
    await writeFile(tmp, JSON.stringify(manifest, null, 2) + '\n');
    await rename(tmp, join(target, 'manifest.json'));
    options.onProgress?.({ phase: 'backup', done: records, total: records });
    store.logger?.info({ dir: target, records, bytes, files: files.length }, 'wide-column backup written');
    return manifest;
  } catch (err) {
    await writer?.abort();
    throw err;
  } finally {
    if (!options.snapshot) await snap.close();
  }
}

export async function readManifest(dir: string): Promise<BackupManifest> {
  let text: string;
  try {
    text = await readFile(join(dir, 'manifest.json'), 'utf8');
  } catch {
    throw new ShardKitError('INVALID_ARGUMENT', `${dir} holds no finished wide-column backup (no manifest.json)`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ShardKitError('INVALID_ARGUMENT', `${dir}/manifest.json is not valid JSON`);
  }
  const parsed = manifestSchema.safeParse(json);
  if (!parsed.success) throw new ShardKitError('INVALID_ARGUMENT', `${dir}/manifest.json is not a wide-column backup manifest: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

/**
 * Restores a backup into `targetDir`, which must be new or empty (a live store is never
 * overwritten). Every file's checksum is verified; on any failure the target is removed again.
 */
export async function restore(backupDir: string, targetDir: string, options: { onProgress?: ProgressFn } = {}): Promise<RestoreReport> {
  const started = Date.now();
  const source = resolve(backupDir);
  const target = resolve(targetDir);
  const manifest = await readManifest(source);
  checkEmptyTarget(target, 'restore target');
  const createdTarget = !existsSync(target);
  const db = await openRocks(target);
  let ok = false;
  let records = 0;
  try {
    for (const f of manifest.files) {
      const data = await readFile(join(source, f.name));
      const sha = createHash('sha256').update(data).digest('hex');
      if (data.length !== f.bytes || sha !== f.sha256) {
        throw new ShardKitError('INVALID_ARGUMENT', `backup file ${f.name} is damaged (size or SHA-256 differs from the manifest)`);
      }
      let off = 0;
      let n = 0;
      let w: WriteBatch | null = null;
      let inBatch = 0;
      let batchBytes = 0;
      try {
        while (off < data.length) {
          if (off + 4 > data.length) throw damaged(f.name);
          const kl = data.readUInt32BE(off);
          off += 4;
          if (off + kl + 4 > data.length) throw damaged(f.name);
          const key = data.subarray(off, off + kl);
          off += kl;
          const vl = data.readUInt32BE(off);
          off += 4;
          if (off + vl > data.length) throw damaged(f.name);
          const value = data.subarray(off, off + vl);
          off += vl;
          w ??= db.write({ capacity: 1024 });
          w.tryPut(key, value);
          inBatch++;
          batchBytes += kl + vl;
          n++;
          if (inBatch >= 1024 || batchBytes >= 4 * 1024 * 1024) {
            await w.flush();
            inBatch = 0;
            batchBytes = 0;
          }
        }
        if (w && inBatch > 0) await w.flush();
      } finally {
        w?.destroy();
      }
      if (n !== f.records) throw damaged(f.name);
      records += n;
      options.onProgress?.({ phase: 'restore', done: records, total: manifest.records });
    }
    if (records !== manifest.records) throw new ShardKitError('INVALID_ARGUMENT', 'backup record count differs from the manifest');
    await db.flush();
    ok = true;
  } finally {
    await db.close().catch(() => undefined);
    if (!ok) rmSync(target, { recursive: true, force: true });
    if (!ok && !createdTarget) mkdirSync(target, { recursive: true });
  }
  return { records, bytes: manifest.bytes, files: manifest.files.length, durationMs: Date.now() - started };
}

function damaged(name: string): ShardKitError {
  return new ShardKitError('INVALID_ARGUMENT', `backup file ${name} is damaged (truncated record)`);
}
