import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { ServiceReach, ServiceRecords } from '../topology/service-records.js';

export interface ServiceHeartbeatOptions {
  /** How often the record is written (default 2000 ms). */
  intervalMs?: number;
  /** How long one record counts after it was written (default 5 × intervalMs). */
  ttlMs?: number;
  /** The record's name (default: hostname, pid and a random tag). */
  id?: string;
}

/**
 * What a beat reports: the map version the service routes by, the hosts it names that this
 * service cannot reach, and whether it reaches the masters a heal supervisor suspects.
 */
export type HeartbeatState = () => Promise<{ mapVersion: number; missing: string[]; reach?: ServiceReach[] }>;

/**
 * A running service's heartbeat in the topology store (#28). It lets a move see, before it
 * freezes, whether every live service can reach the move's target: a service whose config was
 * not given the new pair answers HOST_UNKNOWN for the whole moved range, so the move waits (or
 * gives up, nothing frozen) instead. The record is removed on stop; a service killed without
 * stopping counts as gone once its ttl runs out.
 */
export class ServiceHeartbeat {
  readonly id: string;
  readonly intervalMs: number;
  readonly ttlMs: number;
  /** The last beat's failure, if it failed (a store that is down must not stop the service). */
  lastError: Error | undefined;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private next: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly records: ServiceRecords, private readonly state: HeartbeatState, options: ServiceHeartbeatOptions = {}) {
    this.intervalMs = options.intervalMs ?? 2000;
    this.ttlMs = options.ttlMs ?? 5 * this.intervalMs;
    this.id = options.id ?? `${hostname().replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 80) || 'host'}.${process.pid}.${randomBytes(4).toString('hex')}`;
  }

  /** Beats once now (resolved when written or failed), then every intervalMs without keeping the process alive. */
  start(): Promise<void> {
    this.timer ??= setInterval(() => void this.beat(), this.intervalMs);
    this.timer.unref();
    return this.beat();
  }

  /**
   * One beat. A call while one is being written gets another right after it (its state may
   * predate the caller's map change), and concurrent callers share that one.
   */
  beat(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.inFlight !== undefined) {
      this.next ??= this.inFlight.then(() => {
        this.next = undefined;
        return this.beat();
      });
      return this.next;
    }
    this.inFlight = (async () => {
      try {
        const { mapVersion, missing, reach } = await this.state();
        if (this.stopped) return;
        await this.records.put(this.id, { at: Date.now(), ttlMs: this.ttlMs, mapVersion, missing, hostname: hostname().slice(0, 256), pid: process.pid, ...(reach !== undefined ? { reach } : {}) });
        this.lastError = undefined;
      } catch (err) {
        this.lastError = err as Error;
      }
    })().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  /** Stops beating and removes the record (best effort: it runs out by itself anyway). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.next;
    await this.inFlight;
    await this.records.remove(this.id).catch(() => undefined);
  }
}
