/**
 * In-process shared/exclusive locks per row. The store is the only writer of its RocksDB (the
 * LOCK file guarantees that), so these are enough to keep each column's head record equal to
 * its newest cell:
 * - shared: server-stamped puts (newer than anything in the row) and deletes, which can write
 *   blindly and may run concurrently;
 * - exclusive: puts with explicit timestamps and compaction's head removal, which read the head
 *   before deciding what to write.
 * Waiters are FIFO per row; an operation only waits for holders registered before it, so
 * multi-row acquisitions cannot deadlock.
 */
interface RowState {
  exclusive: Promise<void> | null;
  shared: Set<Promise<void>>;
}

export class RowLocks {
  private readonly rows = new Map<string, RowState>();

  get size(): number {
    return this.rows.size;
  }

  /** Registers synchronously, then waits for earlier conflicting holders; returns `release`. */
  acquire(keys: Iterable<string>, exclusive: boolean): Promise<() => void> {
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const waitFor: Promise<void>[] = [];
    const held: string[] = [];
    for (const key of keys) {
      let state = this.rows.get(key);
      if (!state) {
        state = { exclusive: null, shared: new Set() };
        this.rows.set(key, state);
      }
      if (state.exclusive) waitFor.push(state.exclusive);
      if (exclusive) {
        for (const s of state.shared) waitFor.push(s);
        // Later operations wait for us, and we wait for these: the transitive wait is kept.
        state.shared.clear();
        state.exclusive = mine;
      } else {
        state.shared.add(mine);
      }
      held.push(key);
    }
    const done = (): void => {
      release();
      for (const key of held) {
        const state = this.rows.get(key);
        if (!state) continue;
        if (state.exclusive === mine) state.exclusive = null;
        state.shared.delete(mine);
        if (state.exclusive === null && state.shared.size === 0) this.rows.delete(key);
      }
    };
    if (waitFor.length === 0) return Promise.resolve(done);
    return Promise.all(waitFor).then(() => done);
  }
}
