import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { LRUCache } from 'lru-cache';
import { checkHost, checkRef } from '../backend-args.js';
import type { Fleet, SchemaDef, ShardRef } from '../shard-backend.js';
import { shardDatabaseName } from '../shard-names.js';
import { ShardFile, shardTemplate } from './shard-file.js';
import { CreationFence } from './sqlite-write-fence.js';

interface HostEntry {
  dir: string;
  paths: Array<string | undefined>;
}

export interface ShardFilesOptions {
  root: string;
  schema: SchemaDef;
  maxOpenShards: number;
  hostDirs: Record<string, string | undefined>;
  file: { busyTimeoutMs: number; synchronous: 'normal' | 'full' };
}

/**
 * Where shard files live and which are open: a host is a directory (`<root>/<host>` or its
 * configured dir), shard n is `db0000n.sqlite` in it, and at most maxOpenShards files stay open
 * (least recently used closed first). Reads never create a file; writes create it from a
 * template of the fleet's empty tables.
 */
export class ShardFiles {
  private readonly files: LRUCache<string, ShardFile>;
  private readonly hosts = new Map<string, HostEntry>();
  private readonly templates = new Map<Fleet, Buffer>();
  private readonly creationFences = new Map<string, CreationFence>();

  constructor(private readonly options: ShardFilesOptions) {
    this.files = new LRUCache<string, ShardFile>({ max: options.maxOpenShards, dispose: (file) => file.close() });
  }

  get openFiles(): number {
    return this.files.size;
  }

  hostDir(host: string): string {
    let h = this.hosts.get(host);
    if (h === undefined) {
      checkHost(host);
      const dir = this.options.hostDirs[host];
      const root = this.options.root;
      h = { dir: dir === undefined || dir === '' ? join(root, host) : isAbsolute(dir) ? dir : resolve(root, dir), paths: [] };
      this.hosts.set(host, h);
    }
    return h.dir;
  }

  /** The file of a shard (whether or not it exists yet). */
  shardPath(ref: ShardRef): string {
    this.hostDir(ref.host);
    const h = this.hosts.get(ref.host)!;
    checkRef(ref, true);
    // Paths are built once per shard: this is on the path of every call.
    return (h.paths[ref.shard] ??= join(h.dir, `${shardDatabaseName(ref.shard)}.sqlite`));
  }

  /** The open file of a shard that exists, or undefined; never creates one. `anyFleet`: also when it holds only the other fleet. */
  readable(ref: ShardRef, anyFleet = false): ShardFile | undefined {
    const path = this.shardPath(ref);
    let file = this.files.get(path);
    if (file === undefined) {
      if (!existsSync(path)) return undefined;
      file = ShardFile.open(path, false, this.options.file);
      this.files.set(path, file);
    }
    if (anyFleet) return file;
    if (!file.holds(ref.fleet)) return undefined;
    file.ensure(ref.fleet, this.options.schema);
    return file;
  }

  /** The open file of a shard, created with all its fleet's tables when missing. */
  writable(ref: ShardRef): ShardFile {
    const path = this.shardPath(ref);
    let file = this.files.get(path);
    if (file === undefined) {
      const dir = this.hostDir(ref.host);
      mkdirSync(dir, { recursive: true });
      const open = () => ShardFile.open(path, { template: this.template(ref.fleet) }, this.options.file);
      // A new file only under the host's creation lock, and never while a migration fences the store.
      file = existsSync(path) ? open() : this.creationFence(ref.host, dir).make(open);
      this.files.set(path, file);
    }
    file.ensure(ref.fleet, this.options.schema);
    return file;
  }

  /**
   * Forgets the cached handle of a shard when the file it has open was fenced by a move (true).
   * The path may hold another file by now (the fenced one dropped, the shard moved back): the
   * next call opens that one instead of meeting the old file's missing tables for ever.
   */
  forgetMoved(ref: ShardRef): boolean {
    const path = this.shardPath(ref);
    const file = this.files.get(path);
    if (file === undefined || !file.movedAway()) return false;
    this.files.delete(path);
    return true;
  }

  /** Closes and deletes the shard's file (with its WAL). */
  remove(ref: ShardRef, file: ShardFile): void {
    const path = this.shardPath(ref);
    this.files.delete(path);
    file.close();
    for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
  }

  closeAll(): void {
    this.files.clear();
    for (const f of this.creationFences.values()) f.close();
    this.creationFences.clear();
  }

  private creationFence(host: string, dir: string): CreationFence {
    let f = this.creationFences.get(host);
    if (f === undefined) {
      f = new CreationFence(dir, this.options.file.busyTimeoutMs);
      this.creationFences.set(host, f);
    }
    return f;
  }

  private template(fleet: Fleet): Buffer {
    let t = this.templates.get(fleet);
    if (t === undefined) {
      t = shardTemplate(this.options.schema, fleet);
      this.templates.set(fleet, t);
    }
    return t;
  }
}
