// The subset of rocksdb-native (3.x, which ships no types) that the wide-column store uses,
// checked against node_modules/rocksdb-native/{index.js,lib/*.js}. A module rather than an
// ambient declaration, so that the published .d.ts files need nothing from the untyped package.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { ShardKitError } from '../errors.js';
import { requireOptional } from '../util/optional-dependency.js';

export type Key = Buffer | Uint8Array | string;

export interface RocksDBOptions {
  readOnly?: boolean;
  createIfMissing?: boolean;
  maxBackgroundJobs?: number;
  columnFamilies?: string[];
}

export interface IteratorRange {
  gt?: Key | null;
  gte?: Key | null;
  lt?: Key | null;
  lte?: Key | null;
}

export interface IteratorOptions {
  reverse?: boolean;
  values?: boolean;
  limit?: number;
  /** Entries fetched per native read. */
  capacity?: number;
}

export interface Entry {
  key: Buffer;
  value: Buffer;
}

export interface RocksDBIterator extends AsyncIterable<Entry> {
  destroy(err?: Error): void;
  /** A streamx Readable: 'data' per entry, 'end' after the last, 'close' once closed, 'error'. */
  on(event: 'data', fn: (entry: Entry) => void): this;
  once(event: 'end' | 'close', fn: () => void): this;
  once(event: 'error', fn: (err: Error) => void): this;
}

export interface ReadBatch {
  get(key: Key): Promise<Buffer | null>;
  flush(): Promise<void>;
  tryFlush(): void;
  destroy(): void;
}

export interface WriteBatch {
  put(key: Key, value: Key): Promise<void>;
  tryPut(key: Key, value: Key): void;
  delete(key: Key): Promise<void>;
  tryDelete(key: Key): void;
  deleteRange(start: Key, end: Key): Promise<void>;
  tryDeleteRange(start: Key, end: Key): void;
  flush(): Promise<void>;
  destroy(): void;
}

export interface CompactRangeOptions {
  exclusive?: boolean;
  /** constants.bottommostLevelCompaction: NONE 0 (skip), SKIP 1, FORCE 2. */
  bottommostLevelCompaction?: number;
}

/** An open RocksDB (or a snapshot of one). */
export interface RocksDB {
  readonly opened: boolean;
  readonly closed: boolean;
  readonly path: string;
  ready(): Promise<void>;
  close(options?: { force?: boolean }): Promise<void>;
  snapshot(): RocksDB;
  iterator(range?: IteratorRange, options?: IteratorOptions): RocksDBIterator;
  peek(range?: IteratorRange, options?: IteratorOptions): Promise<Entry | null>;
  read(options?: { capacity?: number; autoDestroy?: boolean }): ReadBatch;
  write(options?: { capacity?: number; autoDestroy?: boolean }): WriteBatch;
  get(key: Key): Promise<Buffer | null>;
  put(key: Key, value: Key): Promise<void>;
  delete(key: Key): Promise<void>;
  flush(): Promise<void>;
  compactRange(start?: Key | null, end?: Key | null, options?: CompactRangeOptions): Promise<void>;
  approximateSize(start: Key, end: Key, options?: { includeMemtables?: boolean; includeFiles?: boolean }): Promise<number>;
  getProperty(name: string): Promise<string>;
}

export interface RocksDBConstructor {
  new (path: string, options?: RocksDBOptions): RocksDB;
  constants: {
    bottommostLevelCompaction: { NONE: number; SKIP: number; FORCE: number };
  };
}

/** rocksdb-native (an optional peer dependency, native), loaded when a store first opens. */
export function rocksDbNative(): RocksDBConstructor {
  return requireOptional<RocksDBConstructor>('rocksdb-native', 'the embedded wide-column store');
}

/** Opens RocksDB, turning the LOCK-file error into a clear STORE_LOCKED. */
export async function openRocks(path: string): Promise<RocksDB> {
  mkdirSync(dirname(path), { recursive: true });
  const db = new (rocksDbNative())(path);
  try {
    await db.ready();
  } catch (err) {
    const message = (err as Error).message ?? String(err);
    if (/LOCK|lock hold/i.test(message)) {
      throw new ShardKitError('STORE_LOCKED', `the wide-column store in ${path} is in use by another process (is \`shardkit serve\` running on this data directory?); stop it, or pass --url to ask the running service`, { cause: err });
    }
    throw new ShardKitError('INTERNAL', `cannot open the wide-column store in ${path}: ${message}`, { cause: err });
  }
  return db;
}

