import { SqliteMoveEngine, type SqliteMoveEngineOptions } from './sqlite-move-engine.js';

export { compareFiles, type SqliteMoveEngine, type SqliteMoveEngineOptions } from './sqlite-move-engine.js';

/** The embedded engine's move engine (shard files copied under the freeze). */
export function createSqliteMoveEngine(options: SqliteMoveEngineOptions): SqliteMoveEngine {
  return new SqliteMoveEngine(options);
}
