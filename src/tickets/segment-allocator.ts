import { ShardKitError } from '../errors.js';
import type { SegmentConfig } from './tickets-config.js';
import type { ReservedBlock } from './ticket-server.js';

/** Reserves exactly `count` IDs somewhere (a ticket server chosen round robin) in one round trip. */
export type BlockSource = (count: number) => Promise<ReservedBlock>;

interface Block {
  next: bigint;
  step: bigint;
  remaining: number;
  /** When `remaining` drops to this, the next block is fetched in the background. */
  prefetchBelow: number;
}

/** How long a failed background fetch is not retried from the hot path (a needed fetch still is). */
const PREFETCH_RETRY_MS = 100;

/**
 * Leaf-style segment mode for one sequence: IDs are handed out from an in-memory block; when
 * `prefetchAt` of it is used, the next block is reserved in the background (double buffer), so
 * the database is off the hot path. K (the block size) doubles while blocks last less than
 * `targetMs` and halves when one lasted more than twice that. Whatever is reserved is never
 * handed out twice: a block lives only in this object, so a crash merely skips its rest.
 */
export class SegmentAllocator {
  private current: Block | undefined;
  private buffered: Block | undefined;
  private fetching: Promise<void> | undefined;
  private size: number;
  private lastFetchAt = 0;
  private prefetchBlockedUntil = 0;
  private closed = false;

  private readonly now: () => number;
  private readonly prefetchEnabled: boolean;

  /** `prefetch: false` is for one-shot users (the CLI) that should reserve only what they hand out. */
  constructor(
    private readonly source: BlockSource,
    private readonly config: SegmentConfig,
    options: { now?: () => number; prefetch?: boolean } = {},
  ) {
    this.size = config.initialSize;
    this.now = options.now ?? Date.now;
    this.prefetchEnabled = options.prefetch ?? true;
  }

  /** K that the next fetch will ask for (it grows and shrinks with demand). */
  get blockSize(): number {
    return this.size;
  }

  /** IDs left in memory (current and buffered block). */
  get available(): number {
    return (this.current?.remaining ?? 0) + (this.buffered?.remaining ?? 0);
  }

  next(): Promise<bigint> {
    const c = this.current;
    if (c !== undefined && c.remaining > 0) {
      const id = c.next;
      c.next += c.step;
      c.remaining--;
      if (c.remaining <= c.prefetchBelow && this.buffered === undefined && this.fetching === undefined) this.prefetch();
      return Promise.resolve(id);
    }
    return this.take(1).then((ids) => ids[0]!);
  }

  /** `n` IDs, in the order they were reserved (ascending within each block). */
  async take(n: number): Promise<bigint[]> {
    const out: bigint[] = [];
    while (out.length < n) {
      if (this.closed) throw new ShardKitError('CLOSED', 'the ticket client is closed');
      const c = this.current;
      if (c !== undefined && c.remaining > 0) {
        const k = Math.min(n - out.length, c.remaining);
        let id = c.next;
        for (let i = 0; i < k; i++) {
          out.push(id);
          id += c.step;
        }
        c.next = id;
        c.remaining -= k;
        continue;
      }
      if (this.buffered !== undefined) {
        this.current = this.buffered;
        this.buffered = undefined;
        continue;
      }
      await this.fetch(n - out.length);
    }
    const c = this.current;
    if (c !== undefined && c.remaining <= c.prefetchBelow && this.buffered === undefined && this.fetching === undefined) this.prefetch();
    return out;
  }

  /** Leaf's rule, applied when a fetch starts: it measures how long the previous block lasted. */
  private nextSize(atLeast: number): number {
    const now = this.now();
    if (this.lastFetchAt !== 0) {
      const lasted = now - this.lastFetchAt;
      if (lasted < this.config.targetMs) this.size = Math.min(this.size * 2, this.config.maxSize);
      else if (lasted >= 2 * this.config.targetMs) this.size = Math.max(Math.ceil(this.size / 2), this.config.minSize);
    }
    this.lastFetchAt = now;
    return Math.max(this.size, atLeast);
  }

  /** Starts a fetch unless one is in flight, and waits for it; a failure reaches the caller. */
  private fetch(needed: number): Promise<void> {
    if (this.fetching === undefined) {
      const count = this.nextSize(needed);
      this.fetching = this.source(count)
        .then((block) => {
          if (this.closed) return;
          const b: Block = {
            next: block.first,
            step: block.step,
            remaining: block.count,
            prefetchBelow: block.count - Math.max(1, Math.ceil(block.count * this.config.prefetchAt)),
          };
          if (this.current !== undefined && this.current.remaining > 0) this.buffered = b;
          else this.current = b;
          this.prefetchBlockedUntil = 0;
        })
        .finally(() => {
          this.fetching = undefined;
        });
    }
    return this.fetching;
  }

  private prefetch(): void {
    if (!this.prefetchEnabled) return;
    if (this.prefetchBlockedUntil !== 0 && this.now() < this.prefetchBlockedUntil) return;
    this.fetch(0).catch(() => {
      // The servers are down for now: keep serving what is in memory, try again a little later.
      this.prefetchBlockedUntil = this.now() + PREFETCH_RETRY_MS;
    });
  }

  /** Forgets the blocks in memory (their IDs are skipped, never reissued). */
  close(): void {
    this.closed = true;
    this.current = undefined;
    this.buffered = undefined;
  }
}
