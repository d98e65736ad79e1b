import type { MoveRecord } from '../../topology/shard-map.js';
import type { RowProgress, TableProgress } from '../move-engine.js';
import type { MoveAdmin } from './move-admin.js';
import { copyThrottle, type CopyWait } from '../copy-throttle.js';
import { sourceSlaveLag } from './copy-source.js';

export { copySource } from './copy-source.js';
export { copyThrottle, type CopyThrottleOptions, type CopyWait } from '../copy-throttle.js';

/** The pre-copy's throttle from the engine's options: `maxRate` and `maxBytesRate`, and the source's slave lag bound (default 1000 transactions). */
export function moveCopyThrottle(admin: MoveAdmin, move: MoveRecord, o: { maxRate?: number; maxBytesRate?: number; maxSourceSlaveLag?: number; onCopyWait?: (wait: CopyWait) => void }): (rows: number, bytes: number) => Promise<void> {
  return copyThrottle({
    ...(o.maxRate !== undefined ? { maxRate: o.maxRate } : {}), ...(o.maxBytesRate !== undefined ? { maxBytesRate: o.maxBytesRate } : {}), lag: sourceSlaveLag(admin, move), maxLag: o.maxSourceSlaveLag ?? 1000,
    ...(o.onCopyWait !== undefined ? { onWait: o.onCopyWait } : {}),
  });
}

/** Turns a dump's (bytes, rows so far, tables being dumped) into progress with the rate since the start and an ETA against the statistics' row estimate. */
export function dumpProgress(rowsEstimate: number, tell: (p: RowProgress & { bytesCopied: number }) => void, now: () => number = () => performance.now()): (bytes: number, rows: number, tables?: TableProgress[]) => void {
  const start = now();
  return (bytes, rows, tables) => {
    const s = (now() - start) / 1000;
    const rowsPerSecond = s > 0 ? Math.round(rows / s) : 0;
    const bytesPerSecond = s > 0 ? Math.round(bytes / s) : 0;
    // The estimate (InnoDB statistics) can be low: never less than what is already copied.
    const total = Math.max(rowsEstimate, rows);
    tell({ bytesCopied: bytes, rowsCopied: rows, rowsTotal: total, rowsPerSecond, bytesPerSecond, ...(rowsPerSecond > 0 ? { etaSeconds: Math.round((total - rows) / rowsPerSecond) } : {}), ...(tables !== undefined && tables.length > 0 ? { tables } : {}) });
  };
}
