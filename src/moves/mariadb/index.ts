import { MariadbCopyMoveEngine } from './copy-engine.js';
import type { MariadbMoveEngine, MariadbMoveEngineOptions } from './engine-base.js';
import { MariadbReplicatedMoveEngine } from './replicated-engine.js';

export type { MariadbMoveEngine, MariadbMoveEngineOptions } from './engine-base.js';
export { FENCE_DOMAIN_ID } from './replicated-engine.js';
export { movedDatabaseName } from './names.js';
export { moveAdmin, type HostAccess, type MoveAdmin } from './move-admin.js';
export { dumpCopy, type DumpAdmin, type DumpCopyOptions } from './dump-copy.js';

/**
 * The MariaDB move engine for these options: with admin access, the replicated one (dump + GTID
 * replication before the freeze, lock fence); without, the one that copies under the freeze.
 */
export function createMariadbMoveEngine(options: MariadbMoveEngineOptions): MariadbMoveEngine {
  const admin = options.admin;
  return admin !== undefined ? new MariadbReplicatedMoveEngine({ ...options, admin }) : new MariadbCopyMoveEngine(options);
}
