/** JSON values as stored in an object's `data` blob. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** An object as ShardKit returns it (IDs are bigint here, decimal strings on the wire). */
export interface ShardObject<D extends object = JsonObject> {
  readonly id: bigint;
  /** Type name from the schema (`pin`). */
  readonly type: string;
  readonly shard: number;
  readonly data: D;
  readonly createdAt: Date;
  /** Opaque version of `data`: changes whenever the stored JSON changes (HTTP ETag). */
  readonly etag: string;
}

export interface CreateOptions {
  /** Put the object on the shard of this related object (a pin on its board's shard). */
  near?: bigint | string;
  /** Put the object on this (open) shard. */
  shard?: number;
}

/** One object of createMany: its data and, as for create, where to put it. */
export interface CreateManyItem extends CreateOptions {
  data: JsonObject;
}

export interface UpdateOptions {
  /** Only update when the current etag is one of these ('*' matches any existing object). */
  ifMatch?: string | readonly string[];
  /** Only update when the current etag is none of these ('*': never, the object exists); else PRECONDITION_FAILED. */
  ifNoneMatch?: string | readonly string[];
}

export interface DeleteOptions {
  /** Remove the row instead of marking it `"active": false`. */
  hard?: boolean;
  /** Only delete when the current etag is one of these (else PRECONDITION_FAILED, nothing deleted). */
  ifMatch?: string | readonly string[];
  /**
   * Only delete when the current etag is none of these (else PRECONDITION_FAILED, nothing
   * deleted). '*' never deletes a current object; a hard delete still purges a soft-deleted one.
   */
  ifNoneMatch?: string | readonly string[];
}

export type ListOrder = 'asc' | 'desc';

export interface ListOptions {
  /** 1..1000, default 50. */
  limit?: number;
  /** Default 'desc' (newest first when sequences are timestamps). */
  order?: ListOrder;
  /** The `next` of the previous page; null or undefined for the first page. */
  cursor?: string | null;
}

export interface MappingEntry {
  id: bigint;
  sequence: number;
}

export interface MappingListPage {
  items: MappingEntry[];
  /** Cursor of the next page, or null when this page is the last. */
  next: string | null;
}

export interface JoinPage {
  /** The page's objects in mapping order; deleted or missing objects are skipped. */
  objects: ShardObject[];
  next: string | null;
}

/** Emitted on `kit.events` as 'shard-error' when a backend call fails for a storage reason. */
export interface ShardErrorEvent {
  host: string;
  shard: number;
  fleet: 'objects' | 'lookups';
  op: string;
  error: unknown;
}

/** Emitted on `kit.events` as 'cache-error' when a cache call fails (the read or write itself went on). */
export interface CacheErrorEvent {
  /**
   * get: a read fell back to the backend; fill: entries read after a miss were not stored;
   * invalidate: a write's invalidation was lost, so the old entry may be served until its TTL.
   */
  op: 'get' | 'fill' | 'invalidate';
  /** How many keys the failed call carried. */
  keys: number;
  error: unknown;
}

/** Counters of a kit's cache since it was opened (kit.cacheStats()). */
export interface CacheStats {
  /** Lookups answered by the cache (an object, a list page or a count). */
  hits: number;
  /** Lookups that went to the backend (including those whose cache read failed). */
  misses: number;
  /** Failed cache calls (each also emitted as 'cache-error'). */
  errors: number;
  /** Entries written after a miss. */
  fills: number;
  /** Fills dropped because a write in this process invalidated the key meanwhile. */
  skippedFills: number;
  /** Keys invalidated (deleted, or list generations moved) after writes. */
  invalidations: number;
}
