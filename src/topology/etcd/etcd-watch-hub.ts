import type { Etcd3, IWatchResponse, Watcher } from 'etcd3';

/** One store's handlers for the watch it shares (each keeps its own state, map and listeners). */
export interface WatchHubMember {
  data(res: IWatchResponse): void;
  /** The watch is (re)established: read once, so whatever happened while it was down is caught up. */
  connected(): void;
  disconnected(err: unknown): void;
  /** The server cancelled the watch (its revision compacted away): forget the deltas; a new watch follows. */
  cancelled(err: unknown): void;
}

/** Hubs by client, then by watched span: the stores of a process sharing a client share its watch. */
const hubs = new WeakMap<object, Map<string, EtcdWatchHub>>();

/**
 * One etcd watch of the map's span per client, shared by every store of the process that uses
 * that client (#30: 2,000 services, 100 per process in the bench, or a service with many kits).
 * Without it each store had its own watch on the shared stream, so etcd encoded and sent each
 * change once per store and the process decoded it once per store: with the hub etcd sends it once
 * per process and gRPC decodes it once. Each store still applies it to its own map and calls its
 * own listeners: sharing stops at the decoded watch response.
 */
export class EtcdWatchHub {
  private readonly members = new Set<WatchHubMember>();
  private watcher: Watcher | undefined;
  private live = false;
  private restartTimer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly client: Etcd3,
    private readonly start: string,
    private readonly end: string,
    private readonly retryMs: number,
    private readonly forget: () => void,
  ) {}

  /** Adds `member` to the client's watch of [start, end), opening it for the first; returns leave(). */
  static join(client: Etcd3, start: string, end: string, retryMs: number, member: WatchHubMember): () => void {
    let byClient = hubs.get(client);
    if (byClient === undefined) hubs.set(client, (byClient = new Map()));
    const span = `${start}\u0000${end}`;
    let hub = byClient.get(span);
    if (hub === undefined) {
      const map = byClient;
      hub = new EtcdWatchHub(client, start, end, retryMs, () => map.delete(span));
      byClient.set(span, hub);
    }
    return hub.add(member);
  }

  /** How many stores share this client's watch of [start, end) (0 when none is open). */
  static members(client: object, start: string, end: string): number {
    return hubs.get(client)?.get(`${start}\u0000${end}`)?.members.size ?? 0;
  }

  private add(member: WatchHubMember): () => void {
    this.members.add(member);
    if (this.watcher === undefined && this.restartTimer === undefined) this.open();
    // Joining a watch already up: no 'connected' will come for this member, so it reads now.
    else if (this.live) queueMicrotask(() => this.members.has(member) && member.connected());
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.members.delete(member);
      if (this.members.size > 0) return;
      this.forget();
      this.close();
    };
  }

  private close(): void {
    if (this.restartTimer !== undefined) clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    const w = this.watcher;
    this.watcher = undefined;
    this.live = false;
    // Its handlers check that it is still the current watcher, so late events are dropped.
    if (w !== undefined) void w.cancel().catch(() => {});
  }

  private open(): void {
    // No start revision: every member reads the map when the watch connects, and later events come on the stream.
    const w = this.client.watch().inRange({ start: this.start, end: this.end }).watcher();
    this.watcher = w;
    // One response carries one transaction's events (or a few): each member applies them as a delta.
    w.on('data', (res) => {
      if (this.watcher !== w) return;
      for (const m of [...this.members]) m.data(res);
    });
    w.on('connected', () => {
      if (this.watcher !== w) return;
      this.live = true;
      for (const m of [...this.members]) m.connected();
    });
    w.on('disconnected', (err) => {
      if (this.watcher !== w) return;
      this.live = false;
      for (const m of [...this.members]) m.disconnected(err);
    });
    // Always listened to: an 'error' without a listener would throw out of the client.
    w.on('error', (err) => {
      if (this.watcher !== w) return;
      this.watcher = undefined;
      this.live = false;
      void w.cancel().catch(() => {});
      for (const m of [...this.members]) m.cancelled(err);
      if (this.members.size === 0) return;
      this.restartTimer = setTimeout(() => {
        this.restartTimer = undefined;
        if (this.members.size > 0 && this.watcher === undefined) this.open();
      }, this.retryMs);
      this.restartTimer.unref();
    });
  }
}
