/**
 * In-process shared/exclusive locks per row. The store is the only writer of its RocksDB (the
 * LOCK file guarantees that), so these are enough to keep each column's head record equal to
 * its newest cell:
 * - shared: server-stamped puts (newer than anything in the row) and deletes, which can write
 *   blindly and may run concurrently;
 * - exclusive: puts with explicit timestamps and compaction's head removal, which read the head
 *   before deciding what to write.
 * Per row, holders form a FIFO of groups: a run of shared holders, or one exclusive holder; a
 * group starts when the one before it has finished. An operation only ever waits for groups
 * that existed before it, so multi-row acquisitions cannot deadlock. The common case (no
 * exclusive holder anywhere near) allocates one small object per row and no promise.
 */
export interface Group {
  exclusive: boolean;
  /** Holders in the group (always 1 for an exclusive group). */
  count: number;
  /** Settles when the previous group has finished; null when there was none. */
  ready: Promise<void> | null;
  /** Created on demand by a later group that waits for this one. */
  done: Promise<void> | null;
  resolveDone: (() => void) | null;
}

export interface RowLockHandle {
  readonly ids: readonly string[];
  readonly groups: Group[];
}

function finished(g: Group): Promise<void> {
  if (g.count === 0) return Promise.resolve();
  if (!g.done) g.done = new Promise<void>((resolve) => (g.resolveDone = resolve));
  return g.done;
}

export class RowLocks {
  /** The newest group of each row with holders. */
  private readonly tails = new Map<string, Group>();

  get size(): number {
    return this.tails.size;
  }

  /**
   * Registers the caller in every row (synchronously, so later callers queue behind it) and
   * returns the handle and, when it has to wait, a promise to await first.
   */
  acquire(ids: readonly string[], exclusive: boolean): { handle: RowLockHandle; wait: Promise<unknown> | null } {
    const groups: Group[] = [];
    let waits: Array<Promise<void>> | null = null;
    for (const id of ids) {
      const tail = this.tails.get(id);
      let g: Group;
      if (!exclusive && tail && !tail.exclusive) {
        g = tail;
        g.count++;
      } else {
        g = { exclusive, count: 1, ready: tail ? finished(tail) : null, done: null, resolveDone: null };
        this.tails.set(id, g);
      }
      if (g.ready) (waits ??= []).push(g.ready);
      groups.push(g);
    }
    return { handle: { ids, groups }, wait: waits === null ? null : waits.length === 1 ? waits[0]! : Promise.all(waits) };
  }

  release(handle: RowLockHandle): void {
    for (let i = 0; i < handle.groups.length; i++) {
      const g = handle.groups[i]!;
      if (--g.count > 0) continue;
      g.resolveDone?.();
      const id = handle.ids[i]!;
      if (this.tails.get(id) === g) this.tails.delete(id);
    }
  }
}
