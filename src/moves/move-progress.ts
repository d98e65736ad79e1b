import type { MovePhase, MoveProgress } from '../topology/shard-map.js';
import type { TopologyStore } from '../topology/topology-store.js';

/** At most one progress write per this many ms. */
export const PROGRESS_EVERY_MS = 1000;

export type ProgressUpdate = Omit<MoveProgress, 'phase' | 'at'>;

/**
 * Writes a running move's progress into the store's progress record for the move (#30: never
 * into the shard map, so services adopt no new map version while a move copies), throttled to
 * one write per PROGRESS_EVERY_MS (the latest numbers win; nothing queues up). Numbers of the
 * same phase merge; a new phase starts afresh. The runner wraps each of its own phase writes in
 * around(), so a record is never written for a phase while the runner is leaving it. A progress
 * write that fails is tried again after the throttle and never fails the move: progress is for
 * people watching, never a reason to stop a move. A store without progress records shows none.
 */
export class MoveProgressWriter {
  private id: string | undefined;
  private phase: MovePhase | undefined;
  private pending: ProgressUpdate | undefined;
  private inFlight: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastWrite = 0;
  private paused = 0;
  private closed = false;
  /** What this writer last wrote (numbers of the same phase merge into it). */
  private last: MoveProgress | undefined;

  constructor(private readonly store: TopologyStore, private readonly everyMs = PROGRESS_EVERY_MS) {}

  /** The move and the phase it is in now (after each of the runner's own writes). */
  track(id: string, phase: MovePhase | undefined): void {
    if (this.id !== id || this.phase !== phase) this.pending = undefined;
    this.id = id;
    this.phase = phase;
  }

  /**
   * New numbers for the current phase; written now, or when the throttle allows. A `soft` update
   * (a step just begun, no numbers yet) rides along with the next write instead of starting one,
   * so a quick step does not take the throttle's slot from the numbers that follow it.
   */
  note(update: ProgressUpdate, soft = false): void {
    if (this.closed || this.id === undefined) return;
    this.pending = { ...this.pending, ...update };
    if (!soft) this.schedule();
  }

  /** Runs the runner's own write `fn` with no progress write in flight or started meanwhile. */
  async around<T>(fn: () => Promise<T>): Promise<T> {
    this.paused++;
    try {
      this.clearTimer();
      await this.inFlight;
      return await fn();
    } finally {
      this.paused--;
      this.schedule();
    }
  }

  /**
   * Holds progress writes until resume() (a pending update waits), after the write in flight:
   * the runner holds them around the freeze's compare-and-set, so that the freeze starts
   * without waiting for one.
   */
  async hold(): Promise<void> {
    this.paused++;
    this.clearTimer();
    await this.inFlight;
  }

  resume(): void {
    this.paused--;
    this.schedule();
  }

  /**
   * Stops writing (a pending update is dropped) and waits for a write in flight. A move that
   * ended (switched, or gone after an abort) has its record removed; one left mid-phase (the
   * runner failed or will be resumed) keeps it for the people watching.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.clearTimer();
    await this.inFlight;
    if (this.id !== undefined && (this.phase === undefined || this.phase === 'switched')) await this.store.progress?.remove(this.id).catch(() => {});
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.closed || this.paused > 0 || this.pending === undefined || this.inFlight !== undefined || this.timer !== undefined) return;
    const wait = this.lastWrite + this.everyMs - Date.now();
    if (wait > 0) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.schedule();
      }, wait);
      this.timer.unref();
      return;
    }
    this.write();
  }

  private write(): void {
    const id = this.id!;
    const phase = this.phase;
    const update = this.pending!;
    this.pending = undefined;
    this.lastWrite = Date.now();
    const records = this.store.progress;
    if (phase === undefined || records === undefined) return;
    const progress: MoveProgress = { ...(this.last?.phase === phase ? this.last : {}), ...update, phase, at: Date.now() };
    // On a store error the numbers go back to pending and are written again after the throttle,
    // unless newer ones came meanwhile.
    this.inFlight = records.put(id, progress)
      .then(() => {
        this.last = progress;
      }, () => {
        if (this.id === id && this.phase === phase) this.pending = { ...update, ...this.pending };
      })
      .finally(() => {
        this.inFlight = undefined;
        this.schedule();
      });
  }
}
