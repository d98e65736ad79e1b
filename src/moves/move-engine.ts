import type { MoveRecord } from '../topology/shard-map.js';

/** One mismatching chunk found by verify: which table, which primary keys, how many rows each side holds. */
export interface ChunkMismatch {
  shard: number;
  table: string;
  /** First and last primary key of the chunk, as text (`12` or `(from,to)`). */
  fromKey: string;
  toKey: string;
  sourceRows: number;
  targetRows: number;
}

export interface VerifyReport {
  shards: number;
  tables: number;
  rows: number;
  chunks: number;
  mismatches: ChunkMismatch[];
}

/**
 * Rows copied so far, for engines that know them (MariaDB, PostgreSQL): shown on the dashboard
 * and in the CLI's JSON progress lines beside the shards done.
 */
export interface RowProgress {
  rowsCopied?: number;
  /** What the source held when the copy started (writes during the copy can take rowsCopied past it). */
  rowsTotal?: number;
  /** Bytes of the copy streamed so far, for engines that stream one (MariaDB: the dump, while it runs). */
  bytesCopied?: number;
  /** Average rates since the copy started, and the time left at that rate (engines that know rowsTotal). */
  rowsPerSecond?: number;
  bytesPerSecond?: number;
  etaSeconds?: number;
  /** The tables being copied right now (at most the copy's streams at once), rows and bytes each. */
  tables?: TableProgress[];
}

export interface TableProgress {
  table: string;
  rowsCopied: number;
  bytesCopied: number;
}

/** Shards done of total, and rows where the engine knows them. */
export type MoveProgressFn = (done: number, total: number, rows?: RowProgress) => void;

/** What the freeze would cost if it started now (the admission check's measure), and of what. */
export interface FreezeCost {
  ms: number;
  what: string;
}

/** Tables of a verify compared so far, of all it compares (the dashboard's verify progress). */
export type VerifyProgressFn = (done: number, total: number, step?: 'verifying' | 'settling') => void;

/**
 * What a database engine does for a shard move (src/moves/move-runner.ts runs the phases and
 * records them in the shard map). Every method is idempotent: a resumed mover calls it again.
 */
export interface MoveEngine {
  readonly kind: string;
  /** Before the freeze: the copy (snapshot and replication where the engine has them). Returns resume detail. */
  prepare(move: MoveRecord, onProgress?: MoveProgressFn): Promise<Record<string, string | number | boolean>>;
  /** How far the target is behind the source (0 when the engine copies under the freeze). */
  lag(move: MoveRecord): Promise<number>;
  /** The lag (in lag()'s unit) under which the runner may freeze, when the caller gives none (default 0). */
  readonly maxLag?: number;
  /**
   * Optional, after the lag gate and before the freeze (services still write): work the engine
   * would otherwise do under the freeze, such as raising id counters on the target. Idempotent;
   * the runner waits for the lag again afterwards.
   */
  beforeFreeze?(move: MoveRecord): Promise<void>;
  /**
   * Optional: what the freeze would wait for if it started now, measured on the live hosts (a
   * catch-up, the checks under it). The runner freezes only once this fits the move's hold budget.
   */
  freezeCost?(move: MoveRecord): Promise<FreezeCost>;
  /** Makes the source refuse every read and write of the moving shards, after draining in-flight work. */
  fence(move: MoveRecord): Promise<void>;
  /** After the fence: the target holds everything the source acknowledged. */
  catchUp(move: MoveRecord, onProgress?: MoveProgressFn): Promise<void>;
  /**
   * Source against target, shard by shard, in primary-key chunks. Under the freeze (after
   * catchUp) this is the full comparison, unless the engine has verifyBeforeFreeze; it is also
   * `shards verify`'s comparison of a move's source and target at any time.
   */
  verify(move: MoveRecord, onVerify?: VerifyProgressFn): Promise<VerifyReport>;
  /**
   * Optional, for engines that replicate before the freeze (the copy is complete by then):
   * the full comparison, after the lag gate and before the freeze while services still write,
   * each table compared at a consistent point of the running replication. A mismatch makes the
   * runner abort with nothing frozen (vitess#6951: no cutover until the copy is complete and
   * verified). With it, verifyFenced replaces verify under the freeze.
   */
  verifyBeforeFreeze?(move: MoveRecord, onVerify?: VerifyProgressFn): Promise<VerifyReport>;
  /**
   * Optional, with verifyBeforeFreeze: the check under the freeze, after catchUp. It guarantees
   * what the full verify would for the tables verifyBeforeFreeze could not settle (written
   * throughout), and that every table it compared is still there on both sides; the others
   * were equal at a consistent point and have since received only replicated changes, all of
   * them applied (catchUp). Without a verifyBeforeFreeze of the same process (a resumed mover),
   * it is the full verify.
   */
  verifyFenced?(move: MoveRecord, onVerify?: VerifyProgressFn): Promise<VerifyReport>;
  /**
   * Optional, after a clean verify and right before the switch's compare-and-set, under the
   * freeze: an engine whose fence only blocks the source so far (MariaDB's lock fence) makes sure
   * it becomes permanent even if the mover dies from here on. Idempotent.
   */
  beforeSwitch?(move: MoveRecord): Promise<void>;
  /**
   * Optional, after the switch (outside the freeze): tear down what the move kept running, such
   * as a replication stream. Best effort and idempotent: a failure is reported, the switch stands,
   * and dropMoved does it again.
   */
  afterSwitch?(move: MoveRecord): Promise<void>;
  /** Abort: the source serves again (fence lifted) and the target's partial copy is removed. */
  undo(move: MoveRecord): Promise<void>;
  /**
   * After the switch: removes what the source still holds of the moved shards. `movedBack`: a
   * later move brought the range back to the source pair before this ran, so the live shards
   * there are the range's own now, and only the stale old copy goes (never the live one).
   */
  dropMoved(move: MoveRecord, options?: { movedBack?: boolean }): Promise<number>;
  /** What dropMoved counts, for the CLI's line (`fenced database(s)`, `fenced schema(s)`, `file(s)`). */
  readonly droppedUnit: string;
  close(): Promise<void>;
}
