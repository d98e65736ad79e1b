import { LatencyHistogram } from '../util/latency-histogram.js';

/**
 * What a storage call was, for latency per host: one statement that reads (a SELECT), one that
 * writes (anything else), or a batch (a transaction: several statements on one connection,
 * committed together, timed from BEGIN to COMMIT).
 */
export type StorageOpKind = 'read' | 'write' | 'batch';

/** A host's connection pool right now. */
export interface PoolGauges {
  /** Connections checked out by a call. */
  inUse: number;
  /** Open connections waiting in the pool. */
  idle: number;
  /** Calls waiting for a connection (the pool is exhausted). */
  waiting: number;
}

/** One host as the /metrics endpoint shows it (ShardBackend.storageMetrics). */
export interface HostStorageMetrics {
  host: string;
  pool: PoolGauges;
  latency: Readonly<Record<StorageOpKind, LatencyHistogram>>;
}

/** `word` (upper case) starts `sql` at `at`, in any case. */
function startsWith(sql: string, at: number, word: string): boolean {
  for (let i = 0; i < word.length; i++) if ((sql.charCodeAt(at + i) & ~0x20) !== word.charCodeAt(i)) return false;
  return true;
}

/** A statement's kind from its first word (SELECT, WITH and SHOW read), without allocating: every statement passes here. */
export function statementKind(sql: string): StorageOpKind {
  let at = 0;
  while (at < sql.length && sql.charCodeAt(at) <= 32) at++;
  return startsWith(sql, at, 'SELECT') || startsWith(sql, at, 'WITH') || startsWith(sql, at, 'SHOW') ? 'read' : 'write';
}

/** The latency histograms of one host, one per kind. */
export function hostLatency(): Record<StorageOpKind, LatencyHistogram> {
  return { read: new LatencyHistogram(), write: new LatencyHistogram(), batch: new LatencyHistogram() };
}
