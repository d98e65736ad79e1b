import { EventEmitter } from 'node:events';
import { ShardKitError, isShardKitError } from '../errors.js';
import { parseId } from '../ids/codec.js';
import { modShard } from '../ids/mod-shard.js';
import { pinterestId } from '../ids/pinterest-id.js';
import { isFenceError } from '../storage/fence-error.js';
import { observeOperation, type KitTracer } from './operation-events.js';
import type { Fleet, KeyspaceDef, MappingDef, ObjectTypeDef, SchemaDef, ShardBackend, ShardRef } from '../storage/shard-backend.js';
import { holdWhileFrozen, modShardFreeze, modShardMoving, movingError } from '../topology/freeze-hold.js';
import { activeFreeze } from '../topology/range-freeze.js';
import type { RangeFreeze, ShardMap } from '../topology/shard-map.js';
import type { TopologyStore } from '../topology/topology-store.js';
import { KitCache, type KitCacheOptions } from './kit-cache.js';
import { ShardTraffic } from './shard-traffic.js';
import type { DataCheck } from './data-validation.js';
import type { ShardErrorEvent } from './types.js';

/** Storage calls that change a shard: held while the shard is frozen by a move or a planned failover. */
const WRITE_OPS = new Set(['insert', 'update', 'delete', 'mapping-add', 'mapping-remove', 'lookup-put', 'lookup-delete']);

/**
 * The freeze that holds writes to `shard` of `fleet` at `now`: an object shard's own range
 * freeze, or, for a mod shard (lookups), the freeze of the move or failover that carries it
 * (modShardFreeze: only object ranges are frozen in the map).
 */
const FREEZE_OF: Record<Fleet, (map: ShardMap, shard: number, now: number) => RangeFreeze | undefined> = {
  objects: activeFreeze,
  lookups: modShardFreeze,
};


/** An object ID that passed every check: well formed, known type, shard in the map. */
export interface LocatedId {
  id: bigint;
  shard: number;
  localId: number;
  type: ObjectTypeDef;
  ref: ShardRef;
}

export interface StoreContextOptions {
  backend: ShardBackend;
  schema: SchemaDef;
  topology?: TopologyStore;
  shardMap?: ShardMap;
  random?: () => number;
  /** Read-through cache of objects and mapping lists (none: every read goes to the backend). */
  cache?: KitCacheOptions;
  /** Hosts declared after the backend was made (see ShardKitOptions.hostSource). */
  hostSource?: () => Record<string, unknown> | Promise<Record<string, unknown>>;
  /** Per type name: what must hold of its data (create, update, patch). */
  dataChecks?: ReadonlyMap<string, DataCheck>;
  /** Each storage call becomes a span of this tracer (OpenTelemetry's, structurally). */
  tracer?: KitTracer;
}

/**
 * What objects, mappings and lookups share: the backend, the schema indexes, the live shard
 * map (read from the topology store and replaced on every `watch` update) and error events.
 */
export class KitContext {
  readonly backend: ShardBackend;
  readonly schema: SchemaDef;
  readonly events = new EventEmitter();
  readonly random: () => number;
  readonly cache: KitCache | undefined;
  /** Storage calls per object shard (the dashboard's heat map): counted once per call, here. */
  readonly traffic: ShardTraffic;
  readonly dataChecks: ReadonlyMap<string, DataCheck> | undefined;
  private readonly topology: TopologyStore | undefined;
  private readonly typesByName = new Map<string, ObjectTypeDef>();
  private readonly typesById = new Map<number, ObjectTypeDef>();
  private readonly mappingsByName = new Map<string, MappingDef>();
  private readonly keyspacesByName = new Map<string, KeyspaceDef>();
  /** Written to an empty topology store on first use. */
  private readonly seed: ShardMap | undefined;
  private current: ShardMap | undefined;
  private refsMap: ShardMap | undefined;
  private refs: ShardRef[] = [];
  private loading: Promise<ShardMap> | undefined;
  private unwatch: (() => void) | undefined;
  private closed = false;
  private refreshing: Promise<ShardMap> | undefined;
  /** Held writes waiting for the next map. */
  private mapWaiters = new Set<() => void>();
  private readonly hostSource: StoreContextOptions['hostSource'];
  private learning: Promise<void> | undefined;
  private readonly tracer: KitTracer | undefined;

  constructor(options: StoreContextOptions) {
    if (options.topology === undefined && options.shardMap === undefined) {
      throw new ShardKitError('INVALID_ARGUMENT', 'ShardKit needs a topology store or a shard map');
    }
    this.backend = options.backend;
    this.schema = options.schema;
    this.topology = options.topology;
    this.hostSource = options.backend.learnHosts === undefined ? undefined : options.hostSource;
    this.tracer = options.tracer;
    this.dataChecks = options.dataChecks !== undefined && options.dataChecks.size > 0 ? options.dataChecks : undefined;
    this.random = options.random ?? Math.random;
    if (options.topology === undefined) this.current = options.shardMap;
    this.seed = options.shardMap;
    for (const t of options.schema.types) {
      this.typesByName.set(t.name, t);
      this.typesById.set(t.id, t);
    }
    for (const m of options.schema.mappings) this.mappingsByName.set(m.name, m);
    for (const k of options.schema.keyspaces) this.keyspacesByName.set(k.name, k);
    // Shard errors are reported to whoever listens; no listener must not mean a crash.
    this.events.on('error', () => {});
    this.cache = options.cache === undefined ? undefined : new KitCache(options.cache, this.events);
    this.traffic = new ShardTraffic(options.shardMap?.shardCount);
  }

  /** The shard map in force; loads it from the topology store on first use. */
  map(): ShardMap | Promise<ShardMap> {
    if (this.closed) throw new ShardKitError('CLOSED', 'this ShardKit is closed');
    return this.current ?? this.load();
  }

  /** The map when already loaded and open (the synchronous fast path of map()). */
  get loaded(): ShardMap | undefined {
    return this.closed ? undefined : this.current;
  }

  async ready(): Promise<ShardMap> {
    return this.map();
  }

  /**
   * The map version in force and the hosts it names that the backend has no address for, after
   * reading the host source again if there are any (what the service heartbeat reports).
   */
  async unreachableHosts(): Promise<{ mapVersion: number; missing: string[] }> {
    const map = await this.map();
    const unknown = () => (this.backend.knowsHost === undefined ? [] : map.hostNames().filter((h) => !this.backend.knowsHost!(h)));
    let missing = unknown();
    if (missing.length > 0 && this.hostSource) {
      await this.learnHosts().catch(() => {});
      missing = unknown();
    }
    return { mapVersion: map.version, missing };
  }

  private load(): Promise<ShardMap> {
    this.loading ??= (async () => {
      const store = this.topology!;
      let map = await store.read();
      if (map === undefined) {
        if (this.seed === undefined) throw new ShardKitError('SHARD_UNAVAILABLE', 'the topology store holds no shard map');
        try {
          map = await store.write(this.seed, 0);
        } catch (err) {
          // Another process seeded the store first: use what it wrote.
          if (!isShardKitError(err, 'VERSION_CONFLICT')) throw err;
          map = await store.read();
          if (map === undefined) throw err;
        }
      }
      this.adopt(map);
      this.unwatch = store.watch((next) => this.adopt(next));
      return this.current!;
    })();
    this.loading.catch(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  private adopt(map: ShardMap): void {
    if (this.current !== undefined && map.version < this.current.version) return;
    const changed = this.current !== undefined && this.current.version !== map.version;
    this.current = map;
    if (changed) {
      // A map that names a pair added since this process started: learn its address now rather
      // than on the first request routed there.
      if (this.hostSource && map.hostNames().some((h) => !this.backend.knowsHost!(h))) this.learnHosts().catch(() => {});
      this.events.emit('topology', map);
      const waiters = [...this.mapWaiters];
      this.mapWaiters.clear();
      for (const w of waiters) w();
    }
  }

  /** Reads the store now (not waiting for the watch) and adopts what it holds; concurrent callers share one read. */
  refresh(): Promise<ShardMap> {
    if (this.topology === undefined || this.current === undefined) return Promise.resolve(this.map());
    this.refreshing ??= this.topology.read().then((m) => {
      if (m !== undefined) this.adopt(m);
      return this.current!;
    }).finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  /** Resolves on the next adopted map or after `ms`, whichever comes first (then re-reads the store). */
  private nextMap(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.mapWaiters.delete(done);
        resolve();
      };
      const timer = setTimeout(() => {
        this.mapWaiters.delete(done);
        this.refresh().then(() => resolve(), () => resolve());
      }, ms);
      this.mapWaiters.add(done);
    });
  }

  /**
   * Waits while `shard`'s range is frozen by a move (docs/moves.md), at most until the freeze's
   * budget runs out (counted from its frozenAt, and never longer than holdMs from now, whatever
   * the clocks say). Returns the map to route with: the switched one, the unfrozen one (aborted),
   * or, with `orMoving`, SHARD_MOVING when the budget ran out first.
   */
  async holdWhileFrozen(shard: number, orMoving: boolean, fleet: Fleet = 'objects'): Promise<ShardMap> {
    const map = this.current ?? (await this.map());
    const freezeOf = FREEZE_OF[fleet];
    if (freezeOf(map, shard, Date.now()) === undefined) return map;
    return holdWhileFrozen({
      map: () => this.current ?? map,
      next: (ms) => this.nextMap(ms),
      freezeOf,
      checkOpen: () => {
        if (this.closed) throw new ShardKitError('CLOSED', 'this ShardKit is closed');
      },
    }, shard, orMoving);
  }

  /**
   * A storage call met the fence (SHARD_MOVED: the shard's tables are gone from `ref.host`): reload
   * the map, wait out a freeze, and run `work` once on the shard's master. The fenced call changed
   * nothing, so running it again is safe. Still on the same host under a freeze, or fenced again:
   * SHARD_MOVING.
   * Object shards and mod shards (lookups, carried by a move or a failover of their host) alike.
   */
  async afterFence<T>(ref: ShardRef, op: string, work: (ref: ShardRef) => Promise<T>, fenceError: unknown, isCallerError?: (err: unknown) => boolean): Promise<T> {
    let map = await this.refresh();
    const moving = (m: ShardMap) => (ref.fleet === 'lookups'
      ? modShardMoving(m, ref.shard, ref.host)
      : m.freezeOf(ref.shard) !== undefined || m.moves().some((x) => x.range[0] <= ref.shard && ref.shard <= x.range[1]));
    // A table missing on a server backend is a fence only when a move touches the shard; without
    // one it is what it says (shardkit init / schema apply), reported as it came.
    if (!isShardKitError(fenceError, 'SHARD_MOVED') && !moving(map) && this.refOf(map, ref).host === ref.host) {
      this.reportFailure(ref, op, fenceError);
      throw fenceError;
    }
    map = await this.holdWhileFrozen(ref.shard, true, ref.fleet);
    const next = this.refOf(map, ref);
    if (next.host === ref.host) {
      // The freeze's id even when its budget ran out (now = 0: every recorded freeze counts).
      const freeze = FREEZE_OF[ref.fleet](map, ref.shard, 0);
      // Unfrozen and on this host by the store's own map: the fence was met through a handle on
      // an older file (the shard moved away, then back to a new file at the same path). The
      // backend has forgotten that handle, so the retry opens what the path holds now; a real
      // fence refuses it again. The map never names a move's unswitched target, so the retry
      // cannot land on a copy in progress.
      if (freeze !== undefined || !isShardKitError(fenceError, 'SHARD_MOVED')) throw movingError(ref.shard, freeze?.id, 0, fenceError);
    }
    try {
      if (this.hostSource && !this.backend.knowsHost!(next.host)) await this.learnHosts().catch(() => {});
      return await work(next);
    } catch (err) {
      if (isFenceError(err)) throw movingError(ref.shard, undefined, 0, err);
      if (!isCallerError?.(err)) this.reportFailure(next, op, err);
      throw err;
    }
  }

  type(name: unknown): ObjectTypeDef {
    const t = typeof name === 'string' ? this.typesByName.get(name) : undefined;
    if (t === undefined) throw new ShardKitError('UNKNOWN_TYPE', `unknown object type ${JSON.stringify(String(name).slice(0, 64))}`);
    return t;
  }

  mapping(name: unknown): MappingDef {
    const m = typeof name === 'string' ? this.mappingsByName.get(name) : undefined;
    if (m === undefined) throw new ShardKitError('UNKNOWN_MAPPING', `unknown mapping ${JSON.stringify(String(name).slice(0, 64))}`);
    return m;
  }

  keyspace(name: unknown): KeyspaceDef {
    const k = typeof name === 'string' ? this.keyspacesByName.get(name) : undefined;
    if (k === undefined) throw new ShardKitError('UNKNOWN_KEYSPACE', `unknown keyspace ${JSON.stringify(String(name).slice(0, 64))}`);
    return k;
  }

  /** Validates an object ID: INVALID_ID, UNKNOWN_TYPE or UNKNOWN_SHARD when it cannot be served. */
  locate(map: ShardMap, input: unknown, what = 'id'): LocatedId {
    const id = parseId(input, what);
    const parts = pinterestId.decode(id);
    const type = this.typesById.get(parts.type);
    if (type === undefined) throw new ShardKitError('UNKNOWN_TYPE', `${what} ${id} has type id ${parts.type}, which is not in the schema`);
    return { id, shard: parts.shard, localId: parts.localId, type, ref: this.objectRef(map, parts.shard) };
  }

  objectRef(map: ShardMap, shard: number): ShardRef {
    // Refs are cached per map: every call routes through here.
    if (this.refsMap !== map) {
      this.refsMap = map;
      this.refs = [];
    }
    return (this.refs[shard] ??= { host: map.locate(shard).master, shard, fleet: 'objects' });
  }

  lookupRef(map: ShardMap, key: string): ShardRef {
    return this.modRef(map, modShard(key, map.modShardCount));
  }

  modRef(map: ShardMap, shard: number): ShardRef {
    return { host: map.locateModShard(shard).master, shard, fleet: 'lookups' };
  }

  /** `ref`'s shard routed by `map` (its master there). */
  private refOf(map: ShardMap, ref: ShardRef): ShardRef {
    return ref.fleet === 'objects' ? this.objectRef(map, ref.shard) : this.modRef(map, ref.shard);
  }

  /**
   * Calls the backend with `ref` (or, across a move's cutover, the shard's new master: `work`
   * must use the ref it is given). Writes to a frozen shard (an object shard, or a mod shard
   * carried by a move or a planned failover) wait for the switch, up to the hold budget; a call
   * that meets the fence is retried once on the new master (afterFence).
   * Storage failures (not bad input) are announced as 'shard-error'.
   */
  /** A tracer is set or an 'operation' listener is attached: storage calls are timed. */
  get observed(): boolean {
    return this.tracer !== undefined || this.events.listenerCount('operation') > 0;
  }

  call<T>(ref: ShardRef, op: string, work: (ref: ShardRef) => Promise<T>, isCallerError?: (err: unknown) => boolean): Promise<T> {
    // Counted once, as asked: a held write or a retry after the fence is still one call.
    if (ref.fleet === 'objects') this.traffic.count(ref.shard, WRITE_OPS.has(op));
    // Timing and spans only when someone looks: the read path pays nothing otherwise.
    if (this.observed) {
      return observeOperation(this.events, this.tracer, ref, op, () => this.route(ref, op, work, isCallerError));
    }
    return this.route(ref, op, work, isCallerError);
  }

  private route<T>(ref: ShardRef, op: string, work: (ref: ShardRef) => Promise<T>, isCallerError?: (err: unknown) => boolean): Promise<T> {
    if (WRITE_OPS.has(op) && this.current !== undefined && FREEZE_OF[ref.fleet](this.current, ref.shard, Date.now()) !== undefined) {
      return this.holdWhileFrozen(ref.shard, true, ref.fleet).then((map) => this.route(this.refOf(map, ref), op, work, isCallerError));
    }
    // A rejection handler rather than an async frame: this wraps every storage call.
    return work(ref).then(undefined, (err: unknown) => {
      if (isFenceError(err)) return this.afterFence(ref, op, work, err, isCallerError);
      if (this.hostSource && isShardKitError(err, 'HOST_UNKNOWN')) return this.afterUnknownHost(ref, op, work, err, isCallerError);
      if (!isCallerError?.(err)) this.reportFailure(ref, op, err);
      throw err;
    });
  }

  /** Reads the host source again (concurrent callers share one read) and gives the backend the hosts it lacks. */
  learnHosts(): Promise<void> {
    this.learning ??= (async () => {
      this.backend.learnHosts!(await this.hostSource!());
    })().finally(() => {
      this.learning = undefined;
    });
    return this.learning;
  }

  /**
   * The map routed to a host this process has no address for: learn the hosts again, then route
   * once more. Still unknown: HOST_UNKNOWN (503, retryable), never a client error.
   */
  private async afterUnknownHost<T>(ref: ShardRef, op: string, work: (ref: ShardRef) => Promise<T>, err: unknown, isCallerError?: (err: unknown) => boolean): Promise<T> {
    await this.learnHosts().catch(() => {});
    if (!this.backend.knowsHost!(ref.host)) {
      this.reportFailure(ref, op, err);
      throw err;
    }
    return this.route(ref, op, work, isCallerError);
  }

  /** What call() does with a rejection, for callers that await the backend themselves. */
  reportFailure(ref: ShardRef, op: string, err: unknown): void {
    if (!isShardKitError(err) || err.code === 'SHARD_UNAVAILABLE' || err.code === 'INTERNAL') {
      const event: ShardErrorEvent = { host: ref.host, shard: ref.shard, fleet: ref.fleet, op, error: err };
      this.events.emit('shard-error', event);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const w of [...this.mapWaiters]) w();
    this.unwatch?.();
    await this.cache?.drain();
  }
}
