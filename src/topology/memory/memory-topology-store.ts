import type { MoveProgress, ShardMap } from '../shard-map.js';
import type { ServiceHeartbeat } from '../service-records.js';
import { decodeRecord, encodeRecords, makeRoot, type DecodedRecord } from '../map-records.js';
import { mapFromRecords, patchedMap } from '../record-patch.js';
import type { TopologyStore } from '../topology-store.js';
import { checkExpectedVersion, closedError, conflict, toShardMap } from '../store-args.js';
import { VersionListeners, type TopologyListener } from '../version-listeners.js';
import { moveProgressKind } from '../move-progress-records.js';
import { MemoryRecordSet } from '../record-set.js';
import { serviceHeartbeatKind } from '../service-records.js';
import { healStatusKind, type HealStatus } from '../heal-records.js';
import { hostRecordKind, type HostRecord } from '../host-records.js';

/**
 * The state several MemoryTopologyStore instances can share, standing in for one ZooKeeper/etcd
 * key seen by many services in one process (tests, embedded use).
 */
export class MemoryTopologyBacking {
  current: ShardMap | undefined;
  readonly progress = new MemoryRecordSet(moveProgressKind);
  readonly services = new MemoryRecordSet(serviceHeartbeatKind);
  readonly heal = new MemoryRecordSet(healStatusKind);
  readonly hosts = new MemoryRecordSet(hostRecordKind);
  readonly stores = new Set<MemoryTopologyStore>();
  /** The map as the etcd store keeps it (#30): records by name; a write replaces only those that changed. */
  private records = new Map<string, { text: string; decoded: DecodedRecord }>();

  constructor(initial?: ShardMap) {
    if (initial !== undefined) this.store(initial.withVersion(Math.max(1, initial.version)));
  }

  /**
   * Stores `map` as records and makes `current` from them the way a watcher of the etcd store
   * does: the previous map patched with the records that changed, so the memory store's readers
   * get exactly what the record layout yields (move progress, for one, is never in it).
   */
  store(map: ShardMap): ShardMap {
    const json = map.toJSON();
    const next = encodeRecords(json);
    const records = new Map<string, { text: string; decoded: DecodedRecord }>();
    const before = new Map<string, DecodedRecord | undefined>();
    for (const [name, text] of next) {
      const had = this.records.get(name);
      if (had?.text === text) records.set(name, had);
      else {
        records.set(name, { text, decoded: decodeRecord(name, text, `memory topology record ${name}`) });
        before.set(name, had?.decoded);
      }
    }
    for (const [name, had] of this.records) if (!next.has(name)) before.set(name, had.decoded);
    const root = makeRoot(json, map.version, 'm', next.size);
    const stored = (this.current === undefined ? undefined : patchedMap(this.current, root, records, before)) ?? mapFromRecords(root, records, 'the memory topology store', (n) => `record ${n}`);
    this.records = records;
    this.current = stored;
    return stored;
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

  get hosts(): MemoryRecordSet<HostRecord> {
    return this.backing.hosts;
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
    const stored = this.backing.store(map.withVersion(expected + 1));
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
