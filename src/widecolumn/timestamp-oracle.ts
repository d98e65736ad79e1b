/**
 * Server timestamps for puts without one.
 *
 * Two guarantees let a server-stamped put overwrite a column's head without reading it:
 * 1. Within this process, a row's server timestamps strictly increase and exceed every explicit
 *    timestamp accepted for that row (`rowMax`), so concurrent puts to one row never share a
 *    (column, timestamp) key and never lose a version.
 * 2. Across restarts, every timestamp ever written is below a persisted floor (a lease renewed
 *    inside the same write batch that crosses it), and after reopening server timestamps start
 *    at that floor even if the wall clock stepped back.
 * Rows whose last timestamp is already behind the clock are forgotten, so memory stays small.
 */
export class TimestampOracle {
  private readonly rowMax = new Map<string, number>();
  private lastNow = 0;
  /** Highest floor known to be on disk. */
  private floorDurable: number;
  /** Highest floor included in a batch, durable or not. */
  private floorPending: number;

  constructor(
    private readonly clock: () => number,
    private readonly leaseMs: number,
    floorAtOpen: number,
  ) {
    this.floorDurable = floorAtOpen;
    this.floorPending = floorAtOpen;
    this.lastNow = floorAtOpen;
  }

  /** The clock, never going backwards and never below the floor found at open. */
  now(): number {
    const t = this.clock();
    if (t > this.lastNow) this.lastNow = t;
    return this.lastNow;
  }

  /** Wall-clock time for TTL checks (the injected clock, unclamped). */
  wallNow(): number {
    return this.clock();
  }

  /** Reserves `count` consecutive server timestamps for one row; returns the first. */
  reserve(rowId: string, count: number): number {
    const now = this.now();
    const last = this.rowMax.get(rowId);
    const base = last !== undefined && last >= now ? last + 1 : now;
    this.rowMax.set(rowId, base + count - 1);
    if (this.rowMax.size > 10_000) this.sweep(now);
    return base;
  }

  /** Records an explicit timestamp so later server timestamps of the row exceed it. */
  observe(rowId: string, ts: number): void {
    const last = this.rowMax.get(rowId);
    if (last === undefined || ts > last) this.rowMax.set(rowId, ts);
  }

  /**
   * For a batch whose highest timestamp is `maxTs`: the floor value to write with it, or null
   * when an already durable floor covers it.
   */
  floorFor(maxTs: number): number | null {
    if (maxTs < this.floorDurable) return null;
    const floor = Math.max(this.floorPending, maxTs + this.leaseMs + 1);
    this.floorPending = floor;
    return floor;
  }

  floorWritten(floor: number): void {
    if (floor > this.floorDurable) this.floorDurable = floor;
  }

  private sweep(now: number): void {
    for (const [k, v] of this.rowMax) if (v < now) this.rowMax.delete(k);
  }
}
