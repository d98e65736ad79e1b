import { ShardKitError } from '../errors.js';

/** Why the copy waits: over its row rate, or the source's slave lags past the bound. */
export type CopyWait = { why: 'rate'; ms: number } | { why: 'lag'; lag: number; bound: number };

export interface CopyThrottleOptions {
  /** Rows per second the copy may read at most (`--max-rate 5000`); none: no limit. */
  maxRate?: number;
  /** Bytes per second the copy may read at most (`--max-rate 20MB/s`); none: no limit. */
  maxBytesRate?: number;
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
 * The throttle a copy awaits with the rows and bytes of each piece it streams (issue #29 item 3,
 * bounded impact on the source; vitess#11385): a rate limit in rows or bytes per second (what
 * was copied so far may not run ahead of rate x time since the start), and a lag gate, read now
 * and then, that holds the copy while the source's replica is more than half of maxLag behind
 * (so that it stays within maxLag).
 */
export function copyThrottle(o: CopyThrottleOptions): (rows: number, bytes?: number) => Promise<void> {
  const now = o.now ?? (() => performance.now());
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const every = o.lagEveryMs ?? 250;
  const start = now();
  let rows = 0;
  let bytes = 0;
  let lagReadAt = -Infinity;
  let gate: Promise<void> | undefined;
  return async (n: number, b = 0) => {
    rows += n;
    bytes += b;
    const due = Math.max(o.maxRate !== undefined && o.maxRate > 0 ? rows / o.maxRate : 0, o.maxBytesRate !== undefined && o.maxBytesRate > 0 ? bytes / o.maxBytesRate : 0);
    if (due > 0) {
      const ahead = due * 1000 - (now() - start);
      if (ahead > 0) {
        o.onWait?.({ why: 'rate', ms: ahead });
        await sleep(ahead);
      }
    }
    // The gate holds from half the bound on: the bound is a ceiling, and the lag still grows
    // between two readings and while the pieces already in the pipes load (gating at the bound
    // itself, the lag peaked at 1.7x it at ~8k writes/s; bench/moves-lag.bench.ts).
    // A gate being read or held holds every stream: the copy's streams share one throttle, and
    // one that found the slave lagging used to wait alone while the others (seeing a fresh
    // reading time) went on, so the lag ran past the bound (bench/moves-lag.bench.ts).
    if (gate !== undefined) return gate;
    if (o.lag === undefined || o.maxLag === undefined || now() - lagReadAt < every) return;
    const lagNow = o.lag;
    const bound = o.maxLag;
    gate = (async () => {
      for (;;) {
        lagReadAt = now();
        const lag = await lagNow();
        if (lag <= bound / 2) return;
        o.onWait?.({ why: 'lag', lag, bound });
        await sleep(every);
      }
    })().finally(() => {
      gate = undefined;
    });
    return gate;
  };
}


/** A copy's rate limit (`shards move --max-rate`): rows per second, or bytes per second. */
export type CopyRate = { rowsPerSecond: number } | { bytesPerSecond: number };

/** Byte sizes: MB = 10^6, MiB = 2^20 (`--max-rate 20MB/s`, `--max-source-lag 64MB`). */
const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 };

/** `5000` or `5000rows/s` (rows per second), `20MB/s`, `512KiB/s`, `1.5GB/s` (bytes per second; MB = 10^6, MiB = 2^20). */
export function parseCopyRate(text: string): CopyRate {
  const m = /^\s*([0-9]+(?:\.[0-9]+)?)\s*(rows\/s|[kmg]i?b\/s)?\s*$/i.exec(text);
  const bad = () => new ShardKitError('INVALID_ARGUMENT', `--max-rate must be rows per second (5000 or 5000rows/s, 1..100000000) or bytes per second (20MB/s, 512KiB/s), got ${JSON.stringify(text.slice(0, 40))}`);
  if (m === null) throw bad();
  const n = Number(m[1]);
  const unit = (m[2] ?? 'rows/s').toLowerCase();
  if (unit === 'rows/s') {
    if (!Number.isInteger(n) || n < 1 || n > 100_000_000) throw bad();
    return { rowsPerSecond: n };
  }
  const bytes = Math.round(n * SIZE_UNITS[unit.slice(0, -'/s'.length)]!);
  if (bytes < 1 || !Number.isSafeInteger(bytes)) throw bad();
  return { bytesPerSecond: bytes };
}

/** The bound of the copy's lag gate (`shards move --max-source-lag`): transactions (MariaDB) or bytes of WAL (PostgreSQL). */
export type SourceLagBound = { transactions: number } | { bytes: number };

/** `1000` (transactions of the source's slave behind its master) or `64MB`, `512KiB` (bytes of WAL its standby has not replayed). */
export function parseSourceLag(text: string): SourceLagBound {
  const m = /^\s*([0-9]+(?:\.[0-9]+)?)\s*(b|[kmg]i?b)?\s*$/i.exec(text);
  const bad = () => new ShardKitError('INVALID_ARGUMENT', `--max-source-lag must be transactions (1000; MariaDB, 0..100000000) or bytes of WAL (64MB, 512KiB; PostgreSQL), got ${JSON.stringify(text.slice(0, 40))}`);
  if (m === null) throw bad();
  const n = Number(m[1]);
  if (m[2] === undefined) {
    if (!Number.isInteger(n) || n > 100_000_000) throw bad();
    return { transactions: n };
  }
  const bytes = Math.round(n * SIZE_UNITS[m[2].toLowerCase()]!);
  if (!Number.isSafeInteger(bytes)) throw bad();
  return { bytes };
}
