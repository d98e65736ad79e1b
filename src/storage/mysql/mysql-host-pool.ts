import type mysql from 'mysql2';
import { requireOptional } from '../../util/optional-dependency.js';
import type { Pool, PoolConnection } from 'mysql2';
import { ShardKitError } from '../../errors.js';
import { codedError } from '../sql/host-down.js';
import { ServerPool } from '../sql/server-pool.js';
import { statementKind, type PoolGauges, type StorageOpKind } from '../storage-metrics.js';
import type { SqlHostPool, SqlResult, SqlRun, SqlValue } from '../sql/sql-dialect.js';
import { isConnectionError, isHostDownError } from './mysql-errors.js';

/** How one server is reached (config `hosts[name]` merged with `storage`). */
export interface MysqlHostOptions {
  host?: string;
  port?: number;
  socket?: string;
  user: string;
  password?: string;
  poolSize: number;
  connectTimeoutMs: number;
  queryTimeoutMs: number;
}

export type { SqlValue };

const NO_ROWS: never[] = [];

/** mysql2 answers a SELECT with rows and anything else with a result header. */
function toResult<R>(raw: unknown): SqlResult<R> {
  if (Array.isArray(raw)) return { rows: raw as R[], affected: 0 };
  const h = raw as { affectedRows?: number; insertId?: number | string };
  return { rows: NO_ROWS, affected: h.affectedRows ?? 0, ...(h.insertId !== undefined ? { insertId: h.insertId } : {}) };
}

/**
 * One mysql2 pool for one server, with explicit failure handling:
 * - every query has a timeout; a connection whose query timed out is destroyed, not reused;
 * - getting a connection is bounded by the connect timeout, even when the pool is exhausted;
 * - after a failure that says the server is unreachable (refused, reset, connect timeout; not a
 *   slow query) the host is "down" for a short while and calls fail at once
 *   (so a dead master costs callers nothing), then the next call tries again: the pool recovers
 *   by itself when the server comes back, no restart needed.
 */
export class MysqlHostPool extends ServerPool implements SqlHostPool {
  private readonly pool: Pool;
  private readonly options: MysqlHostOptions;

  constructor(name: string, options: MysqlHostOptions) {
    super(name, options.connectTimeoutMs, isHostDownError);
    this.options = options;
    const target = options.host !== undefined || options.port !== undefined || options.socket === undefined
      ? { host: options.host ?? '127.0.0.1', port: options.port ?? 3306 }
      : { socketPath: options.socket };
    this.pool = requireOptional<typeof mysql>('mysql2', 'the MySQL backend').createPool({
      ...target,
      user: options.user,
      ...(options.password !== undefined ? { password: options.password } : {}),
      connectionLimit: options.poolSize,
      maxIdle: options.poolSize,
      idleTimeout: 60_000,
      connectTimeout: options.connectTimeoutMs,
      waitForConnections: true,
      queueLimit: 0,
      supportBigNumbers: true,
      bigNumberStrings: true,
      dateStrings: true,
      enableKeepAlive: true,
      charset: 'utf8mb4_bin',
    });
    // The client-side query timeout only abandons a statement; the server would go on running it
    // (holding locks and a thread) after we destroyed the connection. The same limit is therefore
    // set on the server: MariaDB's max_statement_time (seconds), MySQL's max_execution_time (ms,
    // SELECTs only); whichever the server does not know fails quietly.
    const limitMs = Math.ceil(options.queryTimeoutMs);
    this.pool.on('connection', (conn) => {
      // UTC sessions: FROM_UNIXTIME / UNIX_TIMESTAMP round-trip exactly, whatever the server's zone.
      // Errors here surface on the caller's first query over this connection.
      conn.query("SET time_zone = '+00:00'", () => undefined);
      conn.query('SET SESSION max_statement_time = ?', [limitMs / 1000], (err) => {
        if (err) conn.query('SET SESSION max_execution_time = ?', [limitMs], () => undefined);
      });
    });
  }

  /** mysql2 keeps no public counts: its pool's lists (read-only here, as exhausted() does). */
  protected connections(): PoolGauges {
    const internals = this.pool as unknown as { _freeConnections?: { length: number }; _allConnections?: { length: number }; _connectionQueue?: { length: number } };
    const all = internals._allConnections?.length ?? 0;
    const idle = internals._freeConnections?.length ?? 0;
    return { inUse: all - idle, idle, waiting: internals._connectionQueue?.length ?? 0 };
  }

  /** Whether getConnection would have to wait for another caller to release a connection. */
  private exhausted(): boolean {
    const internals = this.pool as unknown as { _freeConnections?: { length: number }; _allConnections?: { length: number } };
    if (!internals._freeConnections || !internals._allConnections) return true;
    return internals._freeConnections.length === 0 && internals._allConnections.length >= this.options.poolSize;
  }

  /**
   * A pooled connection. Opening one is bounded by mysql2's connectTimeout; waiting for a busy
   * pool is bounded here by the same time (the timer only exists when the pool is exhausted,
   * which keeps the hot path free of timers).
   */
  private acquire(callback: (err: unknown, conn?: PoolConnection) => void): void {
    if (this.closed) {
      callback(new ShardKitError('CLOSED', 'the MySQL backend is closed'));
      return;
    }
    const refusal = this.down.refusal('HOST_DOWN');
    if (refusal !== undefined) {
      callback(refusal);
      return;
    }
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    if (this.exhausted()) {
      timer = setTimeout(() => {
        settled = true;
        callback(codedError('ACQUIRE_TIMEOUT', `no connection to ${this.name} within ${this.options.connectTimeoutMs} ms`));
      }, this.options.connectTimeoutMs);
      timer.unref();
    }
    this.pool.getConnection((err, conn) => {
      if (timer) clearTimeout(timer);
      if (settled) {
        // We gave up waiting; the connection goes back to the pool.
        conn?.release();
        return;
      }
      settled = true;
      if (err) {
        this.down.mark(err);
        callback(err);
      } else callback(null, conn);
    });
  }

  private run<T>(conn: PoolConnection, sql: string, values: SqlValue[] | undefined, kind: StorageOpKind | undefined, callback: (err: unknown, rows?: T) => void): void {
    const started = this.sent();
    conn.query({ sql, values, timeout: this.options.queryTimeoutMs }, (err, rows) => {
      this.answered(started, kind);
      callback(err, rows as T);
    });
  }

  /** One statement, its answer as the SQL core reads it (the hot path: one promise, callbacks inside). */
  execute<R>(sql: string, values?: SqlValue[]): Promise<SqlResult<R>> {
    return new Promise<SqlResult<R>>((resolve, reject) => this.statement(sql, values, (err, raw) => (err ? reject(err) : resolve(toResult<R>(raw)))));
  }

  /** One statement on a pooled connection; mysql2's own answer. */
  query<T>(sql: string, values?: SqlValue[]): Promise<T> {
    return new Promise<T>((resolve, reject) => this.statement(sql, values, (err, raw) => (err ? reject(err) : resolve(raw as T))));
  }

  /** Acquire, run, release (or destroy after a connection failure), then `done`. */
  private statement(sql: string, values: SqlValue[] | undefined, answer: (err: unknown, raw?: unknown) => void): void {
    this.busy++;
    const done = (err: unknown, raw?: unknown) => {
      this.settle();
      answer(err, raw);
    };
    this.acquire((err, conn) => {
      if (err) {
        done(err);
        return;
      }
      this.run<unknown>(conn!, sql, values, statementKind(sql), (qerr, rows) => {
        if (qerr) {
          this.discardOnFailure(conn!, qerr);
          done(qerr);
        } else {
          conn!.release();
          done(null, rows);
        }
      });
    });
  }

  /**
   * Runs `fn` inside BEGIN ... COMMIT on one connection; ROLLBACK when it throws. The connection
   * is destroyed after a connection-level error or timeout (its state is unknown).
   */
  async transaction<T>(fn: (run: SqlRun) => Promise<T>): Promise<T> {
    this.busy++;
    try {
      const conn = await new Promise<PoolConnection>((resolve, reject) => this.acquire((err, c) => (err ? reject(err) : resolve(c!))));
      const q: SqlRun = <R>(sql: string, values?: SqlValue[]) =>
        new Promise<SqlResult<R>>((resolve, reject) => this.run<unknown>(conn, sql, values, undefined, (err, rows) => (err ? reject(err) : resolve(toResult<R>(rows)))));
      return await this.transact(q, fn, isConnectionError, (failure) => (failure ? this.discardOnFailure(conn, failure.err) : conn.release()));
    } finally {
      this.settle();
    }
  }

  /** Statements and transactions started and not yet answered: close() lets them finish. */
  private busy = 0;
  private drained: (() => void) | undefined;

  private settle(): void {
    if (--this.busy === 0) this.drained?.();
  }

  private discardOnFailure(conn: PoolConnection, err: unknown): void {
    if (isConnectionError(err)) {
      this.down.mark(err);
      conn.destroy();
    } else {
      conn.release();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // New calls are refused with CLOSED from here; the ones under way finish first (ending the
    // pool under them failed each with mysql2's "Pool is closed", which read as INTERNAL).
    this.closed = true;
    if (this.busy > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    await new Promise<void>((resolve) => this.pool.end(() => resolve()));
  }
}
