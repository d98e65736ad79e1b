import { HostDown } from './host-down.js';
import type { CountingPool } from './host-pools.js';
import type { SqlRun } from './sql-dialect.js';
import { hostLatency, type HostStorageMetrics, type PoolGauges, type StorageOpKind } from '../storage-metrics.js';

/**
 * What every server host pool keeps whatever its driver: its host name, the host-down window,
 * the closed flag, and the counters benchmarks and status read (round trips, statements in
 * flight and the most seen at once since the last reset).
 */
export abstract class ServerPool implements CountingPool {
  protected readonly down: HostDown;
  protected closed = false;
  /** Statements sent (round trips), for benchmarks and status. */
  queries = 0;
  /** Statements on the wire right now, and the most seen at once since the last reset. */
  inFlight = 0;
  maxInFlight = 0;
  /** Statement and transaction latency by kind, in plain numbers (/metrics reads them when scraped). */
  readonly latency = hostLatency();

  constructor(readonly name: string, connectTimeoutMs: number, isHostDownError: (err: unknown) => boolean) {
    this.down = new HostDown(isHostDownError, connectTimeoutMs);
  }

  /** Why the host is considered down, or undefined when it is not. */
  downReason(): unknown {
    return this.down.reason();
  }

  /** A statement goes on the wire; returns when, for answered(). */
  protected sent(): number {
    this.queries++;
    if (++this.inFlight > this.maxInFlight) this.maxInFlight = this.inFlight;
    return performance.now();
  }

  /** A statement answered (or failed); its latency counts under `kind` (none inside a transaction, which counts as one batch). */
  protected answered(started: number, kind: StorageOpKind | undefined): void {
    this.inFlight--;
    if (kind !== undefined) this.latency[kind].observe((performance.now() - started) / 1000);
  }

  /** The driver pool's connections right now. */
  protected abstract connections(): PoolGauges;

  /** This host's pool gauges and latency histograms (ShardBackend.storageMetrics). */
  metrics(): HostStorageMetrics {
    return { host: this.name, pool: this.connections(), latency: this.latency };
  }

  /**
   * BEGIN, `fn`, COMMIT over `run` (one connection); ROLLBACK when `fn` throws, unless the
   * connection itself failed (its state is unknown). `done` then releases the connection, or
   * discards it after a failure, told by `failure`.
   */
  protected async transact<T>(run: SqlRun, fn: (run: SqlRun) => Promise<T>, isConnectionError: (err: unknown) => boolean, done: (failure?: { err: unknown }) => void): Promise<T> {
    const started = performance.now();
    try {
      await run('BEGIN');
      let result: T;
      try {
        result = await fn(run);
      } catch (err) {
        if (!isConnectionError(err)) await run('ROLLBACK');
        throw err;
      }
      await run('COMMIT');
      done();
      return result;
    } catch (err) {
      done({ err });
      throw err;
    } finally {
      this.latency.batch.observe((performance.now() - started) / 1000);
    }
  }

  abstract close(): Promise<void>;
}
