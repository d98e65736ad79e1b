/**
 * The dev cluster (`shardkit dev ...`): local master/slave pairs of real mariadbd. The code lives
 * in src/ops/dev/, one file per job; this module keeps the old import path working.
 */
export { DevCluster, type DevClusterExtension } from './dev/dev-cluster.js';
export type { DevServer, DevClusterState } from './dev/dev-cluster-state.js';
export type { DevServerStatus, DevServerDetail } from './dev/dev-status.js';
export { devUp, DEFAULT_DEV_PAIRS, DEFAULT_DEV_SHARDS, type DevUpOptions, type DevUpResult } from './dev/dev-up.js';
export { devAddPair, type AddedPair } from './dev/dev-add-pair.js';
export { devClusterStatus, devClusterDown } from './dev/dev-engine.js';
