import type { MoveRecord } from '../topology/shard-map.js';
import type { ChunkMismatch, MoveEngine, MoveProgressFn, VerifyProgressFn, VerifyReport } from './move-engine.js';
import { moveShards } from './move-shared.js';

/** Rows and checksum of one restored table (`schema.table`), as its restore produced it. */
export interface RestoredTable {
  rows: number;
  checksum: string;
}

export type RestoredTables = Record<string, RestoredTable>;

/**
 * Where a restore-in move's data comes from: a backup restored aside (src/ops/backup/restore-into.ts).
 * Its state lives beside the backup, so a resumed mover knows whether the target holds a load.
 */
export interface RestoreInSource {
  /** 'none' (nothing loaded yet), 'loading' (a load began: the target may hold part of it), 'loaded'. */
  state(move: MoveRecord): Promise<'none' | 'loading' | 'loaded'>;
  /** Loads the restored shards onto the target (which holds none of them), recording the state and what the tables hold. */
  load(move: MoveRecord, onProgress?: MoveProgressFn): Promise<RestoredTables>;
  /** What the load recorded the tables to hold. */
  expected(move: MoveRecord): Promise<RestoredTables>;
  /** What the target master holds of `names` now. */
  onTarget(move: MoveRecord, names: string[]): Promise<RestoredTables>;
}

/** The engine-specific parts of a restore-in move (the move engines' own steps, reused). */
export interface RestoreInTarget {
  /** The move engine whose fence, undo, switch hooks and drop run unchanged. */
  readonly inner: MoveEngine;
  /** Refuses a target that holds rows of the moving shards, and makes it writable. */
  checkTarget(move: MoveRecord): Promise<void>;
  /** Removes what an interrupted load left on the target (only ever called for a load of this move). */
  clearTarget(move: MoveRecord): Promise<void>;
  /** Under the freeze, after the fence: the target's id counters (AUTO_INCREMENT, sequences) past the source's. */
  raiseIds(move: MoveRecord): Promise<void>;
}

/**
 * A move whose target's copy comes from a backup instead of the source (`backup restore --shards
 * --into`): the shards restored to a point in time on a spare pair, then switched in by the move
 * runner's own phases (src/moves/move-runner.ts), so the freeze, the fence, the records a killed
 * mover resumes from, the services' gate and the compare-and-set switch are the ones every move
 * uses:
 *
 *   prepare  the restored shards loaded onto the target (the source's rows are not copied);
 *   lag      0: nothing replicates from the source;
 *   fence    the source refuses the moving shards, as in any move (their rows stay there, fenced,
 *            until `shards drop-moved`);
 *   catchUp  only the target's id counters raised past the source's, so no id the live shard
 *            handed out after the restore point is handed out again;
 *   verify   the target against what the restore produced (rows and checksum per table): the
 *            source differs by design, it holds what is being undone.
 */
export class RestoreInMoveEngine implements MoveEngine {
  readonly kind: string;
  readonly droppedUnit: string;
  readonly maxLag = 0;

  constructor(private readonly source: RestoreInSource, private readonly target: RestoreInTarget) {
    this.kind = `restore-${target.inner.kind}`;
    this.droppedUnit = target.inner.droppedUnit;
  }

  async prepare(move: MoveRecord, onProgress?: MoveProgressFn): Promise<Record<string, string | number | boolean>> {
    const state = await this.source.state(move);
    if (state !== 'loaded') {
      // A load cut short (a killed mover) left part of itself: it is this move's, so it goes first.
      if (state === 'loading') await this.target.clearTarget(move);
      await this.target.checkTarget(move);
      await this.source.load(move, onProgress);
    }
    const tables = await this.source.expected(move);
    return { restored: true, tables: Object.keys(tables).length, rowsRestored: Object.values(tables).reduce((n, t) => n + t.rows, 0) };
  }

  async lag(): Promise<number> {
    return 0;
  }

  async beforeFreeze(move: MoveRecord): Promise<void> {
    await this.target.inner.beforeFreeze?.(move);
  }

  async fence(move: MoveRecord): Promise<void> {
    await this.target.inner.fence(move);
  }

  async catchUp(move: MoveRecord): Promise<void> {
    await this.target.raiseIds(move);
  }

  async verify(move: MoveRecord, onVerify?: VerifyProgressFn): Promise<VerifyReport> {
    const want = await this.source.expected(move);
    const names = Object.keys(want).sort();
    const have = await this.source.onTarget(move, names);
    const mismatches: ChunkMismatch[] = [];
    for (const name of names) {
      const w = want[name]!;
      const h = have[name];
      if (h !== undefined && h.rows === w.rows && h.checksum === w.checksum) continue;
      const shard = Number(/^db(\d+)\./.exec(name)?.[1] ?? -1);
      mismatches.push({ shard, table: name, fromKey: '', toKey: '', sourceRows: w.rows, targetRows: h?.rows ?? 0 });
    }
    onVerify?.(names.length, names.length);
    return { shards: moveShards(move).length, tables: names.length, rows: names.reduce((n, x) => n + want[x]!.rows, 0), chunks: names.length, mismatches };
  }

  /** Per move id: a clean full check made before the freeze by this process. */
  private readonly checked = new Map<string, VerifyReport>();

  /** The full check, while services still write to the live shards (the spare serves nothing yet). */
  async verifyBeforeFreeze(move: MoveRecord, onVerify?: VerifyProgressFn): Promise<VerifyReport> {
    const report = await this.verify(move, onVerify);
    if (report.mismatches.length === 0) this.checked.set(move.id, report);
    return report;
  }

  /**
   * Nothing writes the spare between the check before the freeze and the switch (the catch-up
   * only raises its id counters), so that clean check stands and the freeze costs nothing
   * proportional to the shards' size (issue #29). A resumed mover (nothing remembered) checks in full.
   */
  async verifyFenced(move: MoveRecord, onVerify?: VerifyProgressFn): Promise<VerifyReport> {
    const before = this.checked.get(move.id);
    if (before === undefined) return this.verify(move, onVerify);
    onVerify?.(before.chunks, before.chunks);
    return before;
  }

  async beforeSwitch(move: MoveRecord): Promise<void> {
    await this.target.inner.beforeSwitch?.(move);
  }

  async afterSwitch(move: MoveRecord): Promise<void> {
    await this.target.inner.afterSwitch?.(move);
  }

  async undo(move: MoveRecord): Promise<void> {
    // The inner engine removes a target copy only after a recorded prepare; a load cut short is removed here.
    if ((await this.source.state(move)) !== 'none') await this.target.clearTarget(move);
    await this.target.inner.undo(move);
  }

  dropMoved(move: MoveRecord, options?: { movedBack?: boolean }): Promise<number> {
    return this.target.inner.dropMoved(move, options);
  }

  close(): Promise<void> {
    return this.target.inner.close();
  }
}
