import type { MovePhase, MoveProgress, ShardMap, ShardMapJson } from '../topology/shard-map.js';
import type { TopologyStore } from '../topology/topology-store.js';
import { casMoveState } from './move-state.js';

/** At most one progress write per this many ms: each write is a new map version every service adopts. */
export const PROGRESS_EVERY_MS = 1000;

export type ProgressUpdate = Omit<MoveProgress, 'phase' | 'at'>;

/**
 * The transition of a progress write: sets `progress` on move `id` only while the move is still
 * in `phase`, and changes nothing else (not the phase, the ranges, the freeze or updatedAt). A
 * move that went on to another phase, or is gone, leaves the map as it is: casMoveState then
 * writes nothing. So a progress write can never make the cutover's precondition ("frozen by this
 * move, still on the source, phase fenced") true or false.
 */
export function recordProgress(map: ShardMap, id: string, phase: MovePhase, update: ProgressUpdate, now = Date.now()): ShardMapJson {
  const json = map.toJSON();
  const m = map.move(id);
  if (m === undefined || m.phase !== phase) return json;
  const base = m.progress?.phase === phase ? m.progress : undefined;
  const progress: MoveProgress = { ...base, ...update, phase, at: now };
  return { ...json, moves: (json.moves ?? []).map((x) => (x.id === id ? { ...x, progress } : x)) };
}

/**
 * Writes a running move's progress into its record, throttled to one write per PROGRESS_EVERY_MS
 * (the latest numbers win; nothing queues up). The runner wraps each of its own phase writes in
 * around(), which waits for a progress write in flight and holds the next one until the phase
 * write is done: the two never race for the same map version, so the runner's compare-and-set
 * rounds are spent only on other writers. A progress write that fails is tried again after
 * the throttle, and never fails the move: progress is for people watching, never a reason to stop a move.
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

  constructor(private readonly store: TopologyStore, private readonly hosts?: Iterable<string>, private readonly everyMs = PROGRESS_EVERY_MS) {}

  /** The move and the phase it is in now (after each of the runner's own writes). */
  track(id: string, phase: MovePhase | undefined): void {
    if (this.id !== id || this.phase !== phase) this.pending = undefined;
    this.id = id;
    this.phase = phase;
  }

  /** New numbers for the current phase; written now, or when the throttle allows. */
  note(update: ProgressUpdate): void {
    if (this.closed || this.id === undefined) return;
    this.pending = { ...this.pending, ...update };
    this.schedule();
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

  /** Stops writing (a pending update is dropped) and waits for a write in flight. */
  async close(): Promise<void> {
    this.closed = true;
    this.clearTimer();
    await this.inFlight;
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
    if (phase === undefined) return;
    // One round: on a conflict (or a store error) the numbers go back to pending and are written
    // again after the throttle, unless newer ones came meanwhile.
    this.inFlight = casMoveState(this.store, (map) => recordProgress(map, id, phase, update), { attempts: 1, ...(this.hosts !== undefined ? { hosts: this.hosts } : {}) })
      .then(() => undefined, () => {
        if (this.id === id && this.phase === phase) this.pending = { ...update, ...this.pending };
      })
      .finally(() => {
        this.inFlight = undefined;
        this.schedule();
      });
  }
}
