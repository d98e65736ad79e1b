import type { MoveRecord } from '../../topology/shard-map.js';
import type { RowProgress } from '../move-engine.js';
import type { MoveAdmin } from './move-admin.js';
import { sourceSlaveLag } from './copy-source.js';

export { copySource } from './copy-source.js';

/** Why the copy waits: over its row rate, or the source's slave lags past the bound. */
export type CopyWait = { why: 'rate'; ms: number } | { why: 'lag'; lag: number; bound: number };

export interface CopyThrottleOptions {
  /** Rows per second the copy may read at most (`--max-rate`); none: no limit. */
  maxRate?: number;
  /** The source's slave lag now (transactions), and the bound over which the copy waits. */
  lag?: () => Promise<number>;
  maxLag?: number;
  /** How often the lag is read while the copy runs, and again while it waits. Default 250 ms. */
  lagEveryMs?: number;
  onWait?: (wait: CopyWait) => void;
  /** For tests: the clock and the sleep. */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * The throttle a copy awaits with the rows of each piece it streams (issue #29 item 3, bounded
 * impact on the source; vitess#11385): a rate limit in rows per second (the rows so far may not
 * run ahead of rate x time since the start), and a lag gate, read now and then, that holds the
 * copy while the source's slave is more than maxLag transactions behind its master.
 */
export function copyThrottle(o: CopyThrottleOptions): (rows: number) => Promise<void> {
  const now = o.now ?? (() => performance.now());
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const every = o.lagEveryMs ?? 250;
  const start = now();
  let rows = 0;
  let lagReadAt = -Infinity;
  return async (n: number) => {
    rows += n;
    if (o.maxRate !== undefined && o.maxRate > 0) {
      const ahead = (rows / o.maxRate) * 1000 - (now() - start);
      if (ahead > 0) {
        o.onWait?.({ why: 'rate', ms: ahead });
        await sleep(ahead);
      }
    }
    if (o.lag === undefined || o.maxLag === undefined || now() - lagReadAt < every) return;
    for (;;) {
      lagReadAt = now();
      const lag = await o.lag();
      if (lag <= o.maxLag) return;
      o.onWait?.({ why: 'lag', lag, bound: o.maxLag });
      await sleep(every);
    }
  };
}

/** The pre-copy's throttle from the engine's options: `maxRate`, and the source's slave lag bound (default 1000 transactions). */
export function moveCopyThrottle(admin: MoveAdmin, move: MoveRecord, o: { maxRate?: number; maxSourceSlaveLag?: number; onCopyWait?: (wait: CopyWait) => void }): (rows: number) => Promise<void> {
  return copyThrottle({
    ...(o.maxRate !== undefined ? { maxRate: o.maxRate } : {}), lag: sourceSlaveLag(admin, move), maxLag: o.maxSourceSlaveLag ?? 1000,
    ...(o.onCopyWait !== undefined ? { onWait: o.onCopyWait } : {}),
  });
}

/** Turns a dump's (bytes, rows so far) into progress with the rate since the start and an ETA against the statistics' row estimate. */
export function dumpProgress(rowsEstimate: number, tell: (p: RowProgress & { bytesCopied: number }) => void, now: () => number = () => performance.now()): (bytes: number, rows: number) => void {
  const start = now();
  return (bytes, rows) => {
    const s = (now() - start) / 1000;
    const rowsPerSecond = s > 0 ? Math.round(rows / s) : 0;
    const bytesPerSecond = s > 0 ? Math.round(bytes / s) : 0;
    // The estimate (InnoDB statistics) can be low: never less than what is already copied.
    const total = Math.max(rowsEstimate, rows);
    tell({ bytesCopied: bytes, rowsCopied: rows, rowsTotal: total, rowsPerSecond, bytesPerSecond, ...(rowsPerSecond > 0 ? { etaSeconds: Math.round((total - rows) / rowsPerSecond) } : {}) });
  };
}
