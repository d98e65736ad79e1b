import type { EventEmitter } from 'node:events';
import { dirname, resolve } from 'node:path';
import { ShardKitError } from '../errors.js';
import { loadConfigFile, parseConfig, resolveSchema, type ConfigInput, type ShardKitConfig } from '../config/config.js';
import type { SchemaDef, ShardBackend } from '../storage/shard-backend.js';
import type { HostStorageMetrics } from '../storage/storage-metrics.js';
import { createCache, DEFAULT_CACHE_TTL_SECONDS, type Cache } from '../cache/index.js';
import { createTopologyStore } from '../topology/index.js';
import { ShardMap, type MoveProgress } from '../topology/shard-map.js';
import type { TopologyStore } from '../topology/topology-store.js';
import type { HealStatus } from '../topology/heal-records.js';
import { hostsFromRecords } from '../topology/host-records.js';
import { createBackend } from './backend-factory.js';
import { Lookups } from './lookups.js';
import { Mappings } from './mappings.js';
import { Objects } from './objects.js';
import type { AnyObject, MappingName, SchemaShape, TypedLookups, TypedMappings, TypedObjects, UntypedSchema } from './typed-schema.js';
import { KitContext } from './kit-context.js';
import { jsonSchemaChecks, standardCheck, type DataCheck, type StandardSchemaLike } from './data-validation.js';
import { ShardStatsSource, type ShardStats, type ShardStatsOptions } from './shard-stats.js';
import type { CacheStats, ListOptions } from './types.js';
import type { KitCacheOptions } from './kit-cache.js';
import type { KitTracer } from './operation-events.js';
import { ServiceHeartbeat, type ServiceHeartbeatOptions } from './service-heartbeat.js';
import { witnessSuspects } from './service-witness.js';
import { checkKitOptions, checkOpenOptions } from './kit-options.js';

function isCache(value: Cache | KitCacheOptions): value is Cache {
  return typeof (value as Cache).getMany === 'function';
}

export interface ShardKitOptions {
  backend: ShardBackend;
  schema: SchemaDef;
  /** Where the live shard map is read from and watched. */
  topology?: TopologyStore;
  /** The map to use without a topology store, or to write into an empty one. */
  shardMap?: ShardMap;
  /** Random source for placing new objects (tests pass a seeded one). */
  random?: () => number;
  /**
   * Where hosts added after this kit started are declared (ShardKit.open: the config file, read
   * again when the map names a host the backend does not know). None: such a host is HOST_UNKNOWN.
   */
  hostSource?: () => Record<string, unknown> | Promise<Record<string, unknown>>;
  /**
   * Per type name, a Standard Schema validator (zod, valibot, arktype) its data must pass on
   * create, update and patch: INVALID_ARGUMENT naming the field otherwise. With ShardKit.open, a
   * type's `dataSchema` (JSON Schema) in the config is checked too.
   */
  validators?: Record<string, StandardSchemaLike>;
  /** @internal Checks already built (ShardKit.open: the config's dataSchema). */
  dataChecks?: ReadonlyMap<string, DataCheck>;
  /**
   * Read-through cache of objects and mapping lists (docs/caching.md): a Cache, or one with its
   * TTL and key prefix. None by default.
   */
  cache?: Cache | KitCacheOptions;
  /** close() also closes the backend, the topology store and the cache (set by ShardKit.open). */
  ownsResources?: boolean;
  /**
   * OpenTelemetry: `trace.getTracer('shardkit')` from @opentelemetry/api. Each storage call is a
   * span (`shardkit.<op>`, with shard, host and fleet). None: no span, nothing loaded.
   */
  tracer?: KitTracer;
  /**
   * Write this service's heartbeat to the topology store (#28: a move waits before its freeze
   * until every live service can reach its target). ShardKit.open turns it on when the store
   * keeps heartbeats; `false` turns it off.
   */
  heartbeat?: boolean | ServiceHeartbeatOptions;
}

export interface OpenOptions {
  /** A config object (validated here) ... */
  config?: ConfigInput | ShardKitConfig;
  /**
   * ... or the path of a config file. With `config` too, the file is only where hosts added later
   * are read from (a pair added to a running fleet: see ShardKitOptions.hostSource).
   */
  configPath?: string;
  /** Base for relative paths (SQLite host dirs, topology file); default: the config file's directory. */
  dataDir?: string;
  random?: () => number;
  /** As ShardKitOptions.validators. */
  validators?: Record<string, StandardSchemaLike>;
  /** As ShardKitOptions.tracer. */
  tracer?: KitTracer;
  /** As ShardKitOptions.heartbeat; on by default here. */
  heartbeat?: boolean | ServiceHeartbeatOptions;
  /**
   * Called when the topology store's watch meets a map it cannot use (a record that does not
   * parse, a version gap) or loses the store: the kit routes on by the last good map, and this is
   * how it says so (`serve` logs it). A library prints nothing by itself.
   */
  onTopologyError?: (err: unknown) => void;
}

/**
 * The facade users call: objects, mappings and lookups over logical shards, routed by the live
 * shard map. `ShardKit.open({ configPath, dataDir })` builds everything from a config file;
 * `new ShardKit({ backend, schema, topology })` takes parts you built. With a type argument
 * (`ShardKit.open<Schema>()`, src/kit/typed-schema.ts) names and data are typed.
 */
export class ShardKit<S extends SchemaShape = UntypedSchema> {
  readonly objects: TypedObjects<S>;
  readonly mappings: TypedMappings<S>;
  readonly lookups: TypedLookups<S>;
  readonly backend: ShardBackend;
  readonly schema: SchemaDef;
  private readonly ctx: KitContext;
  private readonly statsSource: ShardStatsSource;
  private readonly topology: TopologyStore | undefined;
  private readonly ownsResources: boolean;
  /** The tracer given (ShardKitOptions.tracer): the HTTP service makes its request spans with it. */
  readonly tracer: KitTracer | undefined;
  private closing: Promise<void> | undefined;
  /** This service's record in the topology store's heartbeats (undefined: none written). */
  readonly heartbeat: ServiceHeartbeat | undefined;
  private beating = false;

  constructor(options: ShardKitOptions) {
    checkKitOptions(options);
    const { cache, validators, ...rest } = options;
    const checks = new Map(options.dataChecks ?? []);
    for (const [type, schema] of Object.entries(validators ?? {})) {
      if (!options.schema.types.some((t) => t.name === type)) throw new ShardKitError('INVALID_ARGUMENT', `validators.${type}: no such type in the schema`);
      const standard = standardCheck(type, schema);
      const fromConfig = checks.get(type);
      checks.set(type, fromConfig === undefined ? standard : (data) => fromConfig(data) ?? standard(data));
    }
    rest.dataChecks = checks;
    this.ctx = new KitContext(cache === undefined ? rest : { ...rest, cache: isCache(cache) ? { cache } : cache });
    this.backend = options.backend;
    this.schema = options.schema;
    this.topology = options.topology;
    this.ownsResources = options.ownsResources === true;
    this.tracer = options.tracer;
    // One implementation for every schema: the typed views only narrow names and data types.
    this.objects = new Objects(this.ctx) as unknown as TypedObjects<S>;
    this.mappings = new Mappings(this.ctx) as unknown as TypedMappings<S>;
    this.lookups = new Lookups(this.ctx) as unknown as TypedLookups<S>;
    this.statsSource = new ShardStatsSource(this.ctx);
    const beat = options.heartbeat;
    const records = options.topology?.services;
    this.heartbeat = beat === undefined || beat === false || records === undefined
      ? undefined
      : new ServiceHeartbeat(records, async () => {
        const [hosts, reach] = await Promise.all([this.ctx.unreachableHosts(), witnessSuspects(options.topology!, this.backend).catch(() => undefined)]);
        return { ...hosts, ...(reach !== undefined ? { reach } : {}) };
      }, beat === true ? {} : beat);
  }

  static async open<S extends SchemaShape = UntypedSchema>(options: OpenOptions): Promise<ShardKit<S>> {
    checkOpenOptions(options);
    let config: ShardKitConfig;
    if (options.config !== undefined) config = parseConfig(options.config);
    else if (options.configPath !== undefined) config = loadConfigFile(options.configPath);
    else throw new ShardKitError('INVALID_ARGUMENT', 'ShardKit.open needs config or configPath');
    const dataDir = resolve(options.dataDir ?? (options.configPath !== undefined ? dirname(options.configPath) : '.'));
    const schema = resolveSchema(config);
    const seed = ShardMap.fromJSON(config.shardMap, { hosts: Object.keys(config.hosts) });
    const backend = await createBackend({ config, dataDir, schema });
    const topology = createTopologyStore(config.topologyStore, { dataDir, ...(options.onTopologyError !== undefined ? { onError: options.onTopologyError } : {}) });
    const spec = config.cache;
    const cache: KitCacheOptions | undefined = spec === undefined
      ? undefined
      : { cache: await createCache(spec), ttlSeconds: spec.ttlSeconds ?? DEFAULT_CACHE_TTL_SECONDS, ...(spec.keyPrefix !== undefined ? { keyPrefix: spec.keyPrefix } : {}) };
    const configPath = options.configPath;
    const dataChecks = await jsonSchemaChecks(config.schema.types);
    const kit = new ShardKit<S>({
      backend, schema, topology, shardMap: seed, ownsResources: true, dataChecks,
      ...(options.validators ? { validators: options.validators } : {}),
      ...(configPath !== undefined || topology.hosts !== undefined ? { hostSource: () => declaredHosts(config, configPath, topology) } : {}),
      ...(cache ? { cache } : {}),
      ...(options.random ? { random: options.random } : {}),
      ...(options.tracer ? { tracer: options.tracer } : {}),
      heartbeat: options.heartbeat ?? true,
    });
    try {
      await kit.ready();
    } catch (err) {
      await kit.close();
      throw err;
    }
    return kit;
  }

  /** Resolves once the shard map is loaded (every call waits for it anyway). */
  async ready(): Promise<void> {
    await this.ctx.ready();
    // The first beat is written before the service takes traffic (a store that is down does not
    // stop it); then one on every map change, so a move waiting for services hears at once.
    if (this.heartbeat !== undefined && !this.beating) {
      this.beating = true;
      this.ctx.events.on('topology', () => void this.heartbeat!.beat());
    }
    await this.heartbeat?.start();
  }

  /** The shard map in force (follows the topology store's updates). */
  async shardMap(): Promise<ShardMap> {
    return this.ctx.map();
  }

  /**
   * Each move's latest progress from the topology store's progress records (#30: kept out of the
   * map this kit routes with); empty without a store or records. For the dashboard, not routing.
   */
  async moveProgress(): Promise<Map<string, MoveProgress>> {
    return (await this.topology?.progress?.readAll()) ?? new Map();
  }

  /** The heal supervisors' records beside the map (#31), by supervisor id; empty without a store or records. */
  async healStatus(): Promise<Map<string, HealStatus>> {
    return (await this.topology?.heal?.readAll()) ?? new Map();
  }

  /** Reads the topology store now rather than waiting for the watch (the MyRocks engine after a move's fence). */
  async refreshShardMap(): Promise<ShardMap> {
    return this.ctx.refresh();
  }

  /**
   * Counters of the cache (hits, misses, errors, fills, skipped fills, invalidations) since
   * this kit was made; undefined when it has no cache.
   */
  cacheStats(): CacheStats | undefined {
    return this.ctx.cache?.stats();
  }

  /**
   * Server backends (MariaDB, PostgreSQL): each opened host's connection pool (in use, idle,
   * waiting) and statement latency by kind (read, write, batch); empty for SQLite.
   */
  storageMetrics(): HostStorageMetrics[] {
    return this.backend.storageMetrics?.() ?? [];
  }

  /**
   * Requests (storage calls routed to each object shard, reads and writes, since this kit was
   * made, and their recent rate) and objects (rows of the object tables, counted by the backend
   * and cached) per shard, grouped by the map's ranges: the dashboard's heat map. INVALID_ARGUMENT
   * or UNKNOWN_SHARD for a bad first/last.
   */
  shardStats(options: ShardStatsOptions = {}): Promise<ShardStats> {
    return this.statsSource.stats(options);
  }

  /**
   * 'shard-error' (ShardErrorEvent) on storage failures, 'cache-error' (CacheErrorEvent) on cache
   * failures (the read or write itself went on), 'topology' (ShardMap) on map changes.
   */
  get events(): EventEmitter {
    return this.ctx.events;
  }

  /**
   * The application-level join: a page of the mapping, then a multi-get of those objects
   * (deleted ones skipped). `next` continues the mapping, so a page may hold fewer objects.
   */
  async join(mapping: MappingName<S>, from: bigint | string, options: ListOptions = {}): Promise<{ objects: Array<AnyObject<S>>; next: string | null }> {
    const page = await this.mappings.list(mapping, from, options);
    const objects = await this.objects.getMany(page.items.map((i) => i.id), { skipInvalid: true });
    return { objects: objects.filter((o): o is AnyObject<S> => o !== undefined), next: page.next };
  }

  async close(): Promise<void> {
    this.closing ??= (async () => {
      this.statsSource.close();
      await this.heartbeat?.stop();
      await this.ctx.close();
      if (this.ownsResources) {
        await this.backend.close();
        await this.topology?.close();
        await this.ctx.cache?.cache.close();
      }
    })();
    return this.closing;
  }
}

/**
 * The hosts a service can learn after it started (#28): its config file read again, then the
 * topology store's host records it still lacks (connected with the config's credentials; the
 * store never holds secrets). One source failing does not hide the other.
 */
async function declaredHosts(config: ShardKitConfig, configPath: string | undefined, topology: TopologyStore): Promise<Record<string, unknown>> {
  let fromFile: ShardKitConfig['hosts'] = config.hosts;
  if (configPath !== undefined) {
    try {
      fromFile = loadConfigFile(configPath).hosts;
    } catch {
      // A file being rewritten or gone: the hosts this service started with still hold.
    }
  }
  const records = await topology.hosts?.readAll().catch(() => undefined);
  const fromStore = records === undefined ? {} : hostsFromRecords(records, { ...config.hosts, ...fromFile });
  return { ...fromStore, ...fromFile };
}
