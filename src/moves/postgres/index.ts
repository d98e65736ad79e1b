import { PostgresMoveEngine } from './postgres-move-engine.js';
import type { PostgresMoveEngineOptions } from './engine-base.js';
import type { RestoreInTarget } from '../restore-in-engine.js';

export type { PostgresMoveEngine } from './postgres-move-engine.js';
export { markerSql, POSTGRES_MOVE_MAX_LAG_BYTES, replicationName, type PostgresMoveEngineOptions, type PostgresMoveHost } from './engine-base.js';
export { POSTGRES_SOURCE_STANDBY_MAX_LAG_BYTES } from './source-standby-lag.js';
export { SEQUENCES_SQL, type SequenceRow } from './sequences.js';

/** The PostgreSQL move engine (logical replication before the freeze). */
export function createPostgresMoveEngine(options: PostgresMoveEngineOptions): PostgresMoveEngine {
  return new PostgresMoveEngine(options);
}

/**
 * The PostgreSQL parts of a restore-in move (src/moves/restore-in-engine.ts): the move engine's
 * fence, undo and drop; its catch-up, which without a subscription only sets the target's
 * sequences past the source's; the copy itself comes from the backup.
 */
export function postgresRestoreInTarget(options: PostgresMoveEngineOptions): RestoreInTarget {
  const inner = new PostgresMoveEngine(options);
  return {
    inner,
    checkTarget: (move) => inner.checkRestoreTarget(move),
    clearTarget: (move) => inner.undoTarget(move),
    raiseIds: (move) => inner.catchUp(move),
  };
}
