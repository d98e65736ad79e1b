import { MariadbCopyMoveEngine } from './copy-engine.js';
import type { MariadbMoveEngine, MariadbMoveEngineOptions } from './engine-base.js';
import { MariadbReplicatedMoveEngine } from './replicated-engine.js';
import type { RestoreInTarget } from '../restore-in-engine.js';

export type { MariadbMoveEngine, MariadbMoveEngineOptions } from './engine-base.js';
export { FENCE_DOMAIN_ID } from './replicated-engine.js';
export { MariadbCopyMoveEngine } from './copy-engine.js';
export { movedDatabaseName } from './names.js';
export { moveAdmin, type HostAccess, type MoveAdmin } from './move-admin.js';
export { dumpCopy, type DumpAdmin, type DumpCopyOptions } from './dump-copy.js';
export { tsvCopy } from './tsv-copy.js';
export { autoIncrements } from './auto-increment.js';

/**
 * The MariaDB move engine for these options: with admin access, the replicated one (dump + GTID
 * replication before the freeze, lock fence); without, the one that copies under the freeze.
 */
export function createMariadbMoveEngine(options: MariadbMoveEngineOptions): MariadbMoveEngine {
  const admin = options.admin;
  return admin !== undefined ? new MariadbReplicatedMoveEngine({ ...options, admin }) : new MariadbCopyMoveEngine(options);
}

/**
 * The MariaDB parts of a restore-in move (src/moves/restore-in-engine.ts): the engine that copies
 * under the freeze supplies the checks, the RENAME fence, undo and drop; the copy itself comes
 * from the backup.
 */
export function mariadbRestoreInTarget(options: MariadbMoveEngineOptions): RestoreInTarget {
  const inner = new MariadbCopyMoveEngine(options);
  return {
    inner,
    checkTarget: async (move) => {
      await inner.prepare(move);
    },
    clearTarget: (move) => inner.clearTarget(move),
    raiseIds: (move) => inner.raiseIdsPastFenced(move),
  };
}
