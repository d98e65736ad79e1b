import { PostgresMoveEngine } from './postgres-move-engine.js';
import type { PostgresMoveEngineOptions } from './engine-base.js';

export type { PostgresMoveEngine } from './postgres-move-engine.js';
export { POSTGRES_MOVE_MAX_LAG_BYTES, replicationName, type PostgresMoveEngineOptions, type PostgresMoveHost } from './engine-base.js';

/** The PostgreSQL move engine (logical replication before the freeze). */
export function createPostgresMoveEngine(options: PostgresMoveEngineOptions): PostgresMoveEngine {
  return new PostgresMoveEngine(options);
}
