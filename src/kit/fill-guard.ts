/**
 * Closes the fill-after-invalidate race inside one process. A reader that missed takes a token
 * before it reads the backend; a write that commits records the keys it invalidates; the
 * reader fills only keys nobody invalidated since its token. Without it, a reader could read
 * the old row, lose the CPU while a write commits and deletes the key, then put the old row
 * back for a whole TTL. (Across processes nothing can see the other's invalidations: the TTL
 * bounds that case, see docs/caching.md.)
 *
 * It relies on the cache client sending commands in the order they were issued (one ordered
 * connection per server: ioredis and memjs both do): a fill that passes the check is sent
 * before any later invalidation's delete, so the delete wins.
 */
export class FillGuard {
  private seq = 0;
  private readers = 0;
  /** Sequence number of each key's last invalidation; kept only while a reader is in flight. */
  private readonly invalidated = new Map<string, number>();
  /** Readers whose token is below this fill nothing (set when the map grew too large). */
  private floor = 0;

  constructor(private readonly maxTracked = 10_000) {}

  begin(): number {
    this.readers++;
    return this.seq;
  }

  /** Ends a read: the keys of `keys` that may be filled (all of them unless invalidated meanwhile). */
  end(token: number, keys: readonly string[]): boolean[] {
    const ok = keys.map((k) => token >= this.floor && (this.invalidated.get(k) ?? -1) <= token);
    this.release();
    return ok;
  }

  /** Ends a read that fills nothing (a hit, or a backend failure). */
  release(): void {
    if (--this.readers === 0) this.invalidated.clear();
  }

  invalidate(keys: readonly string[]): void {
    this.seq++;
    if (this.readers === 0) return;
    if (this.invalidated.size + keys.length > this.maxTracked) {
      // Under endless overlapping reads the map would only grow: forget it and fail every
      // fill of the readers in flight instead (they only lose a cache fill).
      this.invalidated.clear();
      this.floor = this.seq;
      return;
    }
    for (const k of keys) this.invalidated.set(k, this.seq);
  }
}
