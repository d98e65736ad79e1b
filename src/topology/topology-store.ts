import type { ShardMap } from './shard-map.js';
import type { MoveProgressRecords } from './move-progress-records.js';
import type { ServiceRecords } from './service-records.js';
import type { HealRecords } from './heal-records.js';
import type { HostRecords } from './host-records.js';

/**
 * Where the shard map lives (Pinterest: ZooKeeper). A thin interface in the Vitess `conn.go`
 * style: read, compare-and-set write on the version, and watch. Logic lives above it.
 */
export interface TopologyStore {
  /** The current map, or undefined when the store holds none yet. */
  read(): Promise<ShardMap | undefined>;
  /**
   * Writes `next` if the stored version still equals `expectedVersion` (0 when the store is empty);
   * the stored map gets version expectedVersion + 1, which is returned. Otherwise VERSION_CONFLICT.
   */
  write(next: ShardMap, expectedVersion: number): Promise<ShardMap>;
  /** Calls `listener` with every new map (in version order, at least the latest). Returns an unsubscribe function. */
  watch(listener: (map: ShardMap) => void): () => void;
  close(): Promise<void>;
  /**
   * Move progress records beside the map, which services never watch (#30). The three stores
   * have them; a store without them (a test double) simply shows no progress.
   */
  readonly progress?: MoveProgressRecords;
  /**
   * Heartbeats of the running services (#28): which hosts of the map each cannot reach. A move
   * waits for them before it freezes; a store without them (a test double) skips that wait.
   */
  readonly services?: ServiceRecords;
  /** Heal supervisors' status (#31): each pair's state and the masters they cannot reach. */
  readonly heal?: HealRecords;
  /**
   * The database hosts (#28: address, port, role, engine; never secrets). Services read them to
   * reach a pair added after they started; a store without them leaves that to the config file.
   */
  readonly hosts?: HostRecords;
}
