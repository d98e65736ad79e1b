import { HostDown } from './host-down.js';
import type { CountingPool } from './host-pools.js';
import type { SqlRun } from './sql-dialect.js';

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

  constructor(readonly name: string, connectTimeoutMs: number, isHostDownError: (err: unknown) => boolean) {
    this.down = new HostDown(isHostDownError, connectTimeoutMs);
  }

  /** Why the host is considered down, or undefined when it is not. */
  downReason(): unknown {
    return this.down.reason();
  }

  /** A statement goes on the wire. */
  protected sent(): void {
    this.queries++;
    if (++this.inFlight > this.maxInFlight) this.maxInFlight = this.inFlight;
  }

  /** A statement answered (or failed). */
  protected answered(): void {
    this.inFlight--;
  }

  /**
   * BEGIN, `fn`, COMMIT over `run` (one connection); ROLLBACK when `fn` throws, unless the
   * connection itself failed (its state is unknown). `done` then releases the connection, or
   * discards it after a failure, told by `failure`.
   */
  protected async transact<T>(run: SqlRun, fn: (run: SqlRun) => Promise<T>, isConnectionError: (err: unknown) => boolean, done: (failure?: { err: unknown }) => void): Promise<T> {
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
    }
  }

  abstract close(): Promise<void>;
}
