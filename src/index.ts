export { ShardKitError, ERROR_CODES, isShardKitError, type ErrorCode } from './errors.js';
export * from './ids/index.js';
export { ShardMap, defaultShardMapJson, shardDatabaseName, type ShardMapJson, type ShardRange, type ShardLocation } from './topology/shard-map.js';
export type { TopologyStore } from './topology/topology-store.js';
export { MemoryTopologyStore, MemoryTopologyBacking, FileTopologyStore, EtcdTopologyStore, createTopologyStore, type MemoryTopologyStoreOptions, type FileTopologyStoreOptions, type EtcdTopologyStoreOptions, type TopologyStoreSpec, type TopologyListener, changeShardMap, promoteSlave, moveShards, setOpen, diffShardMaps, formatShardMapDiff, type ChangeShardMapOptions, type ShardMapChange, type ShardSpan, type HostPair } from './topology/index.js';
export type * from './storage/shard-backend.js';
export { SqliteBackend, type SqliteBackendOptions } from './storage/sqlite/index.js';
export { PostgresBackend, postgresBackendFromConfig, type PostgresBackendOptions, type PostgresHostAddress, type PostgresStorageOptions } from './storage/postgres/index.js';
export { MysqlBackend, mysqlBackendFromConfig, type MysqlBackendOptions, type MysqlHostAddress, type MysqlStorageOptions } from './storage/mysql/index.js';
export { ShardKit, KitObject, mergePatch, type ShardKitOptions, type OpenOptions, type ShardObject, type JsonObject, type JsonValue, type CreateOptions, type UpdateOptions, type DeleteOptions, type ListOptions, type ListOrder, type MappingEntry, type MappingListPage, type JoinPage, type ShardErrorEvent } from './kit/index.js';
export { buildApp, type BuildAppOptions, type RoutePlugin } from './http/app.js';
export { parseConfig, loadConfigFile, defaultConfig, resolveSchema, type ShardKitConfig, type ConfigInput } from './config/config.js';
export { WideColumnStore, WideColumnSnapshot, rocksDbDriver, type WideColumnEngine, type WideColumnEngineDriver, compact as compactWideColumn, backup as backupWideColumn, restore as restoreWideColumn, exportParquet, openWideColumnService, type WideColumnStoreOptions, type WideColumnLimits, type DatasetConfig, type DatasetSettings, type GetRowOptions, type GetRowRequest, type PutItem, type PutRowRequest, type PutRowResult, type DeleteRowRequest, type RowResult, type ColumnCells, type Cell, type CompactionReport, type BackupManifest, type ExportReport } from './widecolumn/index.js';
export { TicketClient, createTicketClient, initTicketServers, resolveTickets, ticketsConfigSchema, type TicketMode, type TicketClientOptions, type TicketsConfig, type TicketsConfigInput, type ResolvedTickets, type TicketInitServerResult } from './tickets/index.js';
export { MemoryCache, createCache, checkMemcachedKey, MAX_TTL_SECONDS, DEFAULT_CACHE_TTL_SECONDS, type Cache, type CacheSpec, type MemoryCacheOptions, type RedisCacheOptions, type MemcachedCacheOptions } from './cache/index.js';
export type { CacheErrorEvent, CacheStats } from './kit/types.js';
export type { KitCacheOptions } from './kit/kit-cache.js';
/** @deprecated renamed KitCacheOptions (src/store became src/kit in 0.1). */
export type { KitCacheOptions as StoreCacheOptions } from './kit/kit-cache.js';
