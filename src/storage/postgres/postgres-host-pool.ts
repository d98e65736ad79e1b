import type pg from 'pg';
import { requireOptional } from '../../util/optional-dependency.js';
import { ShardKitError } from '../../errors.js';
import { ServerPool } from '../sql/server-pool.js';
import { statementKind, type PoolGauges, type StorageOpKind } from '../storage-metrics.js';
import type { SqlHostPool, SqlResult, SqlRun, SqlValue } from '../sql/sql-dialect.js';
import { PG_HOST_DOWN, codeDriverError, isConnectionError, isHostDownError } from './postgres-errors.js';

/** How one server is reached (config `hosts[name]` merged with `storage`). */
export interface PostgresHostOptions {
  host?: string;
  port?: number;
  /** Directory of the server's unix socket (pg's `host` when it starts with a slash). */
  socket?: string;
  user: string;
  password?: string;
  database: string;
  poolSize: number;
  connectTimeoutMs: number;
  queryTimeoutMs: number;
}

export type { SqlValue };

/**
 * The server stops a statement at queryTimeoutMs (statement_timeout, set for every session in
 * the startup packet); the client gives up this much later, only when the server itself is not
 * answering (frozen, network gone). Normally the server's cancel arrives first and the
 * connection stays usable.
 */
const CLIENT_TIMEOUT_MARGIN_MS = 250;

/**
 * Parameterized statements are sent as named prepared statements, so the server parses and plans
 * each one once per connection instead of on every call (the server's CPU is half of every call
 * on a small machine). The names are bounded per host: past this many distinct statements the
 * rest go unnamed, so the server keeps at most this many per connection.
 */
const MAX_NAMED_STATEMENTS = 256;

/**
 * One pg.Pool for one server, with the failure handling of the MySQL host pool:
 * - statements are bounded on the server and the client; a connection whose statement the
 *   client gave up on, or whose server went away, is destroyed, never reused;
 * - getting a connection is bounded by the connect timeout, also when the pool is exhausted;
 * - after a failure that says the server is unreachable (refused, reset, shut down, connect
 *   timeout; not a slow statement) the host is "down" for min(1 s, connectTimeoutMs) and calls
 *   fail at once, then the next call tries again: the pool recovers by itself.
 */
export class PostgresHostPool extends ServerPool implements SqlHostPool {
  private readonly pool: pg.Pool;
  private readonly options: PostgresHostOptions;
  /** SQL text -> prepared statement name, shared by the host's connections. */
  private readonly names = new Map<string, string>();

  constructor(name: string, options: PostgresHostOptions) {
    super(name, options.connectTimeoutMs, isHostDownError);
    this.options = options;
    const target = options.host !== undefined || options.port !== undefined || options.socket === undefined
      ? { host: options.host ?? '127.0.0.1', port: options.port ?? 5432 }
      : { host: options.socket };
    const driver = requireOptional<typeof pg>('pg', 'the PostgreSQL backend');
    this.pool = new driver.Pool({
      ...target,
      user: options.user,
      ...(options.password !== undefined ? { password: options.password } : {}),
      database: options.database,
      max: options.poolSize,
      idleTimeoutMillis: 60_000,
      connectionTimeoutMillis: options.connectTimeoutMs,
      statement_timeout: Math.ceil(options.queryTimeoutMs),
      query_timeout: Math.ceil(options.queryTimeoutMs) + CLIENT_TIMEOUT_MARGIN_MS,
      keepAlive: true,
      application_name: 'shardkit',
    });
    // An idle connection whose server shut down emits 'error' on the pool; pg-pool has already
    // dropped it. Without a listener that event would crash the process.
    this.pool.on('error', (err) => this.down.mark(codeDriverError(err)));
  }

  protected connections(): PoolGauges {
    const idle = this.pool.idleCount;
    return { inUse: this.pool.totalCount - idle, idle, waiting: this.pool.waitingCount };
  }

  /** A pooled client; pg-pool bounds both opening one and waiting for one by connectionTimeoutMillis. */
  private async acquire(): Promise<pg.PoolClient> {
    if (this.closed) throw new ShardKitError('CLOSED', 'the PostgreSQL backend is closed');
    const refusal = this.down.refusal(PG_HOST_DOWN);
    if (refusal !== undefined) throw refusal;
    try {
      const client = await this.pool.connect();
      // pg-pool listens for 'error' only on idle clients: a checked-out client whose server ends
      // the session between two queries (a fast shutdown or failover: 57P01) would emit an
      // unhandled 'error' and crash the process. The query in flight still fails on its own.
      const onError = (e: unknown) => this.down.mark(codeDriverError(e));
      client.on('error', onError);
      const release = client.release.bind(client);
      client.release = (destroy?: boolean | Error) => {
        client.removeListener('error', onError);
        return release(destroy);
      };
      return client;
    } catch (err) {
      codeDriverError(err);
      this.down.mark(err);
      throw err;
    }
  }

  private async run<T extends pg.QueryResultRow>(client: pg.PoolClient, sql: string, values: SqlValue[] | undefined, kind: StorageOpKind | undefined): Promise<pg.QueryResult<T>> {
    const started = this.sent();
    try {
      return await client.query<T>(sql, values as unknown[] | undefined);
    } catch (err) {
      throw codeDriverError(err);
    } finally {
      this.answered(started, kind);
    }
  }

  /**
   * One statement, its answer as the SQL core reads it: the hot path of every call, written with
   * pg's callbacks (one promise per call, no async frames), as the MySQL host pool is; the same
   * failure handling as query().
   */
  execute<R>(sql: string, values?: SqlValue[]): Promise<SqlResult<R>> {
    return new Promise<SqlResult<R>>((resolve, reject) => {
      if (this.closed) {
        reject(new ShardKitError('CLOSED', 'the PostgreSQL backend is closed'));
        return;
      }
      const refusal = this.down.refusal(PG_HOST_DOWN);
      if (refusal !== undefined) {
        reject(refusal);
        return;
      }
      this.pool.connect((err, client) => {
        if (err || client === undefined) {
          codeDriverError(err);
          this.down.mark(err);
          reject(err);
          return;
        }
        // As in acquire(): a checked-out client whose session the server ends (57P01, a reset
        // during a failover) emits 'error', which pg-pool only listens for on idle clients.
        const onError = (e: unknown) => this.down.mark(codeDriverError(e));
        client.on('error', onError);
        const started = this.sent();
        const name = values !== undefined && values.length > 0 ? this.statementName(sql) : undefined;
        const query = name === undefined ? { text: sql, values: values as unknown[] } : { text: sql, values: values as unknown[], name };
        client.query<R & pg.QueryResultRow>(query, (qerr, res) => {
          this.answered(started, statementKind(sql));
          client.removeListener('error', onError);
          if (qerr) {
            codeDriverError(qerr);
            this.discardOnFailure(client, qerr);
            reject(qerr);
            return;
          }
          client.release();
          resolve({ rows: res.rows, affected: res.rowCount ?? 0 });
        });
      });
    });
  }

  private statementName(sql: string): string | undefined {
    let name = this.names.get(sql);
    if (name === undefined && this.names.size < MAX_NAMED_STATEMENTS) {
      name = `shardkit_${this.names.size}`;
      this.names.set(sql, name);
    }
    return name;
  }

  /**
   * One statement on a pooled connection. `discardOnError`: after any failure the connection is
   * closed, not reused, for statements that might leave session state behind when interrupted
   * (nextInstagramIds uses it as a precaution; next_id() itself leaves none since issue 20).
   */
  async query<T extends pg.QueryResultRow>(sql: string, values?: SqlValue[], options: { discardOnError?: boolean } = {}): Promise<pg.QueryResult<T>> {
    const client = await this.acquire();
    try {
      const res = await this.run<T>(client, sql, values, statementKind(sql));
      client.release();
      return res;
    } catch (err) {
      if (options.discardOnError === true && !isConnectionError(err)) client.release(true);
      else this.discardOnFailure(client, err);
      throw err;
    }
  }

  /**
   * Runs `fn` inside BEGIN ... COMMIT on one connection; ROLLBACK when it throws. The connection
   * is destroyed after a connection-level error or a client-side timeout (its state is unknown).
   */
  async transaction<T>(fn: (run: SqlRun) => Promise<T>): Promise<T> {
    const client = await this.acquire();
    const q: SqlRun = async <R>(sql: string, values?: SqlValue[]) => {
      const res = await this.run<R & pg.QueryResultRow>(client, sql, values, undefined);
      return { rows: res.rows, affected: res.rowCount ?? 0 };
    };
    return this.transact(q, fn, isConnectionError, (failure) => (failure ? this.discardOnFailure(client, failure.err) : client.release()));
  }

  private discardOnFailure(client: pg.PoolClient, err: unknown): void {
    if (isConnectionError(err)) {
      this.down.mark(err);
      client.release(true);
    } else {
      client.release();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}
