import { ShardKitError, isShardKitError } from '../errors.js';
import { parseField } from '../ids/codec.js';
import { PINTEREST_MAX_LOCAL_ID, PINTEREST_MAX_SHARD, pinterestId } from '../ids/pinterest-id.js';
import type { ObjectKey, ObjectRecord } from '../storage/shard-backend.js';
import type { ShardMap } from '../topology/shard-map.js';
import { etagOf } from './etag.js';
import { checkJsonValue, decodeActive, encodeData, isPlainObject, liveData } from './json-data.js';
import { mergePatch } from './merge-patch.js';
import type { KitCache } from './kit-cache.js';
import { isFenceError } from '../storage/fence-error.js';
import type { LocatedId, KitContext } from './kit-context.js';
import { KitObject } from './kit-object.js';
import { checkData } from './data-validation.js';
import type { CreateManyItem, CreateOptions, DeleteOptions, JsonObject, JsonValue, UpdateOptions } from './types.js';
import { checkMethodOptions } from './kit-options.js';

const CREATE_OPTIONS: ReadonlySet<string> = new Set(['near', 'shard']);
const GET_MANY_OPTIONS: ReadonlySet<string> = new Set(['skipInvalid']);
const UPDATE_OPTIONS: ReadonlySet<string> = new Set(['ifMatch', 'ifNoneMatch']);
const DELETE_OPTIONS: ReadonlySet<string> = new Set(['hard', 'ifMatch', 'ifNoneMatch']);

/** Thrown inside an update transaction to roll it back; never leaves this module. */
class Abort {
  constructor(readonly error: ShardKitError) {}
}

/**
 * Objects (SPEC §3): a JSON blob per row, found through its 64-bit ID. Every ID is validated
 * before any storage is touched, so bad input never writes anything.
 */
export class Objects {
  constructor(private readonly ctx: KitContext) {
    // Chosen once here, so that get() without a cache stays exactly the tuned path below.
    if (ctx.cache !== undefined) this.get = (id) => this.getCached(id, ctx.cache!);
  }

  /** Creates an object on the shard of `near`, on `shard`, or on a uniformly chosen open shard. */
  async create(type: string, data: JsonObject, options: CreateOptions = {}): Promise<KitObject> {
    checkMethodOptions(options, CREATE_OPTIONS, 'objects.create');
    const map = await this.ctx.map();
    const def = this.ctx.type(type);
    const text = encodeData(data);
    checkData(this.ctx.dataChecks, def.name, data);
    const shard = this.placement(map, options);
    let ref = this.ctx.objectRef(map, shard);
    // The ref actually written (a move's cutover can send the insert to the new master).
    const row = await this.ctx.call(ref, 'insert', (r) => this.ctx.backend.insertObject((ref = r), def.table, text));
    if (row.localId > PINTEREST_MAX_LOCAL_ID) {
      // A 36-bit local id is part of the ID: past it the shard cannot name new rows of this type.
      await this.ctx.backend.deleteObject(ref, def.table, row.localId);
      throw new ShardKitError('SHARD_CLOSED', `shard ${shard} has used every local id of type ${def.name}`);
    }
    const id = pinterestId.encode({ shard, type: def.id, localId: row.localId });
    return new KitObject(id, def.name, shard, undefined, text, row.createdAt);
  }

  /**
   * Creates up to MAX_CREATE_MANY objects of one type, each placed as create() places it. The
   * objects of one shard are written in one transaction (one commit: the cost of one create), the
   * shards at once. Every item is checked before anything is written; a shard that fails leaves
   * none of its objects, and the whole call rejects, naming how many objects other shards wrote.
   * Results in the order of `items`.
   */
  async createMany(type: string, items: readonly CreateManyItem[]): Promise<KitObject[]> {
    if (!Array.isArray(items)) throw new ShardKitError('INVALID_ARGUMENT', 'items must be an array');
    if (items.length > MAX_CREATE_MANY) throw new ShardKitError('INVALID_ARGUMENT', `at most ${MAX_CREATE_MANY} objects per createMany, got ${items.length}`);
    const map = await this.ctx.map();
    const def = this.ctx.type(type);
    const byShard = new Map<number, number[]>();
    const texts = items.map((item, i) => {
      if (!isPlainObject(item) || !isPlainObject(item.data)) throw new ShardKitError('INVALID_ARGUMENT', `items[${i}].data must be a JSON object`);
      const text = encodeData(item.data);
      checkData(this.ctx.dataChecks, def.name, item.data, `items[${i}].data`);
      const shard = this.placement(map, item);
      const list = byShard.get(shard);
      if (list) list.push(i);
      else byShard.set(shard, [i]);
      return text;
    });
    const out = new Array<KitObject>(items.length);
    let written = 0;
    const results = await Promise.allSettled([...byShard].map(async ([shard, indexes]) => {
      let ref = this.ctx.objectRef(map, shard);
      const batch = indexes.map((i) => texts[i]!);
      const backend = this.ctx.backend;
      const rows = await this.ctx.call(ref, 'insert', (r) => (backend.insertObjects
        ? backend.insertObjects((ref = r), def.table, batch)
        : sequential(batch, (text) => backend.insertObject((ref = r), def.table, text))));
      if (rows.some((row) => row.localId > PINTEREST_MAX_LOCAL_ID)) {
        for (const row of rows) await backend.deleteObject(ref, def.table, row.localId);
        throw new ShardKitError('SHARD_CLOSED', `shard ${shard} has used every local id of type ${def.name}`);
      }
      rows.forEach((row, k) => {
        const i = indexes[k]!;
        out[i] = new KitObject(pinterestId.encode({ shard, type: def.id, localId: row.localId }), def.name, shard, undefined, batch[k]!, row.createdAt);
      });
      written += rows.length;
    }));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      if (written === 0) throw failed.reason;
      const err = failed.reason as unknown;
      const cause = err instanceof ShardKitError ? err : new ShardKitError('INTERNAL', String(err));
      throw new ShardKitError(cause.code, `${cause.message} (createMany: ${written} of ${items.length} objects were written on other shards)`, { cause: err, details: { written } });
    }
    return out;
  }

  /** The object, or NOT_FOUND when it does not exist or was deleted. */
  async get(id: bigint | string): Promise<KitObject> {
    const map = this.ctx.loaded ?? (await this.ctx.map());
    const loc = this.ctx.locate(map, id);
    let row: ObjectRecord | undefined;
    if (this.ctx.observed) {
      // Someone listens for operations or traces: the general path times it.
      [row] = await this.ctx.call(loc.ref, 'get', (r) => this.ctx.backend.getObjects(r, [{ table: loc.type.table, localId: loc.localId }]));
      const seen = row && toObject(loc, row);
      if (seen === undefined) throw notFound(loc.id);
      return seen;
    }
    // ctx.call() spelled out, one promise and one microtask less on the busiest read path; the
    // backend is called outside the try as there, so only a rejection counts as a shard error.
    this.ctx.traffic.count(loc.shard, false);
    const pending = this.ctx.backend.getObjects(loc.ref, [{ table: loc.type.table, localId: loc.localId }]);
    try {
      [row] = await pending;
    } catch (err) {
      // A fenced shard (moved away): the context reloads the map and reads the new master once.
      if (isFenceError(err)) [row] = await this.ctx.afterFence(loc.ref, 'get', (r) => this.ctx.backend.getObjects(r, [{ table: loc.type.table, localId: loc.localId }]), err);
      else {
        this.ctx.reportFailure(loc.ref, 'get', err);
        throw err;
      }
    }
    const obj = row && toObject(loc, row);
    if (obj === undefined) throw notFound(loc.id);
    return obj;
  }

  /**
   * Many objects at once: one backend call per shard, shards in parallel, results in request
   * order with undefined for missing or deleted ones. Any invalid ID fails the whole call
   * unless `skipInvalid` (then it reads as missing: used by joins over stored IDs).
   */
  async getMany(ids: ReadonlyArray<bigint | string>, options: { skipInvalid?: boolean } = {}): Promise<(KitObject | undefined)[]> {
    checkMethodOptions(options, GET_MANY_OPTIONS, 'objects.getMany');
    if (!Array.isArray(ids)) throw new ShardKitError('INVALID_ARGUMENT', 'ids must be an array');
    const map = await this.ctx.map();
    const located = ids.map((id, i) => {
      if (options.skipInvalid !== true) return this.ctx.locate(map, id, `ids[${i}]`);
      try {
        return this.ctx.locate(map, id, `ids[${i}]`);
      } catch {
        return undefined;
      }
    });
    const out: (KitObject | undefined)[] = new Array(ids.length).fill(undefined);
    const cache = this.ctx.cache;
    if (cache === undefined) {
      await this.readShards(located, located.map((_, i) => i), out);
      return out;
    }
    // One cache round trip for all, the backend only for the misses, one fill of what it returned.
    const wanted = located.flatMap((loc, i) => (loc === undefined ? [] : [i]));
    const keys = wanted.map((i) => cache.objectKey(located[i]!.id));
    const values = await cache.read(keys);
    const misses: number[] = [];
    wanted.forEach((i, k) => {
      const hit = values[k] === undefined ? undefined : fromCacheEntry(located[i]!, values[k]!);
      if (hit === undefined) misses.push(i);
      else out[i] = hit;
    });
    if (misses.length === 0) return out;
    const token = cache.begin();
    try {
      await this.readShards(located, misses, out);
    } catch (err) {
      cache.release();
      throw err;
    }
    const entries: [string, string][] = [];
    for (const i of misses) {
      const obj = out[i];
      if (obj !== undefined) entries.push([cache.objectKey(obj.id), toCacheEntry(obj)]);
    }
    cache.fill(token, entries);
    return out;
  }

  /** Reads `indexes` of `located` from their shards into `out`: one backend call per shard, shards in parallel. */
  private async readShards(located: ReadonlyArray<LocatedId | undefined>, indexes: readonly number[], out: (KitObject | undefined)[]): Promise<void> {
    const byShard = new Map<number, number[]>();
    for (const i of indexes) {
      const loc = located[i];
      if (loc === undefined) continue;
      const list = byShard.get(loc.shard);
      if (list) list.push(i);
      else byShard.set(loc.shard, [i]);
    }
    await Promise.all([...byShard.values()].map(async (idx) => {
      const ref = located[idx[0]!]!.ref;
      const keys: ObjectKey[] = idx.map((i) => ({ table: located[i]!.type.table, localId: located[i]!.localId }));
      const rows = await this.ctx.call(ref, 'get', (r) => this.ctx.backend.getObjects(r, keys));
      idx.forEach((i, k) => {
        const row = rows[k];
        out[i] = row && toObject(located[i]!, row);
      });
    }));
  }

  /** get() when a cache is configured: the cache, then on a miss the shard and a (guarded) fill. */
  private async getCached(id: bigint | string, cache: KitCache): Promise<KitObject> {
    const map = this.ctx.loaded ?? (await this.ctx.map());
    const loc = this.ctx.locate(map, id);
    const key = cache.objectKey(loc.id);
    const [value] = await cache.read([key]);
    const hit = value === undefined ? undefined : fromCacheEntry(loc, value);
    if (hit !== undefined) return hit;
    const token = cache.begin();
    let row: ObjectRecord | undefined;
    try {
      [row] = await this.ctx.call(loc.ref, 'get', (r) => this.ctx.backend.getObjects(r, [{ table: loc.type.table, localId: loc.localId }]));
    } catch (err) {
      cache.release();
      throw err;
    }
    const obj = row && toObject(loc, row);
    // Deleted and missing objects are not cached: only live ones are entries.
    cache.fill(token, obj === undefined ? [] : [[key, toCacheEntry(obj)]]);
    if (obj === undefined) throw notFound(loc.id);
    return obj;
  }

  /** After a write to `loc` (committed, or of unknown outcome): forget its cache entry. */
  private async invalidate(loc: LocatedId): Promise<void> {
    const cache = this.ctx.cache;
    if (cache !== undefined) await cache.invalidate([cache.objectKey(loc.id)]);
  }

  /**
   * Read-modify-write in one transaction with the row locked, so concurrent updates never lose
   * one. `fn` must be synchronous; returning undefined leaves the object unchanged.
   */
  async update(id: bigint | string, fn: (data: JsonObject) => JsonObject | undefined | void, options: UpdateOptions = {}): Promise<KitObject> {
    if (typeof fn !== 'function') throw new ShardKitError('INVALID_ARGUMENT', 'update needs a function');
    checkMethodOptions(options, UPDATE_OPTIONS, 'objects.update');
    const conditions = preconditions(options);
    const map = await this.ctx.map();
    const loc = this.ctx.locate(map, id);
    let callerError: { error: unknown } | undefined;
    let row: ObjectRecord | undefined;
    try {
      row = await this.ctx.call(loc.ref, 'update', (r) => this.ctx.backend.updateObject(r, loc.type.table, loc.localId, (text) => {
        const data = decodeActive(text);
        if (data === undefined) throw new Abort(notFound(loc.id));
        checkPreconditions(loc.id, text, conditions);
        let next: JsonObject | undefined | void;
        try {
          next = fn(data);
        } catch (err) {
          callerError = { error: err };
          throw err;
        }
        if (next === undefined) return undefined;
        if (next !== null && typeof (next as { then?: unknown }).then === 'function') {
          throw new Abort(new ShardKitError('INVALID_ARGUMENT', 'update functions must be synchronous (they run inside the row lock)'));
        }
        try {
          const encoded = encodeData(next, 'data', Number.POSITIVE_INFINITY);
          checkData(this.ctx.dataChecks, loc.type.name, next);
          return encoded;
        } catch (err) {
          throw new Abort(err as ShardKitError);
        }
      }), (err) => err instanceof Abort || (callerError !== undefined && err === callerError.error));
    } catch (err) {
      // A storage failure may have committed (a timeout after COMMIT): forget the entry then too.
      if (!(err instanceof Abort) && (callerError === undefined || err !== callerError.error)) await this.invalidate(loc);
      if (err instanceof Abort) throw err.error;
      throw err;
    }
    await this.invalidate(loc);
    const obj = row && toObject(loc, row);
    if (obj === undefined) throw notFound(loc.id);
    return obj;
  }

  /** Applies an RFC 7396 JSON merge patch (the HTTP PATCH). */
  async patch(id: bigint | string, patch: JsonObject, options: UpdateOptions = {}): Promise<KitObject> {
    if (!isPlainObject(patch)) throw new ShardKitError('INVALID_ARGUMENT', 'a merge patch of an object must be a JSON object');
    checkJsonValue(patch, 'patch');
    return this.update(id, (data) => mergePatch(data, patch as JsonValue) as JsonObject, options);
  }

  /** Soft delete by default (`"active": false`, reads then see NOT_FOUND); `hard` removes the row. */
  async delete(id: bigint | string, options: DeleteOptions = {}): Promise<void> {
    checkMethodOptions(options, DELETE_OPTIONS, 'objects.delete');
    const conditions = preconditions(options);
    const map = await this.ctx.map();
    const loc = this.ctx.locate(map, id);
    // A conditional hard delete first soft-deletes under the row lock (the etag checked there, so
    // no concurrent patch slips between check and delete), then removes the row.
    if (options.hard === true && (conditions.ifMatch !== undefined || conditions.ifNoneMatch !== undefined)) {
      const { hard: _hard, ...conditional } = options;
      let softDeleted = true;
      try {
        await this.delete(id, conditional);
      } catch (err) {
        // If-None-Match alone holds when there is no current object (RFC 9110 §13.1.2): a row
        // already soft-deleted is purged as by an unconditional hard delete.
        if (conditions.ifMatch !== undefined || !isShardKitError(err, 'NOT_FOUND')) throw err;
        softDeleted = false;
      }
      try {
        await this.delete(id, { hard: true });
      } catch (err) {
        // Removed by someone else in between: gone either way, and this call's delete happened.
        if (!(softDeleted && isShardKitError(err, 'NOT_FOUND'))) throw err;
      }
      return;
    }
    if (options.hard === true) {
      let removed: boolean;
      try {
        removed = await this.ctx.call(loc.ref, 'delete', (r) => this.ctx.backend.deleteObject(r, loc.type.table, loc.localId));
      } catch (err) {
        await this.invalidate(loc);
        throw err;
      }
      await this.invalidate(loc);
      if (!removed) throw notFound(loc.id);
      return;
    }
    let row: ObjectRecord | undefined;
    try {
      row = await this.ctx.call(loc.ref, 'delete', (r) => this.ctx.backend.updateObject(r, loc.type.table, loc.localId, (text) => {
        const data = decodeActive(text);
        if (data === undefined) throw new Abort(notFound(loc.id));
        checkPreconditions(loc.id, text, conditions);
        return JSON.stringify({ ...data, active: false });
      }), (err) => err instanceof Abort);
    } catch (err) {
      if (err instanceof Abort) throw err.error;
      await this.invalidate(loc);
      throw err;
    }
    await this.invalidate(loc);
    if (row === undefined) throw notFound(loc.id);
  }

  private placement(map: ShardMap, options: CreateOptions): number {
    if (options.near !== undefined && options.shard !== undefined) {
      throw new ShardKitError('INVALID_ARGUMENT', 'give either near or shard, not both');
    }
    if (options.near !== undefined) return this.ctx.locate(map, options.near, 'near').shard;
    if (options.shard !== undefined) {
      const shard = parseField(options.shard, 'shard', PINTEREST_MAX_SHARD);
      if (!map.locate(shard).open) throw new ShardKitError('SHARD_CLOSED', `shard ${shard} is not open for new objects`);
      return shard;
    }
    return map.pickOpenShard(this.ctx.random());
  }
}

/** The most objects one createMany (and one HTTP batchCreate) takes. */
export const MAX_CREATE_MANY = 1000;

/** A backend without insertObjects: one insert after the other (not atomic). */
async function sequential<T>(items: string[], fn: (text: string) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (const text of items) out.push(await fn(text));
  return out;
}

function toObject(loc: LocatedId, row: ObjectRecord): KitObject | undefined {
  // `data` is parsed lazily: the HTTP service sends the stored text without parsing it.
  const { live, data } = liveData(row.data);
  return live ? new KitObject(loc.id, loc.type.name, loc.shard, data, row.data, row.createdAt) : undefined;
}

/*
 * A cached object is `<createdAt ms>\n<stored data text>`: enough to rebuild the KitObject
 * (ID, type and shard come from the ID itself). Only live objects are ever written.
 */
function toCacheEntry(obj: KitObject): string {
  return `${obj.createdAt.getTime()}\n${obj.storedText}`;
}

/**
 * The object of a cache entry; undefined (a miss) for anything toCacheEntry could not have
 * written. The cache is a server other programs can write to (a shared prefix, a bad value), and
 * an entry's text goes out unparsed: so it must be a JSON object of a live object, checked here.
 * The parse is kept as the object's data (readers of `data` do not parse again).
 */
function fromCacheEntry(loc: LocatedId, entry: string): KitObject | undefined {
  const nl = entry.indexOf('\n');
  if (nl < 1) return undefined;
  const ms = Number(entry.slice(0, nl));
  if (!Number.isSafeInteger(ms) || ms < 0) return undefined;
  const text = entry.slice(nl + 1);
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data) || (data as JsonObject).active === false) return undefined;
  return new KitObject(loc.id, loc.type.name, loc.shard, data as JsonObject, text, new Date(ms));
}

function notFound(id: bigint): ShardKitError {
  return new ShardKitError('NOT_FOUND', `object ${id} not found`);
}

interface Preconditions {
  ifMatch: readonly string[] | undefined;
  ifNoneMatch: readonly string[] | undefined;
}

function preconditions(options: UpdateOptions): Preconditions {
  return { ifMatch: etagList(options.ifMatch, 'ifMatch'), ifNoneMatch: etagList(options.ifNoneMatch, 'ifNoneMatch') };
}

function etagList(value: UpdateOptions['ifMatch'], name: string): readonly string[] | undefined {
  if (value === undefined) return undefined;
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.some((e) => typeof e !== 'string')) throw new ShardKitError('INVALID_ARGUMENT', `${name} must be a string or strings`);
  return list;
}

/** Under the row lock, with the object's current stored text: a failed condition aborts the write. */
function checkPreconditions(id: bigint, text: string, { ifMatch, ifNoneMatch }: Preconditions): void {
  if (ifMatch === undefined && ifNoneMatch === undefined) return;
  const etag = etagOf(text);
  if (ifMatch !== undefined && !ifMatch.includes('*') && !ifMatch.includes(etag)) {
    throw new Abort(new ShardKitError('PRECONDITION_FAILED', `object ${id} has changed (etag mismatch)`));
  }
  if (ifNoneMatch !== undefined && (ifNoneMatch.includes('*') || ifNoneMatch.includes(etag))) {
    throw new Abort(new ShardKitError('PRECONDITION_FAILED', ifNoneMatch.includes('*') ? `object ${id} exists (If-None-Match: *)` : `object ${id} still has an etag If-None-Match names`));
  }
}
