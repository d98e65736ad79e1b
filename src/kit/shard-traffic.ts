/** Highest object shard + 1 (16-bit shard field of the Pinterest layout, SPEC §1). */
const MAX_SHARDS = 65536;

/** Snapshots are taken at most this often (on reads of the counters, never on the call path). */
const SNAPSHOT_EVERY_MS = 2000;

/** The request rate is measured over (about) this long: the oldest snapshot younger than it. */
export const RATE_WINDOW_MS = 10_000;

/** Reads + writes per shard at one moment (one array: half the memory of two). */
interface Snapshot {
  at: number;
  calls: Float64Array;
}

/** Requests per shard in a range, since the kit was made, and their recent rate. */
export interface ShardTrafficView {
  /** Storage calls that read the shard (object gets, mapping lists and counts). */
  reads: number[];
  /** Storage calls that changed it (inserts, updates, deletes, mapping adds and removes). */
  writes: number[];
  /** (reads + writes) per second over the last `rateSeconds`; undefined until two reads of the counters are two seconds apart. */
  rates: number[] | undefined;
  rateSeconds: number | undefined;
}

/**
 * Storage calls routed to each object shard (the heat map of the dashboard, docs/dashboard.md).
 * The call path only increments a slot of a typed array: no lock (one thread), no allocation,
 * no timer. Rates are computed when someone reads the counters, from copies taken then (at most
 * one every two seconds, kept for RATE_WINDOW_MS), so a kit nobody watches pays nothing for them.
 */
export class ShardTraffic {
  /** Wall-clock ms when counting started. */
  readonly since: number;
  private reads: Float64Array;
  private writes: Float64Array;
  private snapshots: Snapshot[] = [];

  constructor(shards = 4096, now = Date.now()) {
    const size = Math.min(MAX_SHARDS, Math.max(1, shards));
    this.reads = new Float64Array(size);
    this.writes = new Float64Array(size);
    this.since = now;
  }

  /** One storage call to `shard` (a valid object shard: the caller located it in the map). */
  count(shard: number, write: boolean): void {
    const a = write ? this.writes : this.reads;
    if (shard < a.length) a[shard]! += 1;
    else this.grow(shard, write);
  }

  private grow(shard: number, write: boolean): void {
    if (!(shard >= 0 && shard < MAX_SHARDS)) return;
    let size = this.reads.length;
    while (size <= shard) size *= 2;
    size = Math.min(MAX_SHARDS, size);
    const widen = (a: Float64Array) => {
      const b = new Float64Array(size);
      b.set(a);
      return b;
    };
    this.reads = widen(this.reads);
    this.writes = widen(this.writes);
    this.count(shard, write);
  }

  /** Totals of all shards since counting started. */
  totals(): { reads: number; writes: number } {
    let reads = 0;
    let writes = 0;
    for (let i = 0; i < this.reads.length; i++) {
      reads += this.reads[i]!;
      writes += this.writes[i]!;
    }
    return { reads, writes };
  }

  /**
   * Shards first..last (inclusive). Takes a snapshot when the last one is SNAPSHOT_EVERY_MS old, and
   * measures rates against the oldest snapshot of the last RATE_WINDOW_MS (at least SNAPSHOT_EVERY_MS old).
   */
  view(first: number, last: number, now = Date.now()): ShardTrafficView {
    const newest = this.snapshots[this.snapshots.length - 1];
    if (newest === undefined || now - newest.at >= SNAPSHOT_EVERY_MS) {
      const calls = this.reads.slice();
      for (let i = 0; i < calls.length; i++) calls[i]! += this.writes[i]!;
      this.snapshots.push({ at: now, calls });
      // Keep the youngest snapshot older than the window too: the next rate may need it.
      while (this.snapshots.length > 1 && now - this.snapshots[1]!.at >= RATE_WINDOW_MS) this.snapshots.shift();
    }
    const base = this.snapshots.find((s) => now - s.at <= RATE_WINDOW_MS && now - s.at >= SNAPSHOT_EVERY_MS)
      ?? this.snapshots.find((s) => now - s.at >= SNAPSHOT_EVERY_MS);
    const n = Math.max(0, last - first + 1);
    const reads = new Array<number>(n);
    const writes = new Array<number>(n);
    for (let i = 0; i < n; i++) {
      reads[i] = this.reads[first + i] ?? 0;
      writes[i] = this.writes[first + i] ?? 0;
    }
    if (base === undefined) return { reads, writes, rates: undefined, rateSeconds: undefined };
    const seconds = (now - base.at) / 1000;
    const rates = new Array<number>(n);
    for (let i = 0; i < n; i++) {
      const before = base.calls[first + i] ?? 0;
      // Two decimals: enough for a colour and a label, and a stable JSON size.
      rates[i] = Math.round(((reads[i]! + writes[i]! - before) / seconds) * 100) / 100;
    }
    return { reads, writes, rates, rateSeconds: Math.round(seconds * 1000) / 1000 };
  }
}
