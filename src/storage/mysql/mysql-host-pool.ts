import mysql from 'mysql2/promise';
import type { Pool, PoolConnection } from 'mysql2/promise';
import { ShardKitError } from '../../errors.js';
import { isConnectionError } from './mysql-errors.js';

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

export type SqlValue = string | number | bigint | null | Buffer;

/**
 * One mysql2 pool for one server, with explicit failure handling:
 * - every query has a timeout; a connection whose query timed out is destroyed, not reused;
 * - getting a connection is bounded by the connect timeout, even when the pool is exhausted;
 * - after a connection-level failure the host is "down" for a short while and calls fail at once
 *   (so a dead master costs callers nothing), then the next call tries again: the pool recovers
 *   by itself when the server comes back, no restart needed.
 */
export class MysqlHostPool {
  readonly name: string;
  private readonly pool: Pool;
  private readonly options: MysqlHostOptions;
  private downUntil = 0;
  private lastError: unknown;
  private closed = false;
  /** Statements sent (round trips), for benchmarks and status. */
  queries = 0;

  constructor(name: string, options: MysqlHostOptions) {
    this.name = name;
    this.options = options;
    const target = options.host !== undefined || options.port !== undefined || options.socket === undefined
      ? { host: options.host ?? '127.0.0.1', port: options.port ?? 3306 }
      : { socketPath: options.socket };
    this.pool = mysql.createPool({
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
    // UTC sessions: FROM_UNIXTIME / UNIX_TIMESTAMP round-trip exactly, whatever the server's zone.
    this.pool.pool.on('connection', (conn) => {
      conn.query("SET time_zone = '+00:00'");
    });
  }

  /** Why the host is considered down, or undefined when it is not. */
  downReason(): unknown {
    return Date.now() < this.downUntil ? this.lastError : undefined;
  }

  private markDown(err: unknown): void {
    if (!isConnectionError(err)) return;
    this.lastError = err;
    this.downUntil = Date.now() + Math.min(1000, this.options.connectTimeoutMs);
  }

  private async acquire(): Promise<PoolConnection> {
    if (this.closed) throw new ShardKitError('CLOSED', 'the MySQL backend is closed');
    const reason = this.downReason();
    if (reason !== undefined) {
      const err = new Error(`host down since a moment ago (${(reason as Error).message ?? String(reason)})`) as Error & { code: string };
      err.code = 'HOST_DOWN';
      throw err;
    }
    const pending = this.pool.getConnection();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const err = new Error(`no connection to ${this.name} within ${this.options.connectTimeoutMs} ms`) as Error & { code: string };
        err.code = 'ACQUIRE_TIMEOUT';
        reject(err);
      }, this.options.connectTimeoutMs);
      timer.unref();
    });
    try {
      return await Promise.race([pending, timeout]);
    } catch (err) {
      // A connection that arrives after we gave up goes back to the pool.
      pending.then((c) => c.release(), () => undefined);
      this.markDown(err);
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  private async run<T>(conn: PoolConnection, sql: string, values: SqlValue[] | undefined): Promise<T> {
    this.queries++;
    const [rows] = await conn.query({ sql, values, timeout: this.options.queryTimeoutMs });
    return rows as T;
  }

  /** One statement on a pooled connection. */
  async query<T>(sql: string, values?: SqlValue[]): Promise<T> {
    const conn = await this.acquire();
    try {
      const rows = await this.run<T>(conn, sql, values);
      conn.release();
      return rows;
    } catch (err) {
      this.discardOnFailure(conn, err);
      throw err;
    }
  }

  /**
   * Runs `fn` inside BEGIN ... COMMIT on one connection; ROLLBACK when it throws. The connection
   * is destroyed after a connection-level error or timeout (its state is unknown).
   */
  async transaction<T>(fn: (q: <R>(sql: string, values?: SqlValue[]) => Promise<R>) => Promise<T>): Promise<T> {
    const conn = await this.acquire();
    const q = <R>(sql: string, values?: SqlValue[]) => this.run<R>(conn, sql, values);
    try {
      await q('BEGIN');
      let result: T;
      try {
        result = await fn(q);
      } catch (err) {
        if (!isConnectionError(err)) await q('ROLLBACK');
        throw err;
      }
      await q('COMMIT');
      conn.release();
      return result;
    } catch (err) {
      this.discardOnFailure(conn, err);
      throw err;
    }
  }

  private discardOnFailure(conn: PoolConnection, err: unknown): void {
    if (isConnectionError(err)) {
      this.markDown(err);
      conn.destroy();
    } else {
      conn.release();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end().catch(() => undefined);
  }
}
