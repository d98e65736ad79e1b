/**
 * Server timestamps and write-log sequence numbers.
 *
 * Server timestamps are the clock's time (issue 15, defect 5). The only exception: cells of one
 * row that would collide within one millisecond. A row's server timestamps strictly increase
 * inside this process (a second put in the same ms gets the next ms), so two puts never share a
 * (column, timestamp) key and never lose a version. An explicit timestamp, even one ahead of the
 * clock, does not move later server timestamps; neither does a restart. A server-stamped cell
 * that meets an explicit cell of the same column and ms replaces it, as any later write with the
 * same timestamp does (docs/widecolumn.md, semantics table).
 *
 * Write-log records (write-log.ts) need a key that is unique within their row for ever, so their
 * sequence numbers keep the old guarantees: strictly increasing per row, and after a reopen above
 * every sequence number ever written (a persisted floor, renewed inside the write batch that
 * crosses it). They are never shown to anyone, so running ahead of the clock costs nothing.
 * Rows whose last value is already behind the clock are forgotten, so memory stays small.
 */
export class TimestampOracle {
  private readonly lastServer = new Map<string, number>();
  private readonly lastSeq = new Map<string, number>();
  private lastNow = 0;
  /** Highest floor known to be on disk. */
  private floorDurable: number;
  /** Highest floor included in a batch, durable or not. */
  private floorPending: number;
  private readonly floorAtOpen: number;

  constructor(
    private readonly clock: () => number,
    private readonly leaseMs: number,
    floorAtOpen: number,
  ) {
    this.floorDurable = floorAtOpen;
    this.floorPending = floorAtOpen;
    this.floorAtOpen = floorAtOpen;
  }

  /** The clock, never going backwards inside this process. */
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
    return this.take(this.lastServer, rowId, count, this.now());
  }

  /** A write-log sequence number for one row, unique for ever within the row. */
  nextSeq(rowId: string): number {
    return this.take(this.lastSeq, rowId, 1, Math.max(this.now(), this.floorAtOpen));
  }

  private take(last: Map<string, number>, rowId: string, count: number, now: number): number {
    const prev = last.get(rowId);
    const base = prev !== undefined && prev >= now ? prev + 1 : now;
    last.set(rowId, base + count - 1);
    if (last.size > 10_000) for (const [k, v] of last) if (v < now) last.delete(k);
    return base;
  }

  /**
   * For a batch whose highest write-log sequence number is `maxSeq`: the floor value to write
   * with it, or null when an already durable floor covers it.
   */
  floorFor(maxSeq: number): number | null {
    if (maxSeq < this.floorDurable) return null;
    const floor = Math.max(this.floorPending, maxSeq + this.leaseMs + 1);
    this.floorPending = floor;
    return floor;
  }

  floorWritten(floor: number): void {
    if (floor > this.floorDurable) this.floorDurable = floor;
  }
}
