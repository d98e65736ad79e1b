import type { Etcd3, IKeyValue } from 'etcd3';
import { setTimeout as sleep } from 'node:timers/promises';
import { ShardKitError } from '../../errors.js';
import type { ShardMap } from '../shard-map.js';
import type { TopologyStore } from '../topology-store.js';
import { checkExpectedVersion, closedError, conflict, toShardMap } from '../store-args.js';
import { VersionListeners, type TopologyListener } from '../version-listeners.js';
import { ShardMap as ShardMapClass } from '../shard-map.js';
import { moveProgressKind, type MoveProgressRecords } from '../move-progress-records.js';
import { checkRecordName, parseRecord, recordText, type RecordKind, type RecordSet } from '../record-set.js';
import { serviceHeartbeatKind, type ServiceRecords } from '../service-records.js';
import { healStatusKind, type HealRecords } from '../heal-records.js';
import { hostRecordKind, type HostRecords } from '../host-records.js';
import { EtcdMapKeys, RecordWatchState, snapshotOf, writeRecords } from './etcd-map-records.js';
import type { EtcdSnapshot } from './etcd-snapshot.js';
import { EtcdWatchHub, type WatchHubMember } from './etcd-watch-hub.js';

export const DEFAULT_ETCD_TOPOLOGY_KEY = '/shardkit/topology';

export interface EtcdTopologyStoreOptions {
  /** etcd client URLs, e.g. ['http://127.0.0.1:2379']. */
  endpoints: readonly string[];
  /** The one key holding the map's JSON form. Default /shardkit/topology. */
  key?: string;
  /**
   * Bound on every read and write, connecting included (etcd3 has no working dial timeout of its
   * own): past it the call fails with TOPOLOGY_UNAVAILABLE instead of hanging. Default 3000 ms.
   */
  dialTimeoutMs?: number;
  /** Longest pause between reconnect attempts (connection and watch stream) while etcd is down. Default 1000 ms. */
  retryMaxMs?: number;
  /** Called when a watch listener throws, a watched value cannot be parsed, or a catch-up read fails. */
  onError?: (err: unknown) => void;
  /**
   * The layout a first write creates: 2, records plus a root (#30, the default), or 1, today's
   * single document. A store already holding a map keeps its layout until `upgrade()`.
   */
  layout?: 1 | 2;
  /**
   * An etcd3 client (an `Etcd3` of the etcd3 package) to use instead of one of its own (the caller keeps it open and closes it):
   * stores in one process then share one connection, and their watches one gRPC stream, each
   * still its own watch with its own state (bench/topology-subscribers.ts: 100 subscribers a process).
   */
  // Typed loosely on purpose: the published types must not need etcd3's (an optional peer).
  client?: object;
}

type EtcdModule = typeof import('etcd3');
type CockatielModule = typeof import('cockatiel');

/**
 * The shard map under one etcd key (Pinterest's ZooKeeper node), for several machines.
 *
 * Compare-and-set compares the key's etcd `mod_revision` rather than its value: the shardkit
 * version inside the JSON decides whether the caller's expectedVersion is current, and the
 * mod_revision read alongside it guards the put, so a writer that slipped in between (even one
 * writing the same version by hand) makes the transaction fail instead of being overwritten.
 * Comparing on the value would need the exact stored bytes and is no stronger. A missing key has
 * mod_revision 0, which makes "expectedVersion 0 = key absent" the same comparison.
 *
 * The client (etcd3, gRPC) is loaded and connected on first use, so constructing the store never
 * fails or blocks and nothing loads etcd3 unless a config names this store.
 */
export class EtcdTopologyStore implements TopologyStore {
  readonly key: string;
  readonly endpoints: readonly string[];
  /**
   * Move progress, one key per move under `<key>/progress/`: services watch only the map's key,
   * so a progress write reaches nobody but the readers that ask for it.
   */
  readonly progress: MoveProgressRecords;
  /** Service heartbeats, one key per service under `<key>/services/`. */
  readonly services: ServiceRecords;
  /**
   * Heal supervisors' status, one key per supervisor under `<key>/supervisors/`: like the other
   * record prefixes it sorts after the watched span [key, key + '/n') (a `<key>/heal/` would be
   * inside it and wake every service's watch on every round).
   */
  readonly heal: HealRecords;
  /** Database hosts, one key per host under `<key>/servers/` (after the watched span too). */
  readonly hosts: HostRecords;
  private readonly timeoutMs: number;
  private readonly keys: EtcdMapKeys;
  private readonly layout: 1 | 2;
  private watchState: RecordWatchState;
  private readonly retryMaxMs: number;
  private etcd: EtcdModule | undefined;
  private readonly onError: (err: unknown) => void;
  private readonly listeners: VersionListeners;
  private clientPromise: Promise<Etcd3> | undefined;
  private readonly sharedClient: Etcd3 | undefined;
  /** This store's membership of its client's shared watch (etcd-watch-hub.ts), and how to leave it. */
  private member: WatchHubMember | undefined;
  private leave: (() => void) | undefined;
  private watching = false;
  private restartTimer: NodeJS.Timeout | undefined;
  /** Highest map version this instance has seen: the baseline of a new listener. */
  private known = 0;
  /** Highest etcd revision seen, so a watch starts right after what this instance already read. */
  private revision = 0;
  private closed = false;

  constructor(options: EtcdTopologyStoreOptions) {
    if (!Array.isArray(options?.endpoints) || options.endpoints.length === 0) {
      throw new ShardKitError('INVALID_ARGUMENT', 'EtcdTopologyStore needs at least one endpoint');
    }
    this.endpoints = [...options.endpoints];
    this.key = options.key ?? DEFAULT_ETCD_TOPOLOGY_KEY;
    this.keys = new EtcdMapKeys(this.key);
    this.watchState = new RecordWatchState(this.keys);
    this.layout = options.layout ?? 2;
    this.timeoutMs = options.dialTimeoutMs ?? 3000;
    this.retryMaxMs = options.retryMaxMs ?? 1000;
    this.onError = options.onError ?? (() => {});
    this.sharedClient = options.client as Etcd3 | undefined;
    this.listeners = new VersionListeners(this.onError);
    this.progress = this.recordSet(`${this.key}/progress/`, moveProgressKind);
    this.services = this.recordSet(`${this.key}/services/`, serviceHeartbeatKind);
    this.heal = this.recordSet(`${this.key}/supervisors/`, healStatusKind);
    this.hosts = this.recordSet(`${this.key}/servers/`, hostRecordKind);
  }

  /** Records of one kind, one key each under `prefix` (never a key services watch). */
  private recordSet<T>(prefix: string, kind: RecordKind<T>): RecordSet<T> {
    const open = async () => {
      if (this.closed) throw closedError();
      return this.client();
    };
    return {
      readAll: async () => {
        const client = await open();
        const res = await this.call('read', (options) => client.getAll().prefix(prefix).options(options).exec());
        const out = new Map<string, T>();
        for (const kv of res.kvs) {
          const key = kv.key.toString('utf8');
          out.set(key.slice(prefix.length), parseRecord(kind, kv.value.toString('utf8'), `etcd key ${key}`));
        }
        return out;
      },
      put: async (name, value) => {
        const key = prefix + checkRecordName(kind, name);
        const text = recordText(kind, value, `etcd key ${key}`);
        const client = await open();
        await this.call('write', (options) => client.put(key).value(text).options(options).exec());
      },
      remove: async (name) => {
        const key = prefix + checkRecordName(kind, name);
        const client = await open();
        await this.call('write', (options) => client.delete().key(key).options(options).exec());
      },
    };
  }

  async read(): Promise<ShardMap | undefined> {
    if (this.closed) throw closedError();
    const snap = await this.snapshot();
    return snap.layout === 0 ? undefined : snap.map;
  }

  async write(next: ShardMap, expectedVersion: number): Promise<ShardMap> {
    if (this.closed) throw closedError();
    const expected = checkExpectedVersion(expectedVersion);
    const map = toShardMap(next);
    const stored = map.withVersion(expected + 1);
    const oldText = JSON.stringify(stored.toJSON());
    // Each round either wins, or re-reads and finds the version moved on (VERSION_CONFLICT). Only a
    // value rewritten with the same version (by hand) sends it round again, so a few rounds suffice.
    let sent = 0;
    let ours: string | undefined;
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await this.snapshot();
      // A transaction sent more than once (the connection dropped after etcd applied it, see call)
      // fails its compare against its own put: finding exactly our root means our write landed.
      if (sent > 1 && current.layout !== 0 && current.text === ours) break;
      const actual = current.layout === 0 ? 0 : current.map.version;
      if (actual !== expected) throw conflict(expected, actual);
      if (this.closed) throw closedError();
      const client = await this.client();
      sent = 0;
      let won: boolean;
      if (current.layout === 1 || (current.layout === 0 && this.layout === 1)) {
        ours = oldText;
        const txn = await this.call('write', (options) => (sent++, client).if(this.key, 'Mod', '==', current.modRevision).options(options).then(client.put(this.key).value(oldText)).commit());
        won = txn.succeeded;
      } else {
        const out = await this.call('write', (options) => (sent++, writeRecords(client, this.keys, current, stored, options)));
        ours = out.rootText;
        won = out.won;
      }
      if (won) break;
      if (attempt === 4) throw conflict(expected, (await this.read())?.version ?? 0);
    }
    this.offer(stored);
    return stored;
  }

  /**
   * Converts a single-document map (layout 1) to records and a root (layout 2) in place, at the
   * same version, after copying the document to `<key>/v1-copy`. Idempotent: a store already in
   * layout 2 (or empty) is left as it is. The flip is one compare-and-set on the document's
   * revision, so an operator's write in between makes it VERSION_CONFLICT, never a lost edit.
   */
  async upgrade(): Promise<{ upgraded: boolean; layout: 0 | 1 | 2; version: number; records?: number; copyKey?: string }> {
    if (this.closed) throw closedError();
    const current = await this.snapshot();
    if (current.layout !== 1) return { upgraded: false, layout: current.layout, version: current.layout === 0 ? 0 : current.map.version, ...(current.layout === 2 ? { records: current.root.records } : {}) };
    const client = await this.client();
    const copyKey = `${this.key}/v1-copy`;
    await this.call('write', (options) => client.put(copyKey).value(current.text).options(options).exec());
    const out = await this.call('write', (options) => writeRecords(client, this.keys, current, current.map, options));
    if (!out.won) throw conflict(current.map.version, (await this.read())?.version ?? 0);
    const after = await this.snapshot();
    return { upgraded: true, layout: 2, version: current.map.version, copyKey, ...(after.layout === 2 ? { records: after.root.records } : {}) };
  }

  watch(listener: TopologyListener): () => void {
    if (this.closed) throw closedError();
    return this.listeners.watch(listener, this.known, () => this.startWatching(), () => this.stopWatching());
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listeners.clear();
    this.stopWatching();
    const pending = this.clientPromise;
    this.clientPromise = undefined;
    if (pending !== undefined && this.sharedClient === undefined) {
      try {
        (await pending).close();
      } catch {
        // The client never loaded: nothing to close.
      }
    }
  }

  /** The root and records (or today's single document) at one etcd revision. */
  async snapshot(): Promise<EtcdSnapshot> {
    const client = await this.client();
    const res = await this.call('read', (options) => client.getAll().inRange({ start: this.key, end: this.keys.watchEnd }).options(options).exec());
    this.seeRevision(res.header.revision);
    const snap = snapshotOf(this.keys, res.kvs, Number(res.header.revision), (kv) => this.parse(kv));
    if (snap.layout !== 0) this.known = Math.max(this.known, snap.map.version);
    return snap;
  }

  /** The stored value; anything wrong is INVALID_CONFIG naming the key (and is never overwritten). */
  private parse(kv: IKeyValue): ShardMap {
    const where = `etcd key ${this.key} (${this.endpoints.join(',')})`;
    let json: unknown;
    try {
      json = JSON.parse(kv.value.toString('utf8'));
    } catch (err) {
      throw new ShardKitError('INVALID_CONFIG', `topology in ${where} is not valid JSON: ${(err as Error).message}`);
    }
    try {
      return ShardMapClass.fromJSON(json);
    } catch (err) {
      if (err instanceof ShardKitError) throw new ShardKitError(err.code, `topology in ${where}: ${err.message}`, { cause: err });
      throw err;
    }
  }

  private offer(map: ShardMap): void {
    if (this.closed) return;
    this.known = Math.max(this.known, map.version);
    this.listeners.offer(map);
  }

  private seeRevision(revision: string | undefined): void {
    const r = Number(revision ?? 0);
    if (Number.isSafeInteger(r) && r > this.revision) this.revision = r;
  }

  /**
   * Runs one etcd call within `dialTimeoutMs`. While the connection is down (gRPC UNAVAILABLE, e.g.
   * etcd restarting) the call is retried until that deadline, so a brief outage costs latency rather
   * than an error; gRPC enforces each attempt's deadline, and the timer is a backstop so nothing in
   * the client (a stuck connect) can make a caller wait forever. Retrying a write is safe: its
   * transaction compares the mod_revision, and write() recognises its own value if it did land.
   */
  private async call<T>(what: 'read' | 'write', fn: (options: { deadline: number }) => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.timeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const backstop = new Promise<never>((_, reject) => {
      // Not unref'd: a caller awaiting this (a CLI) must get its answer, not a silent exit.
      timer = setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs + 500);
    });
    const attempt = async (): Promise<T> => {
      for (let pause = 25; ; pause = Math.min(pause * 2, 200)) {
        try {
          return await fn({ deadline });
        } catch (err) {
          const transient = this.etcd !== undefined && err instanceof this.etcd.GRPCUnavailableError;
          if (!transient || this.closed || Date.now() + pause >= deadline) throw err;
          await sleep(pause);
        }
      }
    };
    try {
      return await Promise.race([attempt(), backstop]);
    } catch (err) {
      if (err instanceof ShardKitError) throw err;
      if (this.closed) throw closedError();
      const outcome = what === 'write' ? ' (the write may or may not have been applied: read before retrying)' : '';
      throw new ShardKitError(
        'TOPOLOGY_UNAVAILABLE',
        `etcd topology store ${this.endpoints.join(',')} key ${this.key}: ${what} failed: ${(err as Error)?.message ?? String(err)}${outcome}`,
        { cause: err },
      );
    } finally {
      clearTimeout(timer);
    }
  }

  private client(): Promise<Etcd3> {
    this.clientPromise ??= this.connect();
    return this.clientPromise;
  }

  private async connect(): Promise<Etcd3> {
    let etcd: EtcdModule;
    let cockatiel: CockatielModule;
    try {
      [etcd, cockatiel] = await Promise.all([import('etcd3'), import('cockatiel')]);
    } catch (err) {
      this.clientPromise = undefined;
      throw new ShardKitError('MISSING_DEPENDENCY', 'the etcd topology store needs the npm package etcd3, which is not installed: npm install etcd3', { cause: err });
    }
    if (this.closed) throw closedError();
    this.etcd = etcd;
    if (this.sharedClient !== undefined) return this.sharedClient;
    return new etcd.Etcd3({
      hosts: [...this.endpoints],
      // gRPC's reconnect backoff grows to 120 s by default: calls would fail long after etcd is back.
      grpcOptions: { 'grpc.initial_reconnect_backoff_ms': 50, 'grpc.max_reconnect_backoff_ms': this.retryMaxMs },
      faultHandling: {
        // etcd3's default circuit breaker keeps failing calls for 5 s after etcd comes back, and its
        // retries stretch a call past the deadline; callers retry on TOPOLOGY_UNAVAILABLE instead.
        host: () => cockatiel.noop,
        global: cockatiel.noop,
        // The default backoff grows to 30 s, which would leave watchers deaf long after a restart.
        // etcd3's options type says IBackoff, but its WatchManager calls .next() on it: a factory.
        watchBackoff: new cockatiel.ExponentialBackoff({ initialDelay: 50, maxDelay: this.retryMaxMs }) as unknown as import('cockatiel').IBackoff<unknown>,
      },
    });
  }

  private startWatching(): void {
    if (this.watching || this.closed) return;
    this.watching = true;
    void this.openWatcher();
  }

  private stopWatching(): void {
    this.watching = false;
    if (this.restartTimer !== undefined) clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    const leave = this.leave;
    this.member = undefined;
    this.leave = undefined;
    leave?.();
  }

  private async openWatcher(): Promise<void> {
    let client: Etcd3;
    try {
      client = await this.client();
    } catch (err) {
      this.onError(err);
      this.scheduleRestart();
      return;
    }
    // Stopped meanwhile, or a quick stop/start already joined while this waited for the client.
    if (!this.watching || this.closed || this.member !== undefined) return;
    // The stores sharing this client share one watch of the span (etcd sends each change once per
    // process); each applies the responses to its own state. A late response to a store that
    // left is dropped by the identity check.
    const member: WatchHubMember = {
      data: (res) => {
        if (this.member !== member) return;
        this.seeRevision(res.header.revision);
        let out: ShardMap[] | 'resync';
        try {
          out = this.watchState.apply(res.events.map((e) => ({ type: e.type === 'Delete' ? 'delete' : 'put', kv: e.kv })), (kv) => this.parse(kv));
        } catch (err) {
          this.onError(err);
          return;
        }
        if (out === 'resync') void this.catchUp();
        else for (const map of out) this.offer(map);
      },
      // Every (re)connect: read once, so whatever happened while the stream was down is caught up.
      connected: () => {
        if (this.member === member) void this.catchUp();
      },
      disconnected: (err) => {
        if (this.member === member) this.onError(err);
      },
      // The server cancelled the watch (e.g. its start revision was compacted away): the hub opens
      // a new one, and its first read gives this store a fresh base.
      cancelled: (err) => {
        if (this.member !== member) return;
        this.onError(err);
        this.revision = 0;
        this.watchState = new RecordWatchState(this.keys);
      },
    };
    this.member = member;
    this.leave = EtcdWatchHub.join(client, this.key, this.keys.watchEnd, this.retryMaxMs, member);
  }

  private scheduleRestart(): void {
    if (!this.watching || this.closed || this.restartTimer !== undefined) return;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.watching && !this.closed && this.member === undefined) void this.openWatcher();
    }, this.retryMaxMs);
    this.restartTimer.unref();
  }

  private async catchUp(): Promise<void> {
    if (this.closed || !this.watching) return;
    try {
      const snap = await this.snapshot();
      this.watchState.reset(snap);
      if (snap.layout !== 0) this.offer(snap.map);
    } catch (err) {
      this.onError(err);
    }
  }
}
