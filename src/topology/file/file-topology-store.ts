import { watch as fsWatch, readFileSync, type FSWatcher } from 'node:fs';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { ShardKitError } from '../../errors.js';
import { ShardMap, type MoveProgress } from '../shard-map.js';
import type { TopologyStore } from '../topology-store.js';
import { checkExpectedVersion, closedError, conflict, toShardMap } from '../store-args.js';
import { VersionListeners, type TopologyListener } from '../version-listeners.js';
import { writeFileAtomic } from './atomic-write.js';
import { acquireFileLock } from './file-lock.js';
import { FileRecordSet } from './file-record-set.js';
import { moveProgressKind } from '../move-progress-records.js';
import { serviceHeartbeatKind, type ServiceHeartbeat } from '../service-records.js';
import { healStatusKind, type HealStatus } from '../heal-records.js';
import { hostRecordKind, type HostRecord } from '../host-records.js';
import { FileMapRecords } from './file-map-records.js';
import { isRecordRoot, parseRoot, type MapRoot } from '../map-records.js';

export interface FileTopologyStoreOptions {
  /** The topology JSON file (the shard map's JSON form). Its directory is created on first write. */
  path: string;
  /** Fallback poll for `watch` when file-system events are missed (network file systems, ...). Default 1000 ms. */
  pollIntervalMs?: number;
  /** Use fs.watch on the directory for prompt notice (default true); the poll runs either way. */
  fsEvents?: boolean;
  /** How long a write waits for another writer's lock before STORE_LOCKED. Default 5000 ms. */
  lockTimeoutMs?: number;
  /** A lock file older than this is considered abandoned. Default 30000 ms. */
  staleLockMs?: number;
  /** Called when a watch listener throws or a watched file cannot be parsed. */
  onError?: (err: unknown) => void;
  /**
   * The layout a first write creates: 1, the map's JSON form in the file (the default), or 2, a
   * root naming record files (#30, file-map-records.ts). A file already holding a map keeps its
   * layout until `upgrade()`.
   */
  layout?: 1 | 2;
}

/**
 * The embedded default topology store: one JSON file. Writes are compare-and-set on the version
 * under a lock file shared by every process, and replace the file atomically (temp + fsync +
 * rename), so readers never see a torn map. `watch` follows writes from any process through
 * fs.watch on the directory plus a slow poll, and never keeps the process alive by itself.
 */
export class FileTopologyStore implements TopologyStore {
  readonly path: string;
  /** Move progress, one file per move in `<path>.progress/` (never the map's file). */
  readonly progress: FileRecordSet<MoveProgress>;
  /** Service heartbeats, one file per service in `<path>.services/`. */
  readonly services: FileRecordSet<ServiceHeartbeat>;
  /** Heal supervisors' status, one file per supervisor in `<path>.heal/`. */
  readonly heal: FileRecordSet<HealStatus>;
  /** Database hosts, one file per host in `<path>.hosts/`. */
  readonly hosts: FileRecordSet<HostRecord>;
  private readonly dir: string;
  private readonly base: string;
  private readonly lockPath: string;
  private readonly pollIntervalMs: number;
  private readonly fsEvents: boolean;
  private readonly lockTimeoutMs: number;
  private readonly staleLockMs: number;
  private readonly onError: (err: unknown) => void;
  private readonly listeners: VersionListeners;
  private writeChain: Promise<unknown> = Promise.resolve();
  private closed = false;
  private watcher: FSWatcher | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private checkTimer: NodeJS.Timeout | undefined;
  private checking = false;
  private recheck = false;
  private lastSignature = '';
  private readonly layout: 1 | 2;
  private readonly records: FileMapRecords;

  constructor(options: FileTopologyStoreOptions) {
    if (typeof options?.path !== 'string' || options.path === '') throw new ShardKitError('INVALID_ARGUMENT', 'FileTopologyStore needs a path');
    this.path = resolve(options.path);
    this.dir = dirname(this.path);
    this.base = basename(this.path);
    this.lockPath = `${this.path}.lock`;
    this.progress = new FileRecordSet(`${this.path}.progress`, moveProgressKind);
    this.services = new FileRecordSet(`${this.path}.services`, serviceHeartbeatKind);
    this.heal = new FileRecordSet(`${this.path}.heal`, healStatusKind);
    this.hosts = new FileRecordSet(`${this.path}.hosts`, hostRecordKind);
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.fsEvents = options.fsEvents ?? true;
    this.lockTimeoutMs = options.lockTimeoutMs ?? 5000;
    this.staleLockMs = options.staleLockMs ?? 30_000;
    this.onError = options.onError ?? (() => {});
    this.listeners = new VersionListeners(this.onError);
    this.layout = options.layout ?? 1;
    this.records = new FileMapRecords(this.path);
  }

  async read(): Promise<ShardMap | undefined> {
    if (this.closed) throw closedError();
    return this.readFileMap();
  }

  write(next: ShardMap, expectedVersion: number): Promise<ShardMap> {
    if (this.closed) return Promise.reject(closedError());
    let expected: number;
    let map: ShardMap;
    try {
      expected = checkExpectedVersion(expectedVersion);
      map = toShardMap(next);
    } catch (err) {
      return Promise.reject(err);
    }
    // Writes from this instance queue up locally instead of spinning on the lock file.
    const result = this.writeChain.then(() => this.writeLocked(map, expected));
    this.writeChain = result.catch(() => {});
    return result;
  }

  private async writeLocked(map: ShardMap, expected: number): Promise<ShardMap> {
    if (this.closed) throw closedError();
    await mkdir(this.dir, { recursive: true });
    const release = await acquireFileLock(this.lockPath, { timeoutMs: this.lockTimeoutMs, staleMs: this.staleLockMs });
    let stored: ShardMap;
    try {
      const current = await this.readStored();
      const actual = current?.map.version ?? 0;
      if (actual !== expected) throw conflict(expected, actual);
      stored = map.withVersion(expected + 1);
      if (current?.root !== undefined || (current === undefined && this.layout === 2)) {
        const rootText = await this.records.writeRecords(stored, current?.root);
        await writeFileAtomic(this.path, rootText);
        await this.records.collect(parseRoot(JSON.parse(rootText), this.path), current?.root);
      } else await writeFileAtomic(this.path, `${JSON.stringify(stored.toJSON(), null, 2)}\n`);
    } finally {
      await release();
    }
    this.listeners.offer(stored);
    return stored;
  }

  watch(listener: TopologyListener): () => void {
    if (this.closed) throw closedError();
    return this.listeners.watch(listener, this.currentVersionSync(), () => this.startWatching(), () => this.stopWatching());
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopWatching();
    this.listeners.clear();
    await this.writeChain;
  }

  /**
   * Converts a single-document file (layout 1) to a root and records (layout 2) in place, at the
   * same version, after copying the document to `<file>.v1-copy`. Idempotent: a file already in
   * layout 2 (or absent) is left as it is. Runs under the writers' lock.
   */
  async upgrade(): Promise<{ upgraded: boolean; layout: 0 | 1 | 2; version: number; records?: number; copyPath?: string }> {
    if (this.closed) throw closedError();
    await mkdir(this.dir, { recursive: true });
    const release = await acquireFileLock(this.lockPath, { timeoutMs: this.lockTimeoutMs, staleMs: this.staleLockMs });
    try {
      const current = await this.readStored();
      if (current === undefined) return { upgraded: false, layout: 0, version: 0 };
      if (current.root !== undefined) return { upgraded: false, layout: 2, version: current.map.version, records: current.root.records };
      const copyPath = `${this.path}.v1-copy`;
      await writeFileAtomic(copyPath, current.text);
      const rootText = await this.records.writeRecords(current.map, undefined);
      await writeFileAtomic(this.path, rootText);
      return { upgraded: true, layout: 2, version: current.map.version, records: parseRoot(JSON.parse(rootText), this.path).records, copyPath };
    } finally {
      await release();
    }
  }

  private async readFileMap(): Promise<ShardMap | undefined> {
    return (await this.readStored())?.map;
  }

  /** The map in the file, and its root when the file is in the record layout. */
  private async readStored(): Promise<{ map: ShardMap; root?: MapRoot; text: string } | undefined> {
    // A root whose records a later writer collected meanwhile: read the newer root (bounded).
    for (let attempt = 0; ; attempt++) {
      let text: string;
      try {
        text = await readFile(this.path, 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw new ShardKitError('INTERNAL', `cannot read topology file ${this.path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
      }
      const root = rootOf(text, this.path);
      if (root === undefined) return { map: parseTopologyText(text, this.path), text };
      const map = await this.records.mapOf(root);
      if (map !== undefined) return { map, root, text };
      if (attempt >= 5) throw new ShardKitError('INVALID_CONFIG', `topology file ${this.path} (version ${root.version}) names record files that are not in ${this.records.dir}`);
    }
  }

  /** The baseline for a new listener: it must only hear about maps newer than the current one. */
  private currentVersionSync(): number {
    try {
      const v = (JSON.parse(readFileSync(this.path, 'utf8')) as { version?: unknown }).version;
      return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0;
    } catch {
      return 0;
    }
  }

  private startWatching(): void {
    if (this.pollTimer === undefined) {
      this.pollTimer = setInterval(() => {
        this.ensureFsWatcher();
        this.scheduleCheck();
      }, this.pollIntervalMs);
      this.pollTimer.unref();
    }
    this.ensureFsWatcher();
  }

  private ensureFsWatcher(): void {
    if (this.watcher !== undefined || this.closed || !this.fsEvents) return;
    try {
      // The directory, not the file: every write renames a new inode over the old one.
      const w = fsWatch(this.dir, { persistent: false }, (_event, filename) => {
        if (filename === null || filename === this.base) this.scheduleCheck();
      });
      w.on('error', () => {
        w.close();
        if (this.watcher === w) this.watcher = undefined;
      });
      this.watcher = w;
    } catch {
      // Directory missing or fs.watch unsupported: the poll covers it and retries.
    }
  }

  private stopWatching(): void {
    if (this.pollTimer !== undefined) clearInterval(this.pollTimer);
    if (this.checkTimer !== undefined) clearTimeout(this.checkTimer);
    this.pollTimer = undefined;
    this.checkTimer = undefined;
    this.watcher?.close();
    this.watcher = undefined;
  }

  private scheduleCheck(): void {
    if (this.checkTimer !== undefined || this.closed) return;
    // Coalesces the burst of events one rename produces.
    this.checkTimer = setTimeout(() => {
      this.checkTimer = undefined;
      void this.runCheck();
    }, 2);
    this.checkTimer.unref();
  }

  private async runCheck(): Promise<void> {
    if (this.checking) {
      this.recheck = true;
      return;
    }
    this.checking = true;
    try {
      do {
        this.recheck = false;
        await this.checkOnce();
      } while (this.recheck && !this.closed);
    } finally {
      this.checking = false;
    }
  }

  private async checkOnce(): Promise<void> {
    let signature: string;
    try {
      const st = await stat(this.path);
      signature = `${st.ino}:${st.mtimeMs}:${st.size}`;
    } catch {
      return;
    }
    if (signature === this.lastSignature) return;
    this.lastSignature = signature;
    let map: ShardMap | undefined;
    try {
      map = await this.readFileMap();
    } catch (err) {
      this.onError(err);
      return;
    }
    if (map !== undefined && !this.closed) this.listeners.offer(map);
  }
}

/** The root in a topology file's text, or undefined when it holds the map's JSON form. */
function rootOf(text: string, path: string): MapRoot | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  return isRecordRoot(json) ? parseRoot(json, `topology file ${path}`) : undefined;
}

/** Parses a topology file's text; anything wrong is INVALID_CONFIG naming the file. */
export function parseTopologyText(text: string, path: string): ShardMap {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ShardKitError('INVALID_CONFIG', `topology file ${path} is not valid JSON: ${(err as Error).message}`);
  }
  if (isRecordRoot(json)) throw new ShardKitError('INVALID_CONFIG', `topology file ${path} holds the root of the record layout, not a map: read it through its store (topology show --file <the config naming it>)`);
  try {
    return ShardMap.fromJSON(json);
  } catch (err) {
    if (err instanceof ShardKitError) throw new ShardKitError(err.code, `topology file ${path}: ${err.message}`, { cause: err });
    throw err;
  }
}
