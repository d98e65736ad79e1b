import type { ShardMap } from './shard-map.js';

export type TopologyListener = (map: ShardMap) => void;

interface Subscription {
  fn: TopologyListener;
  /** Highest version this listener has seen (or the store's version when it subscribed). */
  after: number;
}

/**
 * Fan-out shared by the topology stores. Maps are delivered one at a time from a queue, so a
 * listener that writes from inside its callback cannot make another listener see a newer map
 * before an older one; anything not newer than what a listener already saw is dropped.
 */
export class VersionListeners {
  private readonly subs = new Set<Subscription>();
  private readonly queue: ShardMap[] = [];
  private draining = false;
  private latest = 0;

  constructor(private readonly onError: (err: unknown) => void = () => {}) {}

  get size(): number {
    return this.subs.size;
  }

  /** Subscribes `fn` to maps newer than `baseline`; returns the unsubscribe function. */
  add(fn: TopologyListener, baseline: number): () => void {
    const sub: Subscription = { fn, after: baseline };
    this.subs.add(sub);
    return () => {
      this.subs.delete(sub);
    };
  }

  /**
   * A store's watch(): subscribes `fn` after `baseline`, calls `start` (idempotent in the
   * store: begin watching the backing store), and returns an unsubscribe that may be called
   * more than once and calls `stop` when the last listener leaves.
   */
  watch(fn: TopologyListener, baseline: number, start: () => void, stop: () => void): () => void {
    const unsubscribe = this.add(fn, baseline);
    start();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      unsubscribe();
      if (this.size === 0) stop();
    };
  }

  /** Offers a map seen in the store; older or already-seen versions are ignored. */
  offer(map: ShardMap): void {
    if (map.version <= this.latest) return;
    this.latest = map.version;
    this.queue.push(map);
    if (this.draining) return;
    this.draining = true;
    try {
      for (let next = this.queue.shift(); next !== undefined; next = this.queue.shift()) {
        for (const sub of [...this.subs]) {
          if (!this.subs.has(sub) || next.version <= sub.after) continue;
          sub.after = next.version;
          try {
            sub.fn(next);
          } catch (err) {
            this.onError(err);
          }
        }
      }
    } finally {
      this.draining = false;
    }
  }

  clear(): void {
    this.subs.clear();
    this.queue.length = 0;
  }
}
