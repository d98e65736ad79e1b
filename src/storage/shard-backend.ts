import type { HostStorageMetrics } from './storage-metrics.js';
/**
 * A storage backend holds logical shards on physical hosts (SQLite files, MySQL databases,
 * PostgreSQL schemas). It only stores: routing, IDs, JSON and caching live above it in ShardKit.
 * Table names come from validated config (schema), never from requests.
 * Every implementation passes test/conformance/storage-suite.ts.
 */

/** The object fleet holds object and mapping tables; the lookup (mod-shard) fleet holds keyspace tables. */
export type Fleet = 'objects' | 'lookups';

export interface ShardRef {
  host: string;
  shard: number;
  fleet: Fleet;
}

export interface ObjectTypeDef {
  name: string;
  /** 10-bit type id stored in the Pinterest ID. */
  id: number;
  table: string;
}

export interface MappingDef {
  name: string;
  from: string;
  to: string;
  table: string;
}

export interface KeyspaceDef {
  name: string;
  table: string;
}

export interface SchemaDef {
  types: ObjectTypeDef[];
  mappings: MappingDef[];
  keyspaces: KeyspaceDef[];
}

export interface ObjectRecord {
  localId: number;
  /** The JSON text as stored. */
  data: string;
  /** The row's `ts` (creation time). */
  createdAt: Date;
}

export interface ObjectKey {
  table: string;
  localId: number;
}

export interface MappingItem {
  toId: bigint;
  sequence: number;
}

export interface MappingPage {
  limit: number;
  order: 'asc' | 'desc';
  /** Keyset position: items strictly after this (sequence, toId) in the chosen order. */
  after?: MappingItem;
}

/** A row of a mapping table, as a whole-table scan returns it. */
export interface MappingRow {
  fromId: bigint;
  toId: bigint;
  sequence: number;
}

/** A page of a whole-table scan: rows strictly after `after` in (fromId, toId) order. */
export interface MappingScan {
  limit: number;
  after?: { fromId: bigint; toId: bigint };
}

/** Most pairs one getMappings call may ask about. */
export const MAX_PAIRS_PER_CALL = 1000;

export interface BackendCapabilities {
  /** Shards and tables appear on first write without an explicit createShard. */
  lazyShardCreation: boolean;
  /** Implements ShardCopy (whole-table scans and writes that keep local ids): `shardkit migrate`. */
  shardCopy?: boolean;
}

/** A page of a whole object table: rows strictly after local id `after`, ascending. */
export interface ObjectScan {
  limit: number;
  after?: number;
}

/** A row of a lookup table. */
export interface LookupRow {
  key: string;
  value: bigint;
}

/** A page of a whole lookup table: keys strictly after `after` in byte order (UTF-8), ascending. */
export interface LookupScan {
  limit: number;
  after?: string;
}

/** Most rows one put*Rows call may write. */
export const MAX_ROWS_PER_PUT = 1000;

/**
 * Whole-table reads and writes that keep every key as it is (local ids included), for tools that
 * copy shards between backends (`shardkit migrate`, src/migrate). Written once per backend on its
 * own storage, so the copier never speaks a dialect. Backends with `supports.shardCopy`.
 */
export interface ShardCopy {
  scanObjects(ref: ShardRef, table: string, page: ObjectScan): Promise<ObjectRecord[]>;
  /** Inserts each row with its own local id and createdAt, or replaces the row with that id. */
  putObjectRows(ref: ShardRef, table: string, rows: ReadonlyArray<ObjectRecord>): Promise<void>;
  /** The highest local id the table has ever handed out (deleted rows count), 0 when none. */
  objectIdHighWater(ref: ShardRef, table: string): Promise<number>;
  /** Makes the next local id handed out greater than `highWater`; never lowers it. */
  raiseObjectIdHighWater(ref: ShardRef, table: string, highWater: number): Promise<void>;
  /** Inserts each pair or replaces its sequence. */
  putMappingRows(ref: ShardRef, table: string, rows: ReadonlyArray<MappingRow>): Promise<void>;
  scanLookups(ref: ShardRef, table: string, page: LookupScan): Promise<LookupRow[]>;
  /** Inserts each key or replaces its value. */
  putLookupRows(ref: ShardRef, table: string, rows: ReadonlyArray<LookupRow>): Promise<void>;
}

/** Whether `backend` can copy shards (ShardCopy). */
export function canCopyShards(backend: ShardBackend): backend is ShardBackend & ShardCopy {
  return backend.supports.shardCopy === true;
}

export interface ShardBackend {
  readonly kind: string;
  readonly supports: BackendCapabilities;

  /** Creates the shard (database/schema/file) and every table of `schema` for its fleet; idempotent. */
  createShard(ref: ShardRef): Promise<void>;
  dropShard(ref: ShardRef): Promise<void>;
  /** Shards of `fleet` that exist on `host`, ascending. */
  listShards(host: string, fleet: Fleet): Promise<number[]>;

  insertObject(ref: ShardRef, table: string, data: string): Promise<ObjectRecord>;
  /**
   * Several rows of one table on one shard in one transaction: all or none. Records in the order
   * of `data`. Optional: the kit inserts one at a time on a backend without it.
   */
  insertObjects?(ref: ShardRef, table: string, data: string[]): Promise<ObjectRecord[]>;
  /** One round trip per call; results in the order of `keys`, undefined where absent. */
  getObjects(ref: ShardRef, keys: ObjectKey[]): Promise<(ObjectRecord | undefined)[]>;
  /**
   * Read-modify-write in one transaction with the row locked (SELECT ... FOR UPDATE).
   * `fn` gets the current JSON text and returns the new text, or undefined to leave it unchanged.
   * Resolves to the row after the update, or undefined when the row does not exist.
   */
  updateObject(ref: ShardRef, table: string, localId: number, fn: (data: string) => string | undefined): Promise<ObjectRecord | undefined>;
  /** Hard delete; true when a row was removed. */
  deleteObject(ref: ShardRef, table: string, localId: number): Promise<boolean>;

  /** Inserts the pair or, when present, updates its sequence. */
  addMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint, sequence: number): Promise<void>;
  listMappings(ref: ShardRef, table: string, fromId: bigint, page: MappingPage): Promise<MappingItem[]>;
  removeMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint): Promise<boolean>;
  countMappings(ref: ShardRef, table: string, fromId: bigint): Promise<number>;
  /**
   * Every row of a mapping table on one shard, in (fromId, toId) order, a page at a time (keyset
   * on the primary key): for tools that walk whole tables, such as the drift check. A shard
   * without the table yet reads as empty on backends that create shards lazily.
   */
  scanMappings(ref: ShardRef, table: string, page: MappingScan): Promise<MappingRow[]>;
  /**
   * Rows of every object table on one object shard (soft-deleted objects included: they are
   * rows), in one query: the dashboard's objects per shard (docs/dashboard.md). An exact count,
   * so it reads the tables: callers cache it and bound how often they ask. A shard without its
   * tables yet reads as 0 on backends that create shards lazily.
   */
  countObjects(ref: ShardRef): Promise<number>;
  /** The sequence of each (fromId, toId) pair, or undefined where it is absent, in request order; one query. */
  getMappings(ref: ShardRef, table: string, pairs: ReadonlyArray<{ fromId: bigint; toId: bigint }>): Promise<(number | undefined)[]>;

  putLookup(ref: ShardRef, table: string, key: string, value: bigint): Promise<void>;
  getLookup(ref: ShardRef, table: string, key: string): Promise<bigint | undefined>;
  deleteLookup(ref: ShardRef, table: string, key: string): Promise<boolean>;

  /**
   * Server backends: adds hosts declared after the backend was made (a pair added to a running
   * fleet), keeping the address of every host it knows. Returns the names added.
   */
  learnHosts?(hosts: Record<string, unknown>): string[];
  /** Server backends: whether `host` has an address here. */
  knowsHost?(host: string): boolean;
  /** A trivial statement on `host` through this backend's own pool: does this process reach it? (the heal supervisor's third witness). */
  ping?(host: string): Promise<void>;
  /** Server backends: each opened host's pool gauges and statement latency (read when /metrics is scraped). */
  storageMetrics?(): HostStorageMetrics[];

  close(): Promise<void>;
}
