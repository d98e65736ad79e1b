import type { MoveProgress, ShardMap } from '../shard-map.js';
import type { ServiceHeartbeat } from '../service-records.js';
import type { TopologyStore } from '../topology-store.js';
import { checkExpectedVersion, closedError, conflict, toShardMap } from '../store-args.js';
import { VersionListeners, type TopologyListener } from '../version-listeners.js';
import { moveProgressKind } from '../move-progress-records.js';
import { MemoryRecordSet } from '../record-set.js';
import { serviceHeartbeatKind } from '../service-records.js';
import { healStatusKind, type HealStatus } from '../heal-records.js';

/**
 * The state several MemoryTopologyStore instances can share, standing in for one ZooKeeper/etcd
 * key seen by many services in one process (tests, embedded use).
 */
export class MemoryTopologyBacking {
  current: ShardMap | undefined;
  readonly progress = new MemoryRecordSet(moveProgressKind);
  readonly services = new MemoryRecordSet(serviceHeartbeatKind);
  readonly heal = new MemoryRecordSet(healStatusKind);
  readonly stores = new Set<MemoryTopologyStore>();

  constructor(initial?: ShardMap) {
    this.current = initial === undefined ? undefined : initial.withVersion(Math.max(1, initial.version));
  }

  get version(): number {
    return this.current?.version ?? 0;
  }
}

export interface MemoryTopologyStoreOptions {
  /** Share state with other instances; a fresh backing when omitted. */
  backing?: MemoryTopologyBacking;
  /** Called when a watch listener throws; listener errors never reach the writer. */
  onListenerError?: (err: unknown) => void;
}

/** A real (not mock) TopologyStore kept in memory: CAS on the version, watch in version order. */
export class MemoryTopologyStore implements TopologyStore {
  readonly backing: MemoryTopologyBacking;
  private readonly listeners: VersionListeners;
  private closed = false;

  constructor(options: MemoryTopologyStoreOptions = {}) {
    this.backing = options.backing ?? new MemoryTopologyBacking();
    this.listeners = new VersionListeners(options.onListenerError);
    this.backing.stores.add(this);
  }

  get progress(): MemoryRecordSet<MoveProgress> {
    return this.backing.progress;
  }

  get services(): MemoryRecordSet<ServiceHeartbeat> {
    return this.backing.services;
  }

  get heal(): MemoryRecordSet<HealStatus> {
    return this.backing.heal;
  }

  async read(): Promise<ShardMap | undefined> {
    if (this.closed) throw closedError();
    return this.backing.current;
  }

  async write(next: ShardMap, expectedVersion: number): Promise<ShardMap> {
    if (this.closed) throw closedError();
    const expected = checkExpectedVersion(expectedVersion);
    const map = toShardMap(next);
    // No await between the check and the store: the compare-and-set is atomic in one process.
    const actual = this.backing.version;
    if (actual !== expected) throw conflict(expected, actual);
    const stored = map.withVersion(expected + 1);
    this.backing.current = stored;
    for (const store of [...this.backing.stores]) store.listeners.offer(stored);
    return stored;
  }

  watch(listener: TopologyListener): () => void {
    if (this.closed) throw closedError();
    return this.listeners.add(listener, this.backing.version);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    this.backing.stores.delete(this);
  }
}
