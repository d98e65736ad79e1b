import { ShardKitError } from '../errors.js';
import {
  checkFleet, checkHost, checkLimit, checkLocalId, checkLookupKey, checkPairs, checkScan, checkSequence, checkStoredId, checkText,
} from './backend-args.js';
import { SchemaTables } from './schema-tables.js';
import {
  MAX_ROWS_PER_PUT,
  type BackendCapabilities, type Fleet, type LookupRow, type LookupScan, type MappingItem, type MappingPage, type MappingRow, type MappingScan,
  type ObjectKey, type ObjectRecord, type ObjectScan, type SchemaDef, type ShardBackend, type ShardRef,
} from './shard-backend.js';

export type UpdateFn = (data: string) => string | undefined;
export type Pair = { fromId: bigint; toId: bigint };

/**
 * The one wrapper every backend sits in (abstract-level's public-method-validates, `_impl`-stores;
 * Kysely's runtime driver): each public method checks its arguments, refuses work once the
 * backend is closed, and only then calls the protected `_method`, which may assume valid input
 * (a known table on the ref's fleet, ids in range, a ref whose host and shard are well-formed).
 * Checks run before the closed check, so bad input is INVALID_* whether or not the backend is open.
 * The methods are not async functions: a failed check is a rejected promise, and a _method's own
 * promise is handed on as it is (no extra async frame on the path of every call).
 */
export abstract class CheckedBackend implements ShardBackend {
  abstract readonly kind: string;
  abstract readonly supports: BackendCapabilities;
  protected tables: SchemaTables;
  private closed = false;

  /** `label` names the backend in CLOSED errors: "the MySQL backend is closed". */
  constructor(schema: SchemaDef, private readonly label: string) {
    this.tables = new SchemaTables(schema);
  }

  protected get schema(): SchemaDef {
    return this.tables.schema;
  }

  protected get isClosed(): boolean {
    return this.closed;
  }

  /** Throws CLOSED once close() has been called. */
  protected open(): void {
    if (this.closed) throw new ShardKitError('CLOSED', `the ${this.label} backend is closed`);
  }

  createShard(ref: ShardRef): Promise<void> {
    try {
      this.tables.ref(ref);
      this.open();
      return Promise.resolve(this._createShard(ref));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  dropShard(ref: ShardRef): Promise<void> {
    try {
      this.tables.ref(ref);
      this.open();
      return Promise.resolve(this._dropShard(ref));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  listShards(host: string, fleet: Fleet): Promise<number[]> {
    try {
      checkHost(host);
      checkFleet(fleet);
      this.open();
      return Promise.resolve(this._listShards(host, fleet));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  insertObject(ref: ShardRef, table: string, data: string): Promise<ObjectRecord> {
    try {
      this.tables.check('types', ref, table);
      checkText(data);
      this.open();
      return Promise.resolve(this._insertObject(ref, table, data));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  insertObjects(ref: ShardRef, table: string, data: string[]): Promise<ObjectRecord[]> {
    try {
      this.tables.check('types', ref, table);
      if (!Array.isArray(data)) throw new ShardKitError('INVALID_ARGUMENT', 'data must be an array');
      for (const d of data) checkText(d);
      this.open();
      if (data.length === 0) return Promise.resolve([]);
      return Promise.resolve(this._insertObjects(ref, table, data));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  getObjects(ref: ShardRef, keys: ObjectKey[]): Promise<(ObjectRecord | undefined)[]> {
    try {
      this.tables.ref(ref);
      if (!Array.isArray(keys)) throw new ShardKitError('INVALID_ARGUMENT', 'keys must be an array');
      for (const k of keys) {
        this.tables.table('types', ref.fleet, k.table);
        checkLocalId(k.localId);
      }
      this.open();
      if (keys.length === 0) return Promise.resolve([]);
      return Promise.resolve(this._getObjects(ref, keys));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  updateObject(ref: ShardRef, table: string, localId: number, fn: UpdateFn): Promise<ObjectRecord | undefined> {
    try {
      this.tables.check('types', ref, table);
      checkLocalId(localId);
      if (typeof fn !== 'function') throw new ShardKitError('INVALID_ARGUMENT', 'update needs a function');
      this.open();
      return Promise.resolve(this._updateObject(ref, table, localId, (data) => {
        const next = fn(data);
        if (next !== undefined && typeof next !== 'string') throw new ShardKitError('INVALID_ARGUMENT', 'update function must return JSON text or undefined');
        return next;
      }));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  deleteObject(ref: ShardRef, table: string, localId: number): Promise<boolean> {
    try {
      this.tables.check('types', ref, table);
      checkLocalId(localId);
      this.open();
      return Promise.resolve(this._deleteObject(ref, table, localId));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  addMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint, sequence: number): Promise<void> {
    try {
      this.tables.check('mappings', ref, table);
      checkStoredId(fromId, 'from id');
      checkStoredId(toId, 'to id');
      checkSequence(sequence);
      this.open();
      return Promise.resolve(this._addMapping(ref, table, fromId, toId, sequence));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  listMappings(ref: ShardRef, table: string, fromId: bigint, page: MappingPage): Promise<MappingItem[]> {
    try {
      this.tables.check('mappings', ref, table);
      checkStoredId(fromId, 'from id');
      if (page === null || typeof page !== 'object') throw new ShardKitError('INVALID_ARGUMENT', 'a list page must be an object');
      checkLimit(page.limit);
      if (page.order !== 'asc' && page.order !== 'desc') throw new ShardKitError('INVALID_ARGUMENT', 'order must be "asc" or "desc"');
      if (page.after !== undefined) {
        checkSequence(page.after.sequence);
        checkStoredId(page.after.toId, 'cursor id');
      }
      this.open();
      return Promise.resolve(this._listMappings(ref, table, fromId, page));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  removeMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint): Promise<boolean> {
    try {
      this.tables.check('mappings', ref, table);
      checkStoredId(fromId, 'from id');
      checkStoredId(toId, 'to id');
      this.open();
      return Promise.resolve(this._removeMapping(ref, table, fromId, toId));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  countMappings(ref: ShardRef, table: string, fromId: bigint): Promise<number> {
    try {
      this.tables.check('mappings', ref, table);
      checkStoredId(fromId, 'from id');
      this.open();
      return Promise.resolve(this._countMappings(ref, table, fromId));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  countObjects(ref: ShardRef): Promise<number> {
    try {
      this.tables.ref(ref);
      if (ref.fleet !== 'objects') throw new ShardKitError('INVALID_ARGUMENT', `objects live on the objects fleet, not on ${JSON.stringify(String(ref.fleet).slice(0, 20))}`);
      this.open();
      return Promise.resolve(this._countObjects(ref));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  scanMappings(ref: ShardRef, table: string, page: MappingScan): Promise<MappingRow[]> {
    try {
      this.tables.check('mappings', ref, table);
      checkScan(page);
      this.open();
      return Promise.resolve(this._scanMappings(ref, table, page));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  getMappings(ref: ShardRef, table: string, pairs: ReadonlyArray<Pair>): Promise<(number | undefined)[]> {
    try {
      this.tables.check('mappings', ref, table);
      checkPairs(pairs);
      this.open();
      if (pairs.length === 0) return Promise.resolve([]);
      return Promise.resolve(this._getMappings(ref, table, pairs));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  putLookup(ref: ShardRef, table: string, key: string, value: bigint): Promise<void> {
    try {
      this.tables.check('keyspaces', ref, table);
      checkLookupKey(key);
      checkStoredId(value, 'lookup value');
      this.open();
      return Promise.resolve(this._putLookup(ref, table, key, value));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  getLookup(ref: ShardRef, table: string, key: string): Promise<bigint | undefined> {
    try {
      this.tables.check('keyspaces', ref, table);
      checkLookupKey(key);
      this.open();
      return Promise.resolve(this._getLookup(ref, table, key));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  deleteLookup(ref: ShardRef, table: string, key: string): Promise<boolean> {
    try {
      this.tables.check('keyspaces', ref, table);
      checkLookupKey(key);
      this.open();
      return Promise.resolve(this._deleteLookup(ref, table, key));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  // ShardCopy (shard-backend.ts): only backends with supports.shardCopy override the _methods.

  scanObjects(ref: ShardRef, table: string, page: ObjectScan): Promise<ObjectRecord[]> {
    try {
      this.tables.check('types', ref, table);
      if (page === null || typeof page !== 'object') throw new ShardKitError('INVALID_ARGUMENT', 'a scan page must be an object');
      checkLimit(page.limit);
      if (page.after !== undefined) checkLocalId(page.after);
      this.open();
      return Promise.resolve(this._scanObjects(ref, table, page));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  putObjectRows(ref: ShardRef, table: string, rows: ReadonlyArray<ObjectRecord>): Promise<void> {
    try {
      this.tables.check('types', ref, table);
      checkRows(rows);
      for (const r of rows) {
        checkLocalId(r.localId);
        if (r.localId < 1) throw new ShardKitError('INVALID_ARGUMENT', 'local ids start at 1');
        checkText(r.data);
        if (!(r.createdAt instanceof Date) || Number.isNaN(r.createdAt.getTime())) throw new ShardKitError('INVALID_ARGUMENT', 'createdAt must be a valid Date');
      }
      this.open();
      if (rows.length === 0) return Promise.resolve();
      return Promise.resolve(this._putObjectRows(ref, table, rows));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  objectIdHighWater(ref: ShardRef, table: string): Promise<number> {
    try {
      this.tables.check('types', ref, table);
      this.open();
      return Promise.resolve(this._objectIdHighWater(ref, table));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  raiseObjectIdHighWater(ref: ShardRef, table: string, highWater: number): Promise<void> {
    try {
      this.tables.check('types', ref, table);
      checkLocalId(highWater);
      this.open();
      if (highWater === 0) return Promise.resolve();
      return Promise.resolve(this._raiseObjectIdHighWater(ref, table, highWater));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  putMappingRows(ref: ShardRef, table: string, rows: ReadonlyArray<MappingRow>): Promise<void> {
    try {
      this.tables.check('mappings', ref, table);
      checkRows(rows);
      for (const r of rows) {
        checkStoredId(r.fromId, 'from id');
        checkStoredId(r.toId, 'to id');
        checkSequence(r.sequence);
      }
      this.open();
      if (rows.length === 0) return Promise.resolve();
      return Promise.resolve(this._putMappingRows(ref, table, rows));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  scanLookups(ref: ShardRef, table: string, page: LookupScan): Promise<LookupRow[]> {
    try {
      this.tables.check('keyspaces', ref, table);
      if (page === null || typeof page !== 'object') throw new ShardKitError('INVALID_ARGUMENT', 'a scan page must be an object');
      checkLimit(page.limit);
      if (page.after !== undefined) checkLookupKey(page.after);
      this.open();
      return Promise.resolve(this._scanLookups(ref, table, page));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  putLookupRows(ref: ShardRef, table: string, rows: ReadonlyArray<LookupRow>): Promise<void> {
    try {
      this.tables.check('keyspaces', ref, table);
      checkRows(rows);
      for (const r of rows) {
        checkLookupKey(r.key);
        checkStoredId(r.value, 'lookup value');
      }
      this.open();
      if (rows.length === 0) return Promise.resolve();
      return Promise.resolve(this._putLookupRows(ref, table, rows));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Idempotent: the first call closes, later ones resolve at once. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this._close();
  }

  // What each backend implements: storage only, on arguments checked above. Each may return a
  // value or a promise (the embedded engine is synchronous).
  protected abstract _createShard(ref: ShardRef): void | Promise<void>;
  protected abstract _dropShard(ref: ShardRef): void | Promise<void>;
  protected abstract _listShards(host: string, fleet: Fleet): number[] | Promise<number[]>;
  protected abstract _insertObject(ref: ShardRef, table: string, data: string): ObjectRecord | Promise<ObjectRecord>;
  protected abstract _insertObjects(ref: ShardRef, table: string, data: string[]): ObjectRecord[] | Promise<ObjectRecord[]>;
  /** `keys` is never empty. */
  protected abstract _getObjects(ref: ShardRef, keys: ObjectKey[]): (ObjectRecord | undefined)[] | Promise<(ObjectRecord | undefined)[]>;
  /** `fn` already refuses a result that is neither a string nor undefined. */
  protected abstract _updateObject(ref: ShardRef, table: string, localId: number, fn: UpdateFn): ObjectRecord | undefined | Promise<ObjectRecord | undefined>;
  protected abstract _deleteObject(ref: ShardRef, table: string, localId: number): boolean | Promise<boolean>;
  protected abstract _addMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint, sequence: number): void | Promise<void>;
  protected abstract _listMappings(ref: ShardRef, table: string, fromId: bigint, page: MappingPage): MappingItem[] | Promise<MappingItem[]>;
  protected abstract _removeMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint): boolean | Promise<boolean>;
  protected abstract _countMappings(ref: ShardRef, table: string, fromId: bigint): number | Promise<number>;
  /** `ref` is on the objects fleet. */
  protected abstract _countObjects(ref: ShardRef): number | Promise<number>;
  protected abstract _scanMappings(ref: ShardRef, table: string, page: MappingScan): MappingRow[] | Promise<MappingRow[]>;
  /** `pairs` is never empty. */
  protected abstract _getMappings(ref: ShardRef, table: string, pairs: ReadonlyArray<Pair>): (number | undefined)[] | Promise<(number | undefined)[]>;
  protected abstract _putLookup(ref: ShardRef, table: string, key: string, value: bigint): void | Promise<void>;
  protected abstract _getLookup(ref: ShardRef, table: string, key: string): bigint | undefined | Promise<bigint | undefined>;
  protected abstract _deleteLookup(ref: ShardRef, table: string, key: string): boolean | Promise<boolean>;
  protected abstract _close(): void | Promise<void>;

  // ShardCopy: refused unless the backend overrides them (and says so in supports.shardCopy).
  protected _scanObjects(_ref: ShardRef, _table: string, _page: ObjectScan): ObjectRecord[] | Promise<ObjectRecord[]> {
    throw this.noCopy();
  }
  protected _putObjectRows(_ref: ShardRef, _table: string, _rows: ReadonlyArray<ObjectRecord>): void | Promise<void> {
    throw this.noCopy();
  }
  protected _objectIdHighWater(_ref: ShardRef, _table: string): number | Promise<number> {
    throw this.noCopy();
  }
  protected _raiseObjectIdHighWater(_ref: ShardRef, _table: string, _highWater: number): void | Promise<void> {
    throw this.noCopy();
  }
  protected _putMappingRows(_ref: ShardRef, _table: string, _rows: ReadonlyArray<MappingRow>): void | Promise<void> {
    throw this.noCopy();
  }
  protected _scanLookups(_ref: ShardRef, _table: string, _page: LookupScan): LookupRow[] | Promise<LookupRow[]> {
    throw this.noCopy();
  }
  protected _putLookupRows(_ref: ShardRef, _table: string, _rows: ReadonlyArray<LookupRow>): void | Promise<void> {
    throw this.noCopy();
  }

  private noCopy(): ShardKitError {
    return new ShardKitError('INVALID_ARGUMENT', `the ${this.label} backend cannot copy whole shards`);
  }
}

function checkRows(rows: unknown): void {
  if (!Array.isArray(rows)) throw new ShardKitError('INVALID_ARGUMENT', 'rows must be an array');
  if (rows.length > MAX_ROWS_PER_PUT) throw new ShardKitError('INVALID_ARGUMENT', `at most ${MAX_ROWS_PER_PUT} rows per call`);
}
