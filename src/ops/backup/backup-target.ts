import { createReadStream, createWriteStream, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ShardKitError } from '../../errors.js';
import { syncPath } from '../../util/durable-file.js';

/**
 * Where backups are kept. Small on purpose so an object store (S3 and friends: put, get, list,
 * delete by prefix) can implement it later. Names are relative paths with `/`; an object written
 * by `put` is visible under its name only once it is complete.
 */
export interface BackupTarget {
  /** Stores `source` under `name` (replacing it); resolves to the bytes written. */
  put(name: string, source: Readable | Buffer | string): Promise<number>;
  /** The object's bytes; NOT_FOUND when there is none. */
  get(name: string): Readable;
  exists(name: string): Promise<boolean>;
  /** Names directly below `prefix` ('' for the top level), sorted. */
  list(prefix: string): Promise<string[]>;
  /** Removes `name` and everything below it. */
  remove(name: string): Promise<void>;
  /** Where it is, for messages. */
  readonly location: string;
}

const NAME = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;

function checkName(name: string): void {
  if (!NAME.test(name) || name.split('/').some((p) => p === '.' || p === '..')) throw new ShardKitError('INVALID_ARGUMENT', `bad backup object name "${name}"`);
}

/** A directory on a local (or mounted) file system. */
export class DirectoryTarget implements BackupTarget {
  readonly location: string;

  constructor(dir: string) {
    this.location = resolve(dir);
  }

  private path(name: string): string {
    checkName(name);
    return join(this.location, ...name.split('/'));
  }

  async put(name: string, source: Readable | Buffer | string): Promise<number> {
    const path = this.path(name);
    mkdirSync(dirname(path), { recursive: true });
    // Written aside and renamed: a killed writer leaves a .partial file, never a short object.
    const partial = `${path}.partial`;
    const out = createWriteStream(partial);
    await pipeline(typeof source === 'string' || Buffer.isBuffer(source) ? Readable.from([Buffer.from(source)]) : source, out);
    // On disk before its name says complete, and the rename on disk before the caller goes on (a
    // manifest is put last: after a power loss it never names a file that was not written).
    syncPath(partial);
    renameSync(partial, path);
    syncPath(dirname(path));
    return statSync(path).size;
  }

  get(name: string): Readable {
    const path = this.path(name);
    if (!existsSync(path)) throw new ShardKitError('NOT_FOUND', `no ${name} in the backup target ${this.location}`);
    return createReadStream(path);
  }

  async exists(name: string): Promise<boolean> {
    return existsSync(this.path(name));
  }

  async list(prefix: string): Promise<string[]> {
    const dir = prefix === '' ? this.location : this.path(prefix);
    if (!existsSync(dir)) return [];
    return readdirSync(dir).filter((n) => !n.endsWith('.partial')).sort();
  }

  async remove(name: string): Promise<void> {
    const path = this.path(name);
    if (!path.startsWith(this.location + sep)) throw new ShardKitError('INVALID_ARGUMENT', `bad backup object name "${name}"`);
    rmSync(path, { recursive: true, force: true });
  }
}

/** The whole object as text (manifests and other small JSON files). */
export async function readText(target: BackupTarget, name: string): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of target.get(name)) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
