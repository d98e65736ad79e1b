export { ShardKit, type ShardKitOptions, type OpenOptions } from './shard-kit.js';
export { KitObject } from './kit-object.js';
export { mergePatch } from './merge-patch.js';
export { encodeCursor, decodeCursor, type CursorList } from './cursor-codec.js';
export { createBackend, type BackendFactoryOptions } from './backend-factory.js';
export type * from './types.js';
export type * from './typed-schema.js';
export { type ShardStats, type ShardStatsOptions, type ShardStatsRange } from './shard-stats.js';
export { MAX_CREATE_MANY } from './objects.js';
