export { ShardKitError, ERROR_CODES, isShardKitError, type ErrorCode } from './errors.js';
export * from './ids/index.js';
export { ShardMap, defaultShardMapJson, shardDatabaseName, type ShardMapJson, type ShardRange, type ShardLocation } from './topology/shard-map.js';
export type { TopologyStore } from './topology/topology-store.js';
export { MemoryTopologyStore, MemoryTopologyBacking, FileTopologyStore, createTopologyStore, type MemoryTopologyStoreOptions, type FileTopologyStoreOptions, type TopologyStoreSpec, type TopologyListener } from './topology/index.js';
export type * from './storage/shard-backend.js';
export { parseConfig, loadConfigFile, defaultConfig, resolveSchema, type ShardKitConfig, type ConfigInput } from './config/config.js';
export { TicketClient, createTicketClient, initTicketServers, resolveTickets, ticketsConfigSchema, type TicketMode, type TicketClientOptions, type TicketsConfig, type TicketsConfigInput, type ResolvedTickets, type TicketInitServerResult } from './tickets/index.js';
