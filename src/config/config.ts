import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { MAX_TTL_SECONDS } from '../cache/cache.js';
import { ShardKitError } from '../errors.js';
import { PINTEREST_MAX_TYPE } from '../ids/pinterest-id.js';
import type { SchemaDef } from '../storage/shard-backend.js';
import { mappingIndexName, RESERVED_TABLE_PREFIX, shardNames } from '../storage/shard-names.js';
import { hostConfigSchema } from '../storage/backend-setup.js';
import { storageConfigSchema } from '../storage/storage-config.js';
import { defaultShardMapJson, shardMapSchema, ShardMap, type DefaultHostNames } from '../topology/shard-map.js';
import { ticketsConfigSchema, resolveTickets } from '../tickets/tickets-config.js';

/** Longest name of a table or index in a shard: PostgreSQL keeps 63 bytes of an identifier, MySQL 64. */
const MAX_IDENTIFIER = 63;

/** SQL identifiers (tables) and names used in URLs: validated once here, never taken from requests. */
export const identifier = z.string().regex(/^[a-z][a-z0-9_]{0,62}$/, 'must match ^[a-z][a-z0-9_]{0,62}$');

const typeSchema = z.object({
  name: identifier,
  id: z.number().int().min(0).max(PINTEREST_MAX_TYPE),
  table: identifier.optional(),
  /** A JSON Schema every object's data must match (checked by the kit on create, update and patch). */
  dataSchema: z.record(z.string(), z.unknown()).optional(),
}).strict();
const mappingSchema = z.object({ name: identifier, from: identifier, to: identifier, table: identifier.optional() }).strict();
const keyspaceSchema = z.union([identifier, z.object({ name: identifier, table: identifier.optional() }).strict()]);

export const schemaConfigSchema = z.object({
  types: z.array(typeSchema).default([]),
  mappings: z.array(mappingSchema).default([]),
  keyspaces: z.array(keyspaceSchema).default([]),
}).strict();

/** How one physical host is reached (owned by storage: each backend reads the fields it knows). */
export const hostSchema = hostConfigSchema;

/** Each backend owns the schema of its `storage` section (src/storage/<kind>/<kind>-config.ts, listed in storage/storage-config.ts). */
export const storageSchema = storageConfigSchema;

export const topologyStoreSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('file'), path: z.string().default('topology.json') }).strict(),
  z.object({ kind: z.literal('memory') }).strict(),
  z.object({
    kind: z.literal('etcd'),
    endpoints: z.array(z.string().refine(isHttpUrl, 'must be an http:// or https:// URL')).min(1),
    // Printable ASCII only: the key shows up in logs, errors and etcdctl commands.
    key: z.string().regex(/^\/[\x21-\x7e]{0,1023}$/, "must start with '/' and be printable ASCII without spaces (at most 1024 characters)").optional(),
    dialTimeoutMs: z.number().int().min(1).max(600_000).optional(),
  }).strict(),
]);

function isHttpUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

const ttlSeconds = z.number().int().min(1).max(MAX_TTL_SECONDS).optional();
/** Put before every cache key; keys must stay within memcached's rules (no whitespace, 250 bytes). */
const keyPrefix = z.string().regex(/^[A-Za-z0-9_.:-]{0,64}$/, 'must be at most 64 of A-Z a-z 0-9 _ . : -').optional();
// memjs splits each server at ':', so IPv6 literals cannot be given.
const memcachedServer = z.string().regex(/^[A-Za-z0-9.-]+:[0-9]{1,5}$/, 'must be host:port (a name or IPv4 address)');

/** The read-through cache (src/cache, docs/caching.md); absent: no cache. */
export const cacheSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('memory'), maxEntries: z.number().int().min(1).max(100_000_000).optional(), ttlSeconds, keyPrefix }).strict(),
  z.object({
    kind: z.literal('redis'),
    url: z.string().refine(isRedisUrl, 'must be a redis:// or rediss:// URL'),
    ttlSeconds,
    keyPrefix,
  }).strict(),
  z.object({ kind: z.literal('memcached'), servers: z.array(memcachedServer).min(1), ttlSeconds, keyPrefix }).strict(),
]);

function isRedisUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return (u.protocol === 'redis:' || u.protocol === 'rediss:') && u.hostname !== '';
  } catch {
    return false;
  }
}

export const configSchema = z.object({
  storage: storageSchema.default({ backend: 'sqlite', dir: 'hosts', maxOpenShards: 256, synchronous: 'normal', busyTimeoutMs: 5000 }),
  hosts: z.record(z.string(), hostSchema).default({}),
  /** The initial shard map; the live one is in the topology store. */
  shardMap: shardMapSchema,
  topologyStore: topologyStoreSchema.default({ kind: 'file', path: 'topology.json' }),
  schema: schemaConfigSchema,
  /** Read-through cache of objects and mapping lists; default none (docs/caching.md). */
  cache: cacheSchema.optional(),
  /** Ticket servers and named sequences (src/tickets, docs/tickets.md). */
  tickets: ticketsConfigSchema.optional(),
  /** Wide-column store (src/widecolumn); validated by that module. */
  widecolumn: z.record(z.string(), z.unknown()).optional(),
}).strict();

export type ConfigInput = z.input<typeof configSchema>;
export type ShardKitConfig = z.output<typeof configSchema>;

/** Validates a config object; every problem is INVALID_CONFIG with the path that is wrong. */
export function parseConfig(input: unknown): ShardKitConfig {
  const parsed = configSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ShardKitError('INVALID_CONFIG', `invalid config at ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  const config = parsed.data;
  // Cross-checks: hosts declared, names unique, mappings name known types.
  ShardMap.fromJSON(config.shardMap, { hosts: Object.keys(config.hosts) });
  resolveSchema(config);
  if (config.tickets) resolveTickets(config.tickets);
  return config;
}

export function loadConfigFile(path: string): ShardKitConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ShardKitError('INVALID_CONFIG', `cannot read config file ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ShardKitError('INVALID_CONFIG', `config file ${path} is not valid JSON: ${(err as Error).message}`);
  }
  return parseConfig(json);
}

/**
 * Fills default table names (pin → pins, a mapping's table is its name, keyspace email →
 * lookup_email) and checks that names are unique and that no two tables or indexes coincide.
 */
export function resolveSchema(config: Pick<ShardKitConfig, 'schema'>): SchemaDef {
  const s = config.schema;
  const fail = (m: string): never => {
    throw new ShardKitError('INVALID_CONFIG', `invalid schema: ${m}`);
  };
  const types = s.types.map((t) => ({ name: t.name, id: t.id, table: t.table ?? `${t.name}s` }));
  const mappings = s.mappings.map((m) => ({ name: m.name, from: m.from, to: m.to, table: m.table ?? m.name }));
  const keyspaces = s.keyspaces.map((k) => (typeof k === 'string' ? { name: k, table: `lookup_${k}` } : { name: k.name, table: k.table ?? `lookup_${k.name}` }));
  const unique = (what: string, values: (string | number)[]) => {
    const seen = new Set<string | number>();
    for (const v of values) {
      if (seen.has(v)) fail(`${what} ${v} is declared twice`);
      seen.add(v);
    }
  };
  unique('type name', types.map((t) => t.name));
  unique('type id', types.map((t) => t.id));
  unique('mapping name', mappings.map((m) => m.name));
  unique('keyspace', keyspaces.map((k) => k.name));
  const typeNames = new Set(types.map((t) => t.name));
  for (const m of mappings) {
    if (!typeNames.has(m.from)) fail(`mapping ${m.name} comes from unknown type ${m.from}`);
    if (!typeNames.has(m.to)) fail(`mapping ${m.name} goes to unknown type ${m.to}`);
  }
  checkShardNames({ types, mappings, keyspaces }, fail);
  return { types, mappings, keyspaces };
}

/**
 * Types, mappings and keyspaces put their tables (and SQLite their mapping indexes) in the same
 * database or file of each shard when a host serves both fleets, so any two names that coincide
 * would share one table: refused, naming both entities.
 */
function checkShardNames(schema: SchemaDef, fail: (m: string) => never): void {
  const owners = new Map<string, string>();
  for (const { name, kind, owner } of shardNames(schema)) {
    // Only a default table (pin → pins, email → lookup_email) can grow past the identifier rule;
    // 63 characters fit MySQL (64) and PostgreSQL (63).
    if (kind === 'table' && !identifier.safeParse(name).success) fail(`${owner} would use the table name ${name}, longer than 63 characters (give it a shorter "table")`);
    // PostgreSQL cuts longer identifiers to 63 bytes with only a NOTICE: a mapping's page index
    // would get a cut name (its table's own name, at 63) and `CREATE INDEX IF NOT EXISTS` would
    // skip it, leaving list pages without their index. One rule for every backend, so configs move.
    if (kind === 'index' && name.length > MAX_IDENTIFIER) {
      fail(`${owner} would be named ${name}, longer than the ${MAX_IDENTIFIER} characters PostgreSQL keeps (give the mapping a "table" of at most ${MAX_IDENTIFIER - mappingIndexName('').length} characters)`);
    }
    if (name.startsWith(RESERVED_TABLE_PREFIX)) fail(`${owner} would use the table name ${name}; names starting with ${RESERVED_TABLE_PREFIX} are reserved by SQLite`);
    const other = owners.get(name);
    if (other !== undefined) fail(`${other} and ${owner} would both use the name ${name} in every shard database (give one of them another "table")`);
    owners.set(name, owner);
  }
}

/** The embedded default written on first start: the seed's types, mappings and keyspaces. */
export function defaultConfig(options: { shards?: number; pairs?: number; hostNames?: DefaultHostNames } = {}): ConfigInput {
  const shardMap = defaultShardMapJson(options);
  const hosts: Record<string, { dir?: string }> = {};
  for (const h of ShardMap.fromJSON(shardMap).hostNames()) hosts[h] = {};
  return {
    storage: { backend: 'sqlite', dir: 'hosts', maxOpenShards: 256 },
    hosts,
    shardMap,
    topologyStore: { kind: 'file', path: 'topology.json' },
    schema: {
      types: [
        { name: 'pin', id: 1 },
        { name: 'board', id: 2 },
        { name: 'user', id: 3 },
        { name: 'comment', id: 4 },
      ],
      mappings: [
        { name: 'board_has_pins', from: 'board', to: 'pin' },
        { name: 'pin_owned_by_board', from: 'pin', to: 'board' },
        { name: 'user_has_boards', from: 'user', to: 'board' },
        { name: 'user_likes_pins', from: 'user', to: 'pin' },
        { name: 'pin_liked_by_user', from: 'pin', to: 'user' },
        { name: 'user_follows_user', from: 'user', to: 'user' },
      ],
      keyspaces: ['email', 'username', 'ip'],
    },
  };
}
